package image

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// verify judges the image's configuration as a start would: the config
// files are read from the layers, FLINK_PROPERTIES and the environment from
// the image's Env.
func TestVerifyJudgesTheImagesConfig(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		dist  testkit.Dist
		env   []string
		extra []imagekit.Entry
		want  []string // config rules that fire
	}{
		"good 2.2": {dist: testkit.Good("2.2.1")},
		"2.2 with a 1.x flink-conf.yaml only": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			{Name: testkit.FlinkHome + "/conf/config.yaml", Whiteout: true},
			{Name: testkit.FlinkHome + "/conf/flink-conf.yaml", Data: []byte("parallelism.default: 1\n")},
		}, want: []string{"config-file-line"}},
		"a typo in FLINK_PROPERTIES": {dist: testkit.Good("2.2.1"), env: []string{"FLINK_PROPERTIES=taskmanager.numberOfTaskSlot:2"},
			want: []string{"config-unknown-key"}},
		"an alias bomb in config.yaml (read from the layers in bounded time)": {dist: testkit.Good("2.2.1"), extra: []imagekit.Entry{
			{Name: testkit.FlinkHome + "/conf/config.yaml", Data: []byte(testkit.AliasBomb())},
		}, want: []string{"config-file-line"}},
		"the old GLIBC_TUNABLES": {dist: testkit.Good("2.2.1"), env: []string{"GLIBC_TUNABLES=glibc.rtld.optional_static_tls=131072", "ROCKSDB_MUSL_LIBC=false"}, want: []string{"config-env"}},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			img, err := imagekit.Base{Dist: tc.dist, User: "9999", Env: tc.env}.Image()
			require.NoError(t, err)
			if tc.extra != nil {
				img, err = mutate.AppendLayers(img, imagekit.Layer(tc.extra...))
				require.NoError(t, err)
			}
			res, err := VerifyOptions{TempDir: t.TempDir()}.Verify(context.Background(), img)
			require.NoError(t, err)
			var got []string
			for _, f := range res.Decision.Findings {
				if strings.HasPrefix(f.Rule, "config-") {
					got = append(got, f.Rule)
				}
			}
			assert.Equal(t, tc.want, got, "%v", res.Decision.Findings)
		})
	}
}
