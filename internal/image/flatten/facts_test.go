package flatten

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestScanChecksTheDiffID(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: "etc/x", Typeflag: tar.TypeReg, Mode: 0o644}))
	require.NoError(t, tw.Close())
	s := &scanner{sel: NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins"}, "")}
	_, err := s.scan(bytes.NewReader(buf.Bytes()), "sha256:"+string(bytes.Repeat([]byte("0"), 64)))
	require.ErrorIs(t, err, ErrLayer)
	assert.Contains(t, err.Error(), "its config says sha256:000")
}

// FuzzScanLayer: whatever a layer holds, the scan returns facts whose
// names stay below the root, or an error; it never panics.
func FuzzScanLayer(f *testing.F) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	jar := testkit.Core("2.2", "0.1.0").Bytes()
	for _, h := range []*tar.Header{
		{Name: "opt/flink/lib/a.jar", Typeflag: tar.TypeReg, Size: int64(len(jar)), Mode: 0o644},
		{Name: "opt/flink/lib/.wh.b.jar", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "opt/flink/plugins/.wh..wh..opq", Typeflag: tar.TypeReg, Mode: 0o644},
		{Name: "opt/java/openjdk/release", Typeflag: tar.TypeReg, Size: 3, Mode: 0o644},
		{Name: "lib64", Typeflag: tar.TypeSymlink, Linkname: "usr/lib64"},
		{Name: "opt/flink/lib/h.jar", Typeflag: tar.TypeLink, Linkname: "opt/flink/lib/a.jar"},
	} {
		_ = tw.WriteHeader(h)
		switch h.Size {
		case 3:
			_, _ = tw.Write([]byte("v=1"))
		case int64(len(jar)):
			_, _ = tw.Write(jar)
		}
	}
	_ = tw.Close()
	f.Add(buf.Bytes())
	f.Add(rawTar(f, &tar.Header{Name: "opt/flink/lib", Typeflag: tar.TypeSymlink, Linkname: "/opt/flink/lib/x"},
		&tar.Header{Name: "a", Typeflag: tar.TypeSymlink, Linkname: "b"}, &tar.Header{Name: "b", Typeflag: tar.TypeSymlink, Linkname: "/a"}))
	sel := NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", Original: settings.DefaultOriginal}, "")
	f.Fuzz(func(t *testing.T, data []byte) {
		s := &scanner{sel: sel, tempDir: t.TempDir()}
		defer s.close()
		lf, err := s.scan(bytes.NewReader(data), "")
		if err != nil {
			return
		}
		for _, n := range lf.Nodes {
			if n.Name == ".." || strings.HasPrefix(n.Name, "../") || strings.HasPrefix(n.Name, "/") {
				t.Fatalf("entry %q escapes the root", n.Name)
			}
		}
		// The layer over itself: its whiteouts and opaque directories
		// hide its own entries below; every name of the view resolves
		// or fails (link loops included) without hanging.
		v := Merge([]*Facts{lf, lf})
		for name := range v.FS {
			if !fs.ValidPath(name) {
				t.Fatalf("view name %q is not a valid path", name)
			}
			_, _, _ = rootfs.Resolve(v.FS, name)
			_, _ = fs.Stat(v.FS, name)
		}
		_ = fs.WalkDir(v.FS, ".", func(string, fs.DirEntry, error) error { return nil })
	})
}

// GNU tar (and mmdebstrap) pad an archive to 10 KiB records after its
// end-of-archive blocks; the padding is part of the layer's content and
// its diff ID. The layer here is written by the real tar.
func TestScanHashesThePaddingAfterTheArchive(t *testing.T) {
	t.Parallel()
	tarTool, err := exec.LookPath("tar")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("tar is needed")
		}
		t.Skip("no tar")
	}
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "root/etc"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "root/etc/x"), []byte("x"), 0o644))
	layer := filepath.Join(dir, "layer.tar")
	out, err := exec.Command(tarTool, "-C", filepath.Join(dir, "root"), "-cf", layer, "etc").CombinedOutput()
	require.NoError(t, err, string(out))
	data, err := os.ReadFile(layer)
	require.NoError(t, err)
	require.Zero(t, len(data)%10240, "GNU tar pads to 10 KiB records")
	sum := sha256.Sum256(data)
	s := &scanner{sel: NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins"}, "")}
	_, err = s.scan(bytes.NewReader(data), "sha256:"+hex.EncodeToString(sum[:]))
	require.NoError(t, err)
}

// TestNamesThatAreNotUTF8: a layer entry whose name is not UTF-8 (Linux
// allows it; fs.FS paths cannot hold it) below lib is refused, since it
// may hide a JAR the JVM loads; elsewhere it is left out of the view.
func TestNamesThatAreNotUTF8(t *testing.T) {
	sel := NewSelection(settings.Config{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", Original: settings.DefaultOriginal}, "")
	for _, tc := range []struct {
		name   string
		refuse bool
	}{{"opt/flink/lib/a\xe8.jar", true}, {"opt/flink/plugins/s3\xe8/x.jar", true}, {"usr/share/locale/\xe8", false}} {
		s := &scanner{sel: sel, tempDir: t.TempDir()}
		lf, err := s.scan(bytes.NewReader(rawTar(t, &tar.Header{Name: tc.name, Typeflag: tar.TypeReg, Mode: 0o644})), "")
		s.close()
		if tc.refuse {
			assert.ErrorIs(t, err, ErrLayer, "%q", tc.name)
			continue
		}
		require.NoError(t, err, "%q", tc.name)
		for _, n := range lf.Nodes {
			assert.True(t, utf8.ValidString(n.Name), "%q kept", n.Name)
		}
	}
}
