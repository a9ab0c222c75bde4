package exec

import (
	"errors"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestClassify(t *testing.T) {
	t.Parallel()
	for errno, code := range map[syscall.Errno]int{
		syscall.ENOENT: NotFound, syscall.ENOTDIR: NotFound,
		syscall.EACCES: NotExecutable, syscall.ENOEXEC: NotExecutable, syscall.EISDIR: NotExecutable,
	} {
		var e *Error
		assert.True(t, errors.As(classify("/x", errno), &e))
		assert.Equal(t, code, e.Code, errno.Error())
		assert.Contains(t, e.Error(), "/x")
	}
}
