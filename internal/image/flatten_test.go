package image

import (
	"archive/tar"
	"bytes"
	"io"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

func all(string) Keep { return Contents }

func stack(t *testing.T, layers ...v1.Layer) v1.Image {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	require.NoError(t, err)
	return img
}

func TestFlattenWhiteoutsAndOpaqueDirectories(t *testing.T) {
	t.Parallel()
	e := func(name, data string) imagekit.Entry { return imagekit.Entry{Name: name, Data: []byte(data)} }
	img := stack(t,
		imagekit.Layer(e("opt/flink/lib/a.jar", "a1"), e("opt/flink/lib/b.jar", "b1"), e("opt/flink/lib/sub/c.jar", "c1"),
			e("opt/flink/plugins/p/x.jar", "x1"), e("etc/keep", "k"), e("opt/old/file", "o")),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib/b.jar", Whiteout: true}, e("opt/flink/lib/a.jar", "a2"),
			imagekit.Entry{Name: "opt/flink/plugins", Opaque: true}, e("opt/flink/plugins/q/y.jar", "y2"),
			imagekit.Entry{Name: "opt/old", Link: "/etc"}),
		imagekit.Layer(imagekit.Entry{Name: "opt/flink/lib/sub", Whiteout: true}),
	)
	fsys, err := Flatten(img, all)
	require.NoError(t, err)
	assert.Equal(t, "a2", string(fsys["opt/flink/lib/a.jar"].Data), "the upper layer wins")
	assert.NotContains(t, fsys, "opt/flink/lib/b.jar", "whited out")
	assert.NotContains(t, fsys, "opt/flink/lib/sub/c.jar", "a whited-out directory hides its contents")
	assert.NotContains(t, fsys, "opt/flink/plugins/p/x.jar", "an opaque directory hides the lower contents")
	assert.Equal(t, "y2", string(fsys["opt/flink/plugins/q/y.jar"].Data), "but not the same layer's")
	assert.NotContains(t, fsys, "opt/old/file", "a link replacing a directory hides what was in it")
	assert.Equal(t, "k", string(fsys["etc/keep"].Data))
}

func TestFlattenKeepsOnlyWhatIsWanted(t *testing.T) {
	t.Parallel()
	img := stack(t, imagekit.Layer(imagekit.Entry{Name: "big/blob", Data: bytes.Repeat([]byte("x"), 1<<16)},
		imagekit.Entry{Name: "lib64/ld-linux-x86-64.so.2", Data: []byte("loader")}))
	fsys, err := Flatten(img, func(name string) Keep {
		if name == "lib64/ld-linux-x86-64.so.2" {
			return Presence
		}
		return Skip
	})
	require.NoError(t, err)
	assert.NotContains(t, fsys, "big/blob")
	require.Contains(t, fsys, "lib64/ld-linux-x86-64.so.2")
	assert.Empty(t, fsys["lib64/ld-linux-x86-64.so.2"].Data)
}

func rawLayer(t testing.TB, hs ...*tar.Header) v1.Layer {
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
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
	require.NoError(t, err)
	return l
}

func TestFlattenRefusesHostileEntries(t *testing.T) {
	t.Parallel()
	for name, h := range map[string]*tar.Header{
		"climbs out":    {Name: "../../etc/passwd", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"climbs inside": {Name: "opt/../../x", Typeflag: tar.TypeReg, Size: 1, Mode: 0o644},
		"hard link out": {Name: "opt/x", Typeflag: tar.TypeLink, Linkname: "../../etc/shadow"},
	} {
		_, err := Flatten(stack(t, rawLayer(t, h)), all)
		require.ErrorIs(t, err, ErrLayer, name)
	}
	// Absolute symbolic links are normal in images: they stay inside the root.
	fsys, err := Flatten(stack(t, rawLayer(t, &tar.Header{Name: "opt/link", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"})), all)
	require.NoError(t, err)
	assert.Equal(t, "/etc/passwd", string(fsys["opt/link"].Data))
}

func FuzzFlatten(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, h := range []*tar.Header{
		{Name: "opt/flink/lib/a.jar", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644},
		{Name: "opt/flink/lib/.wh.b.jar", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "opt/flink/plugins/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "lib64", Typeflag: tar.TypeSymlink, Linkname: "usr/lib64"},
	} {
		_ = tw.WriteHeader(h)
		if h.Size > 0 {
			_, _ = tw.Write([]byte("abc"))
		}
	}
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, data []byte) {
		l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil })
		if err != nil {
			return
		}
		img, err := mutate.AppendLayers(empty.Image, l)
		if err != nil {
			return
		}
		fsys, err := Flatten(img, all)
		if err != nil {
			return
		}
		for name := range fsys {
			if name == ".." || len(name) > 2 && name[:3] == "../" || len(name) > 0 && name[0] == '/' {
				t.Fatalf("entry %q escapes the root", name)
			}
		}
	})
}
