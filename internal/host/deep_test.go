package host

import (
	"slices"
	"testing"
	"testing/fstest"
)

func TestAdditionalParentFirst(t *testing.T) {
	for name, c := range map[string]struct {
		conf string
		want []string
	}{
		"flat string":             {"classloader.parent-first-patterns.additional: com.acme.;org.x\n", []string{"com.acme.", "org.x"}},
		"nested list":             {"classloader:\n  parent-first-patterns:\n    additional:\n      - com.acme.\n      - org.x\n", []string{"com.acme.", "org.x"}},
		"nested string":           {"classloader:\n  parent-first-patterns:\n    additional: com.acme.; org.x\n", []string{"com.acme.", "org.x"}},
		"other keys":              {"classloader.parent-first-patterns.default: java.\nadditional: no\n", nil},
		"not YAML":                {"additional: [\n", nil},
		"a list through an alias": {"l: &l [com.acme., org.x]\nclassloader.parent-first-patterns.additional: *l\n", []string{"com.acme.", "org.x"}},
	} {
		t.Run(name, func(t *testing.T) {
			fsys := fstest.MapFS{"opt/flink/conf/config.yaml": {Data: []byte(c.conf)}}
			conf := ReadConfig(fsys, Settings{ConfDir: "/opt/flink/conf"}, "2.2.1")
			got, from := additionalParentFirst(conf, keyParentFirstAdditional)
			if !slices.Equal(got, c.want) {
				t.Fatalf("got %q, want %q", got, c.want)
			}
			if got != nil && from != "/opt/flink/conf/config.yaml" {
				t.Fatalf("from %q", from)
			}
		})
	}
}
