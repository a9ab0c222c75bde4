package install

import (
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// OS's WriteFile creates and never overwrites; Append never creates; both
// leave the bytes in the file.
func TestOSWriteFileAndAppend(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	name := filepath.Join(dir, "journal")
	require.ErrorIs(t, OS{}.Append(name, []byte("x")), fs.ErrNotExist, "Append creates nothing")
	require.NoError(t, OS{}.WriteFile(name, []byte("head\n")))
	require.ErrorIs(t, OS{}.WriteFile(name, []byte("again\n")), fs.ErrExist, "WriteFile never writes over a file")
	require.NoError(t, OS{}.Append(name, []byte("staged\n")))
	require.NoError(t, OS{}.Append(name, []byte("committed\n")))
	data, err := os.ReadFile(name)
	require.NoError(t, err)
	assert.Equal(t, "head\nstaged\ncommitted\n", string(data))
	info, err := os.Stat(name)
	require.NoError(t, err)
	assert.Zero(t, info.Mode().Perm()&^0o644, "no more than rw-r--r--")
	assert.NotZero(t, info.Mode().Perm()&0o400)
}
