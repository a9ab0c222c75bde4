// Package exec hands the process over to Flink's original entrypoint with
// syscall.Exec: the same argv (argv[0] included) and environment, byte for
// byte, the same working directory, no descriptor the entrypoint opened
// (Go opens every file close-on-exec), and the signal dispositions this
// process changed reset: execve itself gives every caught signal its
// default disposition and keeps the ignored ones ignored, so nothing is
// reset by hand (signal.Reset is a round trip to the runtime's signal
// thread per signal, ~0.2 ms for three on a start, during which a signal
// is caught and lost all the same). It decides nothing: by the time
// Handoff runs, admission is over.
package exec

import (
	"errors"
	"fmt"
	"syscall"
)

// Exit statuses of a failed hand-off, as a shell reports them.
const (
	NotExecutable = 126
	NotFound      = 127
)

// Error is a hand-off that did not happen.
type Error struct {
	Code int // NotExecutable or NotFound
	Path string
	Err  error
}

func (e *Error) Error() string {
	what := "is not executable"
	if e.Code == NotFound {
		what = "was not found"
	}
	return fmt.Sprintf("Flink's original entrypoint %s %s (%v); the image keeps it there, or STREAMFUSION_ORIGINAL_ENTRYPOINT names it", e.Path, what, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Handoff replaces the process with path. It returns only on failure.
func Handoff(path string, argv, env []string) error {
	err := syscall.Exec(path, argv, env)
	return classify(path, err)
}

// classify maps an exec error to a shell's status: 127 when there is no
// such file, 126 for every other reason it cannot run (permission, format,
// a directory, ...).
func classify(path string, err error) error {
	if errors.Is(err, syscall.ENOENT) || errors.Is(err, syscall.ENOTDIR) {
		return &Error{Code: NotFound, Path: path, Err: err}
	}
	return &Error{Code: NotExecutable, Path: path, Err: err}
}
