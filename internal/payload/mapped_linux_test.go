//go:build linux

package payload_test

import (
	"bytes"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// A file mapped for the directory walk that shrinks before the walk
// reaches its directory: the access faults (SIGBUS), and the reading is
// an error naming it, not a crash of the process.
func TestDirectoryInPlaceOfAShrunkFile(t *testing.T) {
	data := testkit.Good("2.2.1").Tree()[testkit.LibDir+"/flink-dist-2.2.1.jar"]
	p := filepath.Join(t.TempDir(), "flink-dist.jar")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	m, err := syscall.Mmap(int(f.Fd()), 0, len(data), syscall.PROT_READ, syscall.MAP_SHARED)
	require.NoError(t, err)
	defer syscall.Munmap(m)
	require.NoError(t, os.Truncate(p, 0))

	j := payload.Read(shrunk{bytes.NewReader(data), m}, int64(len(data)), "/opt/flink/lib/flink-dist.jar", payload.Options{})
	require.Error(t, j.Err)
	assert.Contains(t, j.Err.Error(), "the file changed while it was read")
}

// shrunk reads the file's old bytes but maps the file as it is now.
type shrunk struct {
	*bytes.Reader
	m []byte
}

func (s shrunk) Map(off, n int64) ([]byte, bool) { return s.m[off : off+n], true }
