//go:build linux

package payload_test

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// Read through rootfs.Host, which maps the file for the walk, a JAR reads
// as it does through os.DirFS, which does not.
func TestHostMappedReadsAsDirFS(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	jars := map[string][]byte{
		"loader.jar": testkit.Loader("2.2", "0.1.0").Bytes(),
		"big.jar":    testkit.BigJAR(40_000, 10, testkit.Manifest("Implementation-Version", "2.2.1")),
		"csv.jar":    testkit.Extension("csv", "2.2", "0.1.0").Bytes(),
	}
	for name, data := range jars {
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		name := strings.TrimPrefix(filepath.Join(dir, name), "/")
		want := payload.Open(os.DirFS("/"), name, payload.Options{Properties: true})
		got := payload.Open(rootfs.Host(), name, payload.Options{Properties: true})
		require.NoError(t, want.Err)
		assert.Equal(t, want, got, name)
	}
}

// A mapped file that shrinks while its directory is walked faults; the
// reading says so instead of the process dying of SIGBUS.
func TestMappedFileThatShrinksIsAnError(t *testing.T) {
	t.Parallel()
	data := testkit.BigJAR(20_000, 10, testkit.Manifest("Implementation-Version", "2.2.1"))
	p := filepath.Join(t.TempDir(), "shrinking.jar")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(data), syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(m)
	require.NoError(t, os.Truncate(p, 0)) // every page of the mapping now faults

	fsys := shrunkFS{file: shrunkFile{mappedReader: mappedReader{bytes.NewReader(data), m}, size: int64(len(data))}}
	j := payload.Open(fsys, "shrinking.jar", payload.Options{})
	require.Error(t, j.Err)
	assert.Contains(t, j.Err.Error(), "changed while it was read")
}

// shrunkFS has one file: its bytes as they were for ReadAt, its mapping as
// it is now.
type shrunkFS struct{ file shrunkFile }

func (s shrunkFS) Open(string) (fs.File, error)      { return s.file, nil }
func (s shrunkFS) Stat(string) (fs.FileInfo, error)  { return s.file.Stat() }
func (s shrunkFS) Lstat(string) (fs.FileInfo, error) { return s.file.Stat() }
func (s shrunkFS) ReadLink(string) (string, error)   { return "", fs.ErrInvalid }

type shrunkFile struct {
	mappedReader
	size int64
}

func (f shrunkFile) Stat() (fs.FileInfo, error) { return shrunkInfo{f.size}, nil }
func (f shrunkFile) Close() error               { return nil }

type shrunkInfo struct{ size int64 }

func (i shrunkInfo) Name() string       { return "shrinking.jar" }
func (i shrunkInfo) Size() int64        { return i.size }
func (i shrunkInfo) Mode() fs.FileMode  { return 0o644 }
func (i shrunkInfo) ModTime() time.Time { return time.Time{} }
func (i shrunkInfo) IsDir() bool        { return false }
func (i shrunkInfo) Sys() any           { return nil }
