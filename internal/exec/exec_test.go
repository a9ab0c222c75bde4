package exec

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for errno, code := range map[syscall.Errno]int{
		syscall.ENOENT: NotFound, syscall.ENOTDIR: NotFound,
		syscall.EACCES: NotExecutable, syscall.ENOEXEC: NotExecutable, syscall.EISDIR: NotExecutable,
	} {
		t.Run(errno.Error(), func(t *testing.T) {
			t.Parallel()
			var e *Error
			require.True(t, errors.As(classify("/x", errno), &e))
			assert.Equal(t, code, e.Code)
			assert.Contains(t, e.Error(), "/x")
		})
	}
}
