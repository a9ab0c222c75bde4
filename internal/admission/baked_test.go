package admission_test

import (
	"testing/fstest"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// baked applies lib's baked deep verdict, as a start does by default.
func baked(s *host.Settings) { s.Baked = true }

var bakedCases = []ruleCase{
	{name: "a damaged baked deep verdict", rule: "deep-verdict-unreadable", set: baked, root: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/lib/"+host.VerdictFile, []byte("SFDEEPV\n\x01\x05garbage"))
	}},
}

func init() { cases = append(cases, bakedCases...) }
