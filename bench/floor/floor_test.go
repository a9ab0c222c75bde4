package floor_test

import (
	"archive/zip"
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/bench/floor"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// TestFloorReadsWhatTheCheckRead: the classes a read through
// payload.Archive inflates are recorded once each, and the floor inflates
// exactly those, deflated or stored; a class the file does not hold is an
// error, not a floor of less work.
func TestFloorReadsWhatTheCheckRead(t *testing.T) {
	dir := t.TempDir()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	bodies := map[string][]byte{"a/B.class": bytes.Repeat([]byte("B"), 1000), "a/C.class": bytes.Repeat([]byte("C"), 300), "a/D.class": []byte("unread")}
	for _, name := range []string{"a/B.class", "a/C.class", "a/D.class"} {
		method := zip.Deflate
		if name == "a/C.class" {
			method = zip.Store
		}
		fw, err := w.CreateHeader(&zip.FileHeader{Name: name, Method: method})
		require.NoError(t, err)
		_, err = fw.Write(bodies[name])
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.NoError(t, os.WriteFile(filepath.Join(dir, "x.jar"), buf.Bytes(), 0o644))

	a, err := payload.OpenArchive(os.DirFS(dir), "x.jar")
	require.NoError(t, err)
	defer a.Close()
	classes, err := floor.Record(func() error {
		for _, n := range []string{"a/C", "a/B", "a/B"} {
			if _, err := a.Class(n, nil); err != nil {
				return err
			}
		}
		return nil
	})
	require.NoError(t, err)
	assert.Equal(t, []floor.Class{{JAR: "/x.jar", Entry: "a/B.class"}, {JAR: "/x.jar", Entry: "a/C.class"}}, classes)

	file := func(jar string) string { return filepath.Join(dir, jar) }
	got, err := floor.Run(classes, file)
	require.NoError(t, err)
	assert.Equal(t, floor.Result{JARs: 1, Classes: 2, Inflated: 1300}, got)

	_, err = floor.Run(append(classes, floor.Class{JAR: "/x.jar", Entry: "a/Gone.class"}), file)
	assert.ErrorContains(t, err, "1 classes the check read are not in the file")
}
