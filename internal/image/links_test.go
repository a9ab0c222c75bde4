package image

import (
	"context"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/image/flatten/flattentest"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Images whose links lead nowhere outside what the first reading keeps are
// read once; a FLINK_HOME behind a link is read again, keeping its target.
func TestReadingsFollowLinks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		env      []string
		extra    []imagekit.Entry
		readings int
		broken   int // classpath JARs that do not read (dangling links)
	}{
		{"plain", nil, nil, 1, 0},
		{"FLINK_HOME behind a link", []string{"FLINK_HOME=/opt/current"}, []imagekit.Entry{{Name: "opt/current", Link: "flink"}}, 2, 0},
		{"a lib JAR linked to a missing file in a directory", nil, []imagekit.Entry{{Name: "opt/flink/lib/gone.jar", Link: "../conf/gone.jar"}}, 2, 1},
		{"FLINK_HOME behind a link, and a lib JAR linked to conf", []string{"FLINK_HOME=/opt/current"},
			[]imagekit.Entry{{Name: "opt/current", Link: "flink"}, {Name: "opt/flink/lib/x.jar", Link: "../conf/x.jar"}, {Name: "opt/flink/conf/x.jar", Data: testkit.Extension("avro", "2.2", "0.1.0").Bytes()}}, 2, 0},
		{"a lib JAR linked into a missing directory", nil, []imagekit.Entry{{Name: "opt/flink/lib/gone.jar", Link: "../nowhere/gone.jar"}}, 1, 1},
		{"config behind a link to an empty mount point", nil, []imagekit.Entry{{Name: "opt/flink/conf", Link: "/etc/flink"}}, 1, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), Env: tc.env, Extra: tc.extra}.Image()
			require.NoError(t, err)
			layers, err := img.Layers()
			require.NoError(t, err)
			finished := 0
			o := VerifyOptions{TempDir: t.TempDir(), Progress: func(u Update) {
				if u.Op == "read" && u.Finished {
					finished++
				}
			}}
			res, err := o.Verify(context.Background(), img)
			require.NoError(t, err)
			assert.Equal(t, tc.readings*len(layers), finished)
			assert.NotEmpty(t, res.Facts.Classpath)
			broken := 0
			for _, j := range res.Facts.Classpath {
				if j.Err != nil {
					broken++
				}
			}
			assert.Equal(t, tc.broken, broken, "JARs that do not read")
		})
	}
}

// Bake's parent directories take the base's entry; a directory the base
// only implies has none, so it gets root's 0755 at the bake's epoch.
func TestParentDirOfImpliedDirectory(t *testing.T) {
	t.Parallel()
	v := flattentest.View(t,
		imagekit.Layer(imagekit.Entry{Name: "opt/flink", Dir: true, Mode: 0o775, UID: 9999, GID: 9999},
			imagekit.Entry{Name: "srv/data/blob", Data: []byte("left out")}))
	const sec = 1_700_000_000
	for _, tc := range []struct {
		dir  string
		uid  int
		mode int64
		time int64
	}{
		{"opt/flink", 9999, 0o775, 0},
		{"srv/data", 0, 0o755, sec},
		{"nowhere", 0, 0o755, sec},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			h := parentDir(v.FS, tc.dir, sec)
			require.NotNil(t, h)
			assert.Equal(t, tc.uid, h.Uid)
			assert.Equal(t, tc.mode, h.Mode&0o7777)
			assert.Equal(t, tc.time, h.ModTime.Unix())
		})
	}
}
