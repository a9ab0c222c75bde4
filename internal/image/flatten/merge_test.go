package flatten

import (
	"archive/tar"
	"bytes"
	"context"
	"io/fs"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

var flinkSel = NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", Original: settings.DefaultOriginal}, "")

// mergedView reads the layers of img into facts and merges them, as
// Read does (one reading).
func mergedView(t *testing.T, layers ...v1.Layer) *View {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	require.NoError(t, err)
	o := Options{TempDir: t.TempDir()}
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	ids := cfg.RootFS.DiffIDs
	facts, err := o.readFacts(context.Background(), o.layersOf(img, ids), len(ids), flinkSel)
	require.NoError(t, err)
	return Merge(facts)
}

func TestMergeWhiteoutsAndOpaqueDirectories(t *testing.T) {
	t.Parallel()
	e := func(name, data string) imagekit.Entry { return imagekit.Entry{Name: name, Data: []byte(data)} }
	v := mergedView(t,
		imagekit.Layer(e("opt/flink/lib/a.jar", "a1"), e("opt/flink/lib/b.jar", "b1"), e("opt/flink/lib/sub/c.jar", "c1"),
			e("opt/flink/plugins/p/x.jar", "x1"), e("opt/java/openjdk/release", "k"), e("opt/flink/usrlib/job.jar", "j")),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib/b.jar", Whiteout: true}, e("opt/flink/lib/a.jar", "a22"),
			imagekit.Entry{Name: "opt/flink/plugins", Opaque: true}, e("opt/flink/plugins/q/y.jar", "y2"),
			imagekit.Entry{Name: "opt/flink/usrlib", Link: "/etc"}),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib/sub", Whiteout: true}),
	)
	require.Contains(t, v.JARs, "opt/flink/lib/a.jar")
	assert.EqualValues(t, 3, v.JARs["opt/flink/lib/a.jar"].Size, "the upper layer wins")
	for name, why := range map[string]string{
		"opt/flink/lib/b.jar":       "whited out",
		"opt/flink/lib/sub/c.jar":   "a whited-out directory hides its contents",
		"opt/flink/plugins/p/x.jar": "an opaque directory hides the lower contents",
		"opt/flink/usrlib/job.jar":  "a link replacing a directory hides what was in it",
	} {
		t.Run(why, func(t *testing.T) {
			assert.NotContains(t, v.FS, name)
			assert.NotContains(t, v.JARs, name)
		})
	}
	assert.Contains(t, v.JARs, "opt/flink/plugins/q/y.jar", "an opaque directory keeps its own layer's contents")
	data, err := fs.ReadFile(v.FS, "opt/java/openjdk/release")
	require.NoError(t, err)
	assert.Equal(t, "k", string(data))
	info, err := v.FS.Lstat("opt/flink/usrlib")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type())
}

func TestScanKeepsOnlyWhatIsWanted(t *testing.T) {
	t.Parallel()
	v := mergedView(t, imagekit.Layer(imagekit.Entry{Name: "big/blob", Data: bytes.Repeat([]byte("x"), 1<<16)},
		imagekit.Entry{Name: "lib64/ld-linux-x86-64.so.2", Data: []byte("loader")}))
	assert.NotContains(t, v.FS, "big/blob")
	require.Contains(t, v.FS, "lib64/ld-linux-x86-64.so.2", "kept as a stand-in")
	assert.Empty(t, v.FS["lib64/ld-linux-x86-64.so.2"].Data)
}

func rawTar(t testing.TB, hs ...*tar.Header) []byte {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range hs {
		require.NoError(t, tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write(bytes.Repeat([]byte("x"), int(h.Size)))
			require.NoError(t, err)
		}
	}
	require.NoError(t, tw.Close())
	return buf.Bytes()
}

func TestScanRefusesHostileEntries(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]*tar.Header{
		"climbs out":    {Name: "../../etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"climbs inside": {Name: "opt/../../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"hard link out": {Name: "opt/x", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"},
	} {
		t.Run(name, func(t *testing.T) {
			s := &scanner{sel: flinkSel}
			_, err := s.scan(bytes.NewReader(rawTar(t, h)), "")
			require.ErrorIs(t, err, ErrLayer)
		})
	}
	// Absolute symbolic links are normal in images: they stay inside the root.
	s := &scanner{sel: flinkSel}
	lf, err := s.scan(bytes.NewReader(rawTar(t, &tar.Header{Name: "opt/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})), "")
	require.NoError(t, err)
	require.Len(t, lf.Nodes, 1)
	assert.Equal(t, "/etc/passwd", lf.Nodes[0].Link)
}

// A tar need not list directories: those that hold only files the scan
// leaves out are implied, so that links through them resolve, and an
// implied directory never overrides a lower layer's entry for it.
func TestImpliedDirectories(t *testing.T) {
	t.Parallel()
	v := mergedView(t,
		imagekit.Layer(imagekit.Entry{Name: "opt/flink", Dir: true, Mode: 0o775, UID: 9999, GID: 9999}),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/NOTICE", Data: []byte("left out")},
			imagekit.Entry{Name: "opt/flink/opt/notes.txt", Data: []byte("left out")},
			imagekit.Entry{Name: "srv/data/blob", Data: []byte("left out")}),
	)
	for _, tc := range []struct {
		name string
		uid  int
		mode fs.FileMode
	}{
		{"opt/flink", 9999, 0o775},  // the lower layer's entry decides
		{"opt/flink/opt", 0, 0o755}, // implied by the upper layer
		{"srv/data", 0, 0o755},      // implied
	} {
		t.Run(tc.name, func(t *testing.T) {
			info, err := v.FS.Lstat(tc.name)
			require.NoError(t, err)
			require.True(t, info.IsDir())
			assert.Equal(t, tc.mode, info.Mode().Perm())
			assert.Equal(t, tc.uid, info.Sys().(*Node).UID)
		})
	}
	assert.NotContains(t, v.FS, "opt/flink/opt/notes.txt", "what the scan leaves out stays out")
}

// A whiteout deletes a lower layer's path with everything below it; a
// layer above that re-creates the directory shows only its own contents
// (the OCI image spec's changesets), whether or not its tar lists the
// directory.
func TestWhiteoutThenRecreated(t *testing.T) {
	t.Parallel()
	e := func(name, data string) imagekit.Entry { return imagekit.Entry{Name: name, Data: []byte(data)} }
	v := mergedView(t,
		imagekit.Layer(e("opt/flink/lib/old.jar", "old"), e("opt/java/openjdk/bin/java", "old java")),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib", Whiteout: true}, imagekit.Entry{Name: "opt/java/openjdk/bin", Whiteout: true}),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib", Dir: true, Mode: 0o755}, e("opt/flink/lib/new.jar", "new"),
			e("opt/java/openjdk/bin/other", "not java")),
	)
	assert.Contains(t, v.JARs, "opt/flink/lib/new.jar")
	assert.NotContains(t, v.JARs, "opt/flink/lib/old.jar", "deleted below the re-created directory")
	assert.NotContains(t, v.FS, "opt/java/openjdk/bin/java", "deleted below an implied directory")
	info, err := v.FS.Lstat("opt/java/openjdk/bin")
	require.NoError(t, err)
	assert.True(t, info.IsDir())
}
