package payload_test

// Opening a file named *.jar: only a regular file is read; anything else is
// refused, saying what it is, without opening it (a FIFO would block).

import (
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// specialLib is a root holding real.jar and, in lib, every kind of file
// that is not a JAR, each named *.jar.
func specialLib(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	require.NoError(t, os.MkdirAll(filepath.Join(lib, "dir.jar"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(lib, "fifo.jar"), 0o644))
	require.NoError(t, os.Symlink("missing.jar", filepath.Join(lib, "dangling.jar")))
	require.NoError(t, os.Symlink("loop-b.jar", filepath.Join(lib, "loop-a.jar")))
	require.NoError(t, os.Symlink("loop-a.jar", filepath.Join(lib, "loop-b.jar")))
	require.NoError(t, os.Symlink("dir.jar", filepath.Join(lib, "to-dir.jar")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real.jar"), testkit.Extension("csv", "2.2", "0.1.0").Bytes(), 0o644))
	require.NoError(t, os.Symlink("/real.jar", filepath.Join(lib, "abs.jar")))
	l, err := net.Listen("unix", filepath.Join(lib, "socket.jar"))
	require.NoError(t, err)
	t.Cleanup(func() { l.Close() })
	return dir
}

func TestOpenRefusesSpecialFiles(t *testing.T) {
	t.Parallel()
	lib := os.DirFS(specialLib(t))
	for _, c := range []struct {
		name       string
		fsys       fs.FS
		path       string
		want       string
		notRegular bool // refused as rootfs.ErrNotRegular
	}{
		{"a FIFO", lib, "lib/fifo.jar", "named pipe", false},
		{"a dangling link", lib, "lib/dangling.jar", "dangling symbolic link", false},
		{"a link loop", lib, "lib/loop-a.jar", "too many levels", false},
		{"a link to a directory", lib, "lib/to-dir.jar", "a directory", false},
		{"a socket", lib, "lib/socket.jar", "a socket", true},
		// The real /dev/null, as a link to it would reach it.
		{"a character device", os.DirFS("/"), "dev/null", "character device", true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := payload.Open(c.fsys, c.path, payload.Options{})
			require.Error(t, j.Err)
			assert.Contains(t, j.Err.Error(), c.want)
			if c.notRegular {
				assert.ErrorIs(t, j.Err, rootfs.ErrNotRegular)
			}
		})
	}
}

func TestOpenReads(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		fsys       fs.FS
		path       string
		wantPath   string
		wantTarget string
	}{
		// An absolute link target is resolved inside the file system's root.
		{"an absolute link, inside the root", os.DirFS(specialLib(t)), "lib/abs.jar", "/lib/abs.jar", "/real.jar"},
		{"a file in memory", fstest.MapFS{"lib/a.jar": {Data: testkit.Core("2.2", "0.1.0").Bytes()}}, "lib/a.jar", "/lib/a.jar", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := payload.Open(c.fsys, c.path, payload.Options{})
			require.NoError(t, j.Err)
			assert.Equal(t, c.wantPath, j.Path)
			assert.Equal(t, c.wantTarget, j.Target)
		})
	}
}
