package image

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
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

var flinkSel = newSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", Original: settings.DefaultOriginal}, "")

// mergedView reads the layers of img into facts and merges them, as
// Verify and Bake do.
func mergedView(t *testing.T, layers ...v1.Layer) *view {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	require.NoError(t, err)
	facts, err := (&run{VerifyOptions: VerifyOptions{TempDir: t.TempDir()}}).readFacts(context.Background(), img, flinkSel)
	require.NoError(t, err)
	return merge(facts)
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
	require.Contains(t, v.jars, "opt/flink/lib/a.jar")
	assert.EqualValues(t, 3, v.jars["opt/flink/lib/a.jar"].Size, "the upper layer wins")
	for name, why := range map[string]string{
		"opt/flink/lib/b.jar":       "whited out",
		"opt/flink/lib/sub/c.jar":   "a whited-out directory hides its contents",
		"opt/flink/plugins/p/x.jar": "an opaque directory hides the lower contents",
		"opt/flink/usrlib/job.jar":  "a link replacing a directory hides what was in it",
	} {
		t.Run(why, func(t *testing.T) {
			assert.NotContains(t, v.fsys, name)
			assert.NotContains(t, v.jars, name)
		})
	}
	assert.Contains(t, v.jars, "opt/flink/plugins/q/y.jar", "an opaque directory keeps its own layer's contents")
	data, err := fs.ReadFile(v.fsys, "opt/java/openjdk/release")
	require.NoError(t, err)
	assert.Equal(t, "k", string(data))
	info, err := v.fsys.Lstat("opt/flink/usrlib")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type())
}

func TestScanKeepsOnlyWhatIsWanted(t *testing.T) {
	t.Parallel()
	v := mergedView(t, imagekit.Layer(imagekit.Entry{Name: "big/blob", Data: bytes.Repeat([]byte("x"), 1<<16)},
		imagekit.Entry{Name: "lib64/ld-linux-x86-64.so.2", Data: []byte("loader")}))
	assert.NotContains(t, v.fsys, "big/blob")
	require.Contains(t, v.fsys, "lib64/ld-linux-x86-64.so.2", "kept as a stand-in")
	assert.Empty(t, v.fsys["lib64/ld-linux-x86-64.so.2"].Data)
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
			info, err := v.fsys.Lstat(tc.name)
			require.NoError(t, err)
			require.True(t, info.IsDir())
			assert.Equal(t, tc.mode, info.Mode().Perm())
			assert.Equal(t, tc.uid, info.Sys().(*node).UID)
		})
	}
	assert.NotContains(t, v.fsys, "opt/flink/opt/notes.txt", "what the scan leaves out stays out")
}

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
	assert.Contains(t, v.jars, "opt/flink/lib/new.jar")
	assert.NotContains(t, v.jars, "opt/flink/lib/old.jar", "deleted below the re-created directory")
	assert.NotContains(t, v.fsys, "opt/java/openjdk/bin/java", "deleted below an implied directory")
	info, err := v.fsys.Lstat("opt/java/openjdk/bin")
	require.NoError(t, err)
	assert.True(t, info.IsDir())
}

// Bake's parent directories take the base's entry; a directory the base
// only implies has none, so it gets root's 0755 at the bake's epoch.
func TestParentDirOfImpliedDirectory(t *testing.T) {
	t.Parallel()
	v := mergedView(t,
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
			h := parentDir(v.fsys, tc.dir, sec)
			require.NotNil(t, h)
			assert.Equal(t, tc.uid, h.Uid)
			assert.Equal(t, tc.mode, h.Mode&0o7777)
			assert.Equal(t, tc.time, h.ModTime.Unix())
		})
	}
}
