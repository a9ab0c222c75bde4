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
	"time"

	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/exec"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/roles"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
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
	err := start(args, env, stdout, stderr)
	var told *toldError
	if err != nil && !errors.As(err, &told) {
		fmt.Fprintln(stderr, "streamfusion: ERROR", err)
	}
	return exitCode(err)
}

// exitCode maps an error to the contract's exit status, once, from its type.
func exitCode(err error) int {
	var (
		usage *usageError
		late  *admit.TimeoutError
		sig   *admit.Interrupted
		ex    *exec.Error
	)
	switch {
	case err == nil:
		return 0
	case errors.Is(err, admit.ErrRefused):
		return exitRefused
	case errors.As(err, &late):
		return exitTimeout
	case errors.As(err, &sig):
		if n, ok := sig.Signal.(syscall.Signal); ok {
			return 128 + int(n)
		}
	case errors.As(err, &ex):
		return ex.Code
	case errors.As(err, &usage):
		return exitUsage
	}
	return exitInternal
}

// usageError is a command line or a setting that cannot be used.
type usageError struct{ err error }

func (e *usageError) Error() string { return strings.ReplaceAll(e.err.Error(), "\n", "; ") }
func (e *usageError) Unwrap() error { return e.err }

// toldError is an error whose story is already on stderr.
type toldError struct{ err error }

func (e *toldError) Error() string { return e.err.Error() }
func (e *toldError) Unwrap() error { return e.err }

// start checks and hands off, or says why not.
func start(args, env []string, stdout, stderr io.Writer) error {
	role := roles.Classify(args[1:])
	switch {
	case role == roles.Own:
		return own(args[2:], env, stdout, stderr)
	case !role.Admits():
		// Pass-through: nothing is read, so a debug shell works on a broken image.
		original, err := settings.Original(env)
		if err != nil {
			return &usageError{err}
		}
		return exec.Handoff(original, args, env)
	}
	cfg, err := settings.FromEnv(env)
	if err != nil {
		return &usageError{err}
	}
	log := report.Logger(stderr, cfg.JSON, cfg.Level)
	if cfg.LevelWarning != "" {
		log.Warn().Msg(cfg.LevelWarning)
	}

	sigs := catchSignals()
	v, err := checkHere(cfg, process{role, roles.Args(args[1:])}, sigs.caught)

	name := string(role)
	var sig *admit.Interrupted
	var late *admit.TimeoutError
	switch {
	case errors.As(err, &sig):
		return interrupted(log, sig)
	case errors.As(err, &late):
		msg := timedOut(name, cfg, late)
		fmt.Fprintln(stderr, msg)
		terminate(log, cfg, msg)
		return &toldError{err}
	case err != nil:
		log.Error().Err(err).Msg("internal error during admission")
		return &toldError{err}
	}
	if cfg.JSON {
		report.Findings(log, v.Decision) // a line per finding, for programs
	} else {
		report.FindingLines(log, v.Decision) // grouped when many, for people
	}
	if err := v.Err(); err != nil {
		summary := report.Summary(name, v.Decision)
		fmt.Fprintln(stderr, summary)
		terminate(log, cfg, summary)
		return &toldError{err}
	}
	if v.Facts.Linkage != "" {
		// How linkage was judged, once, beside the admission (a refusal's
		// findings say what they say without it).
		log.Info().Msg(v.Facts.Linkage)
	}
	log.Info().Msg(report.Admitted(name, v.Decision))
	if sig := sigs.pending(); sig != nil {
		return interrupted(log, sig)
	}
	return exec.Handoff(cfg.Original, args, env)
}

// signals are TERM, INT and HUP, caught from before admission until
// execve gives them their default disposition. PID 1 gets no default
// signal handling, so an uncaught TERM would be lost; a signal ignored
// when we started stays ignored (Flink would have inherited it ignored,
// and so it still will).
type signals struct {
	caught chan os.Signal
}

func catchSignals() *signals {
	s := &signals{caught: make(chan os.Signal, 1)}
	var handled []os.Signal
	for _, sig := range []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		if !signal.Ignored(sig) {
			handled = append(handled, sig)
		}
	}
	if len(handled) > 0 { // Notify with no signals would relay every signal
		signal.Notify(s.caught, handled...)
	}
	return s
}

// pending returns a signal caught since admission and not yet acted on.
func (s *signals) pending() *admit.Interrupted {
	select {
	case sig := <-s.caught:
		return &admit.Interrupted{Signal: sig}
	default:
		return nil
	}
}

func interrupted(log zerolog.Logger, sig *admit.Interrupted) error {
	log.Error().Str("signal", sig.Signal.String()).Msgf("received %s during admission; nothing was started", sig.Signal)
	return &toldError{sig}
}

// admissionContext ends at the admission deadline, or with an
// *admit.Interrupted cause when a signal arrives on caught first. stop
// ends it and returns the interruption, if one came; a signal it did not
// take stays on caught.
func admissionContext(timeout time.Duration, caught <-chan os.Signal) (context.Context, func() *admit.Interrupted) {
	parent, interrupt := context.WithCancelCause(context.Background())
	ctx, cancel := context.WithTimeout(parent, timeout)
	watched := make(chan struct{})
	go func() {
		defer close(watched)
		select {
		case s := <-caught:
			interrupt(&admit.Interrupted{Signal: s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() *admit.Interrupted {
		cancel()
		<-watched
		interrupt(nil)
		var sig *admit.Interrupted
		if errors.As(context.Cause(parent), &sig) {
			return sig
		}
		return nil
	}
}

// checkHere checks this host within the admission deadline, stopped by a
// signal on caught (nil: none), even one that arrives as the check
// finishes.
func checkHere(cfg settings.Config, p process, caught <-chan os.Signal) (*admit.Checked, error) {
	return checkWith(admit.Check, cfg, p, caught)
}

// checkWith is checkHere with how to check: admit.Check, or admit.Bake.
func checkWith(how func(context.Context, admit.Request) (*admit.Checked, error), cfg settings.Config, p process, caught <-chan os.Signal) (*admit.Checked, error) {
	r := request(cfg, p)
	if r.Settings.Deep || r.Settings.Baked {
		admit.LimitDeepMemory()
	}
	ctx, stop := admissionContext(cfg.Timeout, caught)
	v, err := how(ctx, r)
	if sig := stop(); sig != nil {
		return nil, sig
	}
	return v, err
}

// timedOut says what was still being read when the deadline passed.
func timedOut(name string, cfg settings.Config, late *admit.TimeoutError) string {
	return fmt.Sprintf("StreamFusion admission of %s did not finish within %s (STREAMFUSION_ADMISSION_TIMEOUT); still reading: %s", name, cfg.Timeout, strings.Join(late.Reading, ", "))
}

// process is the Flink process about to start: its role and its
// arguments, whose dynamic properties (-D) are part of its configuration.
type process struct {
	role roles.Role
	args []string
}

// request is what the entrypoint checks: this host, from "/" (rootfs.Host:
// os.DirFS("/") without its per-file poller calls, each directory looked up
// once), for the process about to start.
func request(cfg settings.Config, p process) admit.Request {
	s := hostSettings(cfg)
	s.Role, s.Args = string(p.role), p.args
	return admit.Request{Root: rootfs.Host(), Settings: s, Progress: &host.Progress{}}
}

func hostSettings(cfg settings.Config) host.Settings {
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

func terminate(log zerolog.Logger, cfg settings.Config, msg string) {
	if err := report.WriteTermination(cfg.TerminationLog, msg); err != nil {
		log.Debug().Err(err).Str("path", cfg.TerminationLog).Msg("termination message not written")
	}
}
