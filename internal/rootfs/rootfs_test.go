package rootfs_test

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// tree writes files and links below a new root and returns its fs.FS.
func tree(t *testing.T, files map[string]string, links map[string]string) (string, func(string) (string, error)) {
	t.Helper()
	root := t.TempDir()
	for name, data := range files {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
	}
	for name, target := range links {
		p := filepath.Join(root, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.Symlink(target, p))
	}
	fsys := os.DirFS(root)
	return root, func(name string) (string, error) {
		got, _, err := rootfs.Resolve(fsys, name)
		return got, err
	}
}

func TestResolveStaysInsideTheRoot(t *testing.T) {
	t.Parallel()
	_, resolve := tree(t, map[string]string{"data/real.jar": "x", "opt/flink/lib/plain.jar": "y"}, map[string]string{
		"opt/flink/lib/absolute.jar": "/data/real.jar",               // absolute: from the root, not the host's /
		"opt/flink/lib/climbing.jar": "../../../../../data/real.jar", // ".." stops at the root
		"opt/flink/lib/chain.jar":    "absolute.jar",
		"opt/current":                "flink", // a link to a directory in the middle of a path
	})
	for name, want := range map[string]string{
		"opt/flink/lib/plain.jar":    "opt/flink/lib/plain.jar",
		"opt/flink/lib/absolute.jar": "data/real.jar",
		"opt/flink/lib/climbing.jar": "data/real.jar",
		"opt/flink/lib/chain.jar":    "data/real.jar",
		"opt/current/lib/plain.jar":  "opt/flink/lib/plain.jar",
	} {
		t.Run(name, func(t *testing.T) {
			got, err := resolve(name)
			require.NoError(t, err)
			assert.Equal(t, want, got)
		})
	}
}

func TestResolveRefusesBrokenLinks(t *testing.T) {
	t.Parallel()
	_, resolve := tree(t, nil, map[string]string{"lib/a.jar": "b.jar", "lib/b.jar": "a.jar", "lib/gone.jar": "/nowhere.jar",
		"lib/deep.jar": "../opt/x/../y/z.jar", "opt/link": "/lib"})
	_, err := resolve("lib/a.jar")
	require.ErrorIs(t, err, rootfs.ErrLinkLoop)
	for _, tc := range []struct{ name, missing, target string }{
		{"lib/gone.jar", "nowhere.jar", "nowhere.jar"},
		{"lib/deep.jar", "opt/x", "opt/y/z.jar"},
		{"opt/link/gone.jar", "nowhere.jar", "nowhere.jar"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := resolve(tc.name)
			var d *rootfs.DanglingError
			require.ErrorAs(t, err, &d)
			assert.Equal(t, "dangling symbolic link: /"+tc.missing+" does not exist", err.Error())
			assert.Equal(t, tc.target, d.Target, "where the links lead")
		})
	}
}

func TestOpenRegularRefusesOtherTypesUnopened(t *testing.T) {
	t.Parallel()
	root, _ := tree(t, map[string]string{"lib/ok.jar": "data"}, map[string]string{"lib/dir.jar": "/lib"})
	// A FIFO would block open(2): it must be refused from its type alone.
	require.NoError(t, syscall.Mkfifo(filepath.Join(root, "lib/fifo.jar"), 0o644))
	fsys := os.DirFS(root)

	f, target, info, err := rootfs.OpenRegular(fsys, "lib/ok.jar")
	require.NoError(t, err)
	require.NoError(t, f.Close())
	assert.Equal(t, "lib/ok.jar", target)
	assert.EqualValues(t, 4, info.Size())

	for name, want := range map[string]string{"lib/fifo.jar": "a named pipe (FIFO)", "lib/dir.jar": "a directory (reached through a symbolic link)"} {
		t.Run(name, func(t *testing.T) {
			_, _, _, err := rootfs.OpenRegular(fsys, name)
			require.ErrorIs(t, err, rootfs.ErrNotRegular)
			assert.ErrorContains(t, err, want)
		})
	}
}
