// Command streamfusion is the host CLI of StreamFusion: it checks and
// installs payloads into a Flink distribution (install, check, inspect),
// and verifies and bakes Flink images without a Docker daemon (verify,
// bake). The entrypoint installed in images is a separate, smaller binary
// (cmd/entrypoint) that links none of the registry or HTTP code used here.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/image"
)

// Exit statuses, the same as the entrypoint's where they overlap.
const (
	exitRefused = 78 // a check refused: the report says why
	exitUsage   = 64 // the command line cannot be used
	exitFailure = 1  // anything else went wrong
)

// version is stamped at build time (-ldflags -X main.version=...).
var version = "dev"

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Environ(), os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run is the whole program; tests call it directly.
func run(ctx context.Context, args, env []string, stdout, stderr io.Writer) int {
	root, started := newRoot(env)
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return 0
	}
	var reported *reportedError
	if !errors.As(err, &reported) {
		fmt.Fprintln(stderr, "streamfusion:", err)
	}
	return exitCode(err, *started)
}

// exitCode maps an error to the exit status, once: errors before a
// command ran (unknown commands, flags, arguments) are usage errors.
func exitCode(err error, started bool) int {
	var usage *usageError
	var status *statusError
	switch {
	case errors.As(err, &status):
		return status.code
	case errors.As(err, &usage), !started:
		return exitUsage
	case errors.Is(err, admit.ErrRefused), errors.Is(err, image.ErrPayload):
		return exitRefused
	case errors.Is(err, image.ErrConfig):
		return exitUsage
	}
	return exitFailure
}

// usageError is a command line that cannot be used; it says what is wrong.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{fmt.Sprintf(format, args...)}
}

// reportedError is an error whose story is already on the output.
type reportedError struct{ err error }

func (e *reportedError) Error() string { return e.err.Error() }
func (e *reportedError) Unwrap() error { return e.err }

// statusError is a report already printed whose command chose its exit
// status (the audit: 78 refused, 75 incomplete).
type statusError struct {
	code int
	err  error
}

func (e *statusError) Error() string { return e.err.Error() }
func (e *statusError) Unwrap() error { return e.err }

// reported marks err, if any, as already told: a refusal whose report is
// printed says nothing more.
func reported(err error) error {
	if err == nil {
		return nil
	}
	return &reportedError{err}
}
