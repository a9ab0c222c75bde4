//go:build linux

package rootfs_test

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Host answers as os.DirFS("/") does: the oracle is the standard library's
// own view of the same tree.
func TestHostAnswersAsDirFS(t *testing.T) {
	t.Parallel()
	root, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	files := map[string]string{"opt/flink/lib/a.jar": "PK a", "data/real.jar": strings.Repeat("x", 70_000), "empty.jar": ""}
	for name, data := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	for name, target := range map[string]string{
		"opt/current":            "flink",
		"opt/flink/lib/rel.jar":  "../../../data/real.jar",
		"opt/flink/lib/abs.jar":  filepath.Join(root, "data/real.jar"),
		"opt/flink/lib/gone.jar": "nothing.jar",
		"loop.jar":               "loop.jar",
		"dir.jar":                "opt",
	} {
		require.NoError(t, os.Symlink(target, filepath.Join(root, name)))
	}
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "opt/flink/lib/fifo.jar"), 0o644))

	base := strings.TrimPrefix(root, "/")
	host, dir := rootfs.Host(), os.DirFS("/")
	for _, name := range []string{"opt/flink/lib/a.jar", "opt/current/lib/a.jar", "opt/current/lib/rel.jar", "opt/flink/lib/abs.jar",
		"opt/flink/lib/gone.jar", "loop.jar", "dir.jar", "opt/flink/lib/fifo.jar", "empty.jar", "missing/x.jar", "opt/flink/lib"} {
		t.Run(name, func(t *testing.T) {
			name := base + "/" + name
			// Twice: the second answer comes from what Host remembers.
			for range 2 {
				wantT, wantI, wantE := rootfs.Resolve(dir, name)
				gotT, gotI, gotE := rootfs.Resolve(host, name)
				assert.Equal(t, wantT, gotT)
				assert.Equal(t, errText(wantE), errText(gotE))
				if wantI != nil && assert.NotNil(t, gotI) {
					assert.Equal(t, wantI.Mode(), gotI.Mode())
					assert.Equal(t, wantI.Size(), gotI.Size())
				}
				wantData, wantErr := openRead(dir, name)
				gotData, gotErr := openRead(host, name)
				assert.Equal(t, wantData, gotData)
				assert.Equal(t, errText(wantErr), errText(gotErr))
			}
		})
	}
	entries, err := fs.ReadDir(host, base+"/opt/flink/lib")
	require.NoError(t, err)
	assert.Len(t, entries, 5)
	_, err = host.Open("/" + base)
	assert.ErrorIs(t, err, fs.ErrInvalid)
}

// The file Host opens reads at any offset, reads sequentially to the end,
// says its size and refuses a second close.
func TestHostFileReads(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "f.jar")
	data := strings.Repeat("0123456789", 10_000)
	require.NoError(t, os.WriteFile(p, []byte(data), 0o600))
	f, err := rootfs.Host().Open(strings.TrimPrefix(p, "/"))
	require.NoError(t, err)
	info, err := f.Stat()
	require.NoError(t, err)
	assert.Equal(t, int64(len(data)), info.Size())
	assert.Equal(t, "f.jar", info.Name())
	assert.Equal(t, fs.FileMode(0o600), info.Mode())
	b := make([]byte, 5)
	n, err := f.(io.ReaderAt).ReadAt(b, 99_997)
	assert.Equal(t, 3, n)
	assert.ErrorIs(t, err, io.EOF)
	all, err := io.ReadAll(f)
	require.NoError(t, err)
	assert.Equal(t, data, string(all))
	require.NoError(t, f.Close())
	assert.ErrorIs(t, f.Close(), fs.ErrClosed)
}

func openRead(fsys fs.FS, name string) (string, error) {
	f, _, _, err := rootfs.OpenRegular(fsys, name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	b, err := io.ReadAll(f)
	return string(b), err
}

func errText(err error) string {
	if err == nil {
		return ""
	}
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Op + " " + pe.Path + ": " + pe.Err.Error()
	}
	return err.Error()
}
