// Command entrypoint is installed at /docker-entrypoint.sh in StreamFusion
// images. Before a Flink JobManager, TaskManager, application, HistoryServer
// or submission client starts, it checks the host and every StreamFusion
// payload in lib; it then either refuses (exit 78, with the reason) or
// replaces itself with Flink's original entrypoint, argv and environment
// untouched.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/config"
	"github.com/streamfusion/image-entrypoint/internal/exec"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/roles"
)

// version is stamped at build time (-ldflags -X main.version=...).
var version = "dev"

// stamp marks this binary as a StreamFusion entrypoint of contract 1:
// `streamfusion verify` and `bake --entrypoint` look for these bytes in the
// file at /docker-entrypoint.sh (internal/image/guard.go). It is printed by
// `streamfusion version`, so the linker keeps it. Only this binary holds it
// whole: the host CLI assembles it at run time.
const stamp = "STREAMFUSION/ENTRYPOINT/CONTRACT=1"

// Exit statuses of the contract.
const (
	exitRefused  = 78
	exitTimeout  = 75
	exitUsage    = 64
	exitInternal = 70
)

func main() {
	os.Exit(run(os.Args, environ(), os.Stdout, os.Stderr))
}

// environ returns the environment exactly as the process received it. Go's
// os.Environ drops the later copies of a repeated variable; Flink's script
// must see what it would have seen without us, so the block is read from
// /proc/self/environ when it can be.
func environ() []string {
	data, err := os.ReadFile("/proc/self/environ")
	if err != nil {
		return os.Environ()
	}
	if len(data) == 0 {
		return []string{}
	}
	return strings.Split(strings.TrimSuffix(string(data), "\x00"), "\x00")
}

// run is the whole program; it returns the exit status, or does not
// return at all when it hands off.
func run(args, env []string, stdout, stderr io.Writer) int {
	role := roles.Classify(args[1:])
	switch {
	case role == roles.Own:
		return own(args[2:], env, stdout, stderr)
	case !role.Admits():
		// Pass-through: nothing is read, so a debug shell works on a broken image.
		original, err := config.Original(env)
		if err != nil {
			fmt.Fprintln(stderr, "streamfusion: ERROR", err)
			return exitUsage
		}
		return handoff(original, args, env, stderr)
	}
	cfg, err := config.FromEnv(env)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion: ERROR", strings.ReplaceAll(err.Error(), "\n", "; "))
		return exitUsage
	}
	log := report.Logger(stderr, cfg.JSON, cfg.Level)
	if cfg.LevelWarning != "" {
		log.Warn().Msg(cfg.LevelWarning)
	}

	// PID 1 gets no default signal handling: catch TERM, INT and HUP while
	// admission runs, unless they were ignored when we started (then Flink
	// would have inherited them ignored, and so it still will).
	var sigs []os.Signal
	for _, s := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(s) {
			sigs = append(sigs, s)
		}
	}
	caught := make(chan os.Signal, 1)
	if len(sigs) > 0 { // Notify with no signals would relay every signal
		signal.Notify(caught, sigs...)
	}

	name := string(role)
	_, d, err := decide(cfg, caught)
	var sig *signalError
	var late *timeoutError
	switch {
	case errors.As(err, &sig):
		log.Error().Str("signal", sig.sig.String()).Msgf("received %s during admission; nothing was started", sig.sig)
		return 128 + int(sig.sig.(syscall.Signal))
	case errors.As(err, &late):
		msg := fmt.Sprintf("StreamFusion admission of %s did not finish within %s (STREAMFUSION_ADMISSION_TIMEOUT); still reading: %s", name, cfg.Timeout, strings.Join(late.reading, ", "))
		fmt.Fprintln(stderr, msg)
		terminate(log, cfg, msg)
		return exitTimeout
	case err != nil:
		log.Error().Err(err).Msg("internal error during admission")
		return exitInternal
	}
	report.Findings(log, d)
	if !d.Admitted() {
		summary := report.Summary(name, d)
		fmt.Fprintln(stderr, summary)
		terminate(log, cfg, summary)
		return exitRefused
	}
	log.Info().Msg(report.Admitted(name, d))
	return handoff(cfg.Original, args, env, stderr, sigs...)
}

type signalError struct{ sig os.Signal }

func (e *signalError) Error() string { return "received " + e.sig.String() }

type timeoutError struct{ reading []string }

func (e *timeoutError) Error() string { return context.DeadlineExceeded.Error() }
func (e *timeoutError) Unwrap() error { return context.DeadlineExceeded }

// decide gathers the facts and decides, bounded by the admission deadline
// and interrupted by a caught signal.
func decide(cfg config.Config, caught <-chan os.Signal) (*admission.Facts, *admission.Decision, error) {
	ctx, cancel := context.WithTimeout(context.Background(), cfg.Timeout)
	defer cancel()
	progress := &host.Progress{}
	type result struct {
		facts *admission.Facts
		d     *admission.Decision
		err   error
	}
	done := make(chan result, 1)
	go func() {
		facts, err := host.Gather(ctx, os.DirFS("/"), settings(cfg), progress)
		if err != nil {
			done <- result{err: err}
			return
		}
		done <- result{facts, admission.Decide(facts), nil}
	}()
	select {
	case r := <-done:
		if r.err != nil && ctx.Err() != nil {
			return nil, nil, &timeoutError{reading: progress.Reading()}
		}
		return r.facts, r.d, r.err
	case s := <-caught:
		return nil, nil, &signalError{s}
	case <-ctx.Done():
		reading := progress.Reading()
		if len(reading) == 0 {
			reading = []string{"(between files)"}
		}
		return nil, nil, &timeoutError{reading: reading}
	}
}

func settings(cfg config.Config) host.Settings {
	var uts syscall.Utsname
	arch := ""
	if err := syscall.Uname(&uts); err == nil {
		arch = utsString(uts.Machine[:])
	}
	return cfg.HostSettings("linux", arch)
}

func utsString(b []int8) string {
	s := make([]byte, 0, len(b))
	for _, c := range b {
		if c == 0 {
			break
		}
		s = append(s, byte(c))
	}
	return string(s)
}

func terminate(log zerolog.Logger, cfg config.Config, msg string) {
	if err := report.WriteTermination(cfg.TerminationLog, msg); err != nil {
		log.Debug().Err(err).Str("path", cfg.TerminationLog).Msg("termination message not written")
	}
}

// handoff execs Flink's original entrypoint; it returns only on failure.
func handoff(original string, args, env []string, stderr io.Writer, handled ...os.Signal) int {
	err := exec.Handoff(original, args, env, handled...)
	fmt.Fprintln(stderr, "streamfusion: ERROR", err)
	var e *exec.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return exitInternal
}
