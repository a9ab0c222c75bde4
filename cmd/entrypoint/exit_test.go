package main

import (
	"context"
	"errors"
	"fmt"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/exec"
)

// The contract's exit statuses, from error types however they are wrapped
// (the end-to-end tests reach each through the binary).
func TestExitCode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		err  error
		want int
	}{
		{"admitted (no error)", nil, 0},
		{"refused, already told", &toldError{admit.ErrRefused}, 78},
		{"deadline", &toldError{&admit.TimeoutError{Reading: []string{"/opt/flink/lib/a.jar"}}}, 75},
		{"TERM", &toldError{&admit.Interrupted{Signal: syscall.SIGTERM}}, 128 + 15},
		{"HUP", &admit.Interrupted{Signal: syscall.SIGHUP}, 128 + 1},
		{"original entrypoint missing", &exec.Error{Code: exec.NotFound, Path: "/x", Err: syscall.ENOENT}, 127},
		{"original entrypoint not executable", fmt.Errorf("hand-off: %w", &exec.Error{Code: exec.NotExecutable, Path: "/x", Err: syscall.EACCES}), 126},
		{"a setting", &usageError{errors.New("STREAMFUSION_ADMISSION_TIMEOUT: not a duration")}, 64},
		{"anything else", context.Canceled, 70},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, exitCode(tc.err))
		})
	}
}
