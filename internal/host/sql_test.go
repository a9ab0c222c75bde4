package host

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/sqlscan"
)

// The SQL files read are bounded: a file larger than sqlscan.MaxBytes is
// not read (it says why), at most maxSQLFiles are read, the ones the
// process's arguments name first, and no more than maxSQLDepth
// directories down.
func TestGatherSQLBounded(t *testing.T) {
	fsys := fstest.MapFS{}
	table := []byte("CREATE TABLE t (a INT) WITH ('connector' = 'kafka');")
	for i := range 100 {
		fsys[fmt.Sprintf("opt/flink/usrlib/q%03d.sql", i)] = &fstest.MapFile{Data: table}
	}
	fsys["opt/flink/usrlib/a/b/c/d/deep.sql"] = &fstest.MapFile{Data: table}
	fsys["opt/job/big.sql"] = &fstest.MapFile{Data: []byte(strings.Repeat(" ", sqlscan.MaxBytes+1))}
	s := Settings{LibDir: "/opt/flink/lib", Args: []string{"/opt/job/big.sql"}}
	got := gatherSQL(fsys, s, &admission.Facts{})
	require.Len(t, got, maxSQLFiles)
	assert.Equal(t, "/opt/job/big.sql", got[0].Path, "the named file first")
	assert.True(t, got[0].Named)
	assert.Contains(t, got[0].Err, "more than the 1048576 this tool reads")
	assert.Empty(t, got[0].Uses)
	for _, f := range got[1:] {
		assert.False(t, f.Named, f.Path)
		assert.NotContains(t, f.Path, "deep.sql", "below maxSQLDepth")
		assert.Len(t, f.Uses, 1, f.Path)
	}
}
