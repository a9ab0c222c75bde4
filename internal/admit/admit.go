// Package admit is the one way from settings to a verdict. Check gathers the
// facts of a root file system (host.Gather), decides on them
// (admission.Decide) and adds the findings of the caller's own rules, within
// the caller's context. The entrypoint's start and its `check`, and the host
// CLI's check, verify, bake and install all call Check (Bake: Check that
// also writes lib's deep verdict); nothing else puts Gather and Decide
// together.
//
// Its outcomes are plain data and typed errors: a Checked, ErrRefused for a
// check that refuses, *TimeoutError when the deadline passed, *Interrupted
// when the caller stopped it for a signal. It does not render (package
// report does) and does not choose exit statuses: each binary maps these
// error types to its statuses once, in main.
package admit

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"syscall"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/host"
)

// Request is what to check.
type Request struct {
	Root     fs.FS // the file system the settings' absolute paths are in
	Settings host.Settings
	// Progress, when set, records the files being read; a *TimeoutError
	// names them.
	Progress *host.Progress
	// Rules are the caller's own checks (the image guard, install's
	// arguments), judged after the entrypoint's rules; their findings come
	// first in the decision.
	Rules []Rule
}

// Rule is a caller's check on what was gathered and decided.
type Rule func(*admission.Facts, *admission.Decision) []admission.Finding

// Checked is what one check gathered and what it decided on it (the
// Decision, with its Facts).
type Checked struct {
	Facts    *admission.Facts
	Decision *admission.Decision
}

// Err is nil for a check that admits, ErrRefused for one that refuses.
func (v *Checked) Err() error {
	if v.Decision.Admitted() {
		return nil
	}
	return ErrRefused
}

// ErrRefused is a verdict that refuses the start.
var ErrRefused = errors.New("refused")

// TimeoutError is a check that did not finish before its context's deadline.
type TimeoutError struct {
	Reading []string // the files being read when it passed; "(between files)" for none
}

func (e *TimeoutError) Error() string { return context.DeadlineExceeded.Error() }
func (e *TimeoutError) Unwrap() error { return context.DeadlineExceeded }

// Interrupted is a check stopped for a signal: a caller cancels the
// context with it as the cause (context.WithCancelCause).
type Interrupted struct{ Signal os.Signal }

func (e *Interrupted) Error() string { return "received " + e.Signal.String() }

// Check gathers and decides. The verdict comes with a nil error, whether it
// admits or refuses (Checked.Err tells). When ctx ends first, or as the
// check finishes, there is no verdict: Check returns at once, even with a read blocked (a FIFO named *.jar, a hung network
// file system): with the context's cause if that is an *Interrupted, a
// *TimeoutError for a deadline, ctx.Err() otherwise.
func Check(ctx context.Context, r Request) (*Checked, error) {
	type result struct {
		v   *Checked
		err error
	}
	done := make(chan result, 1)
	go func() {
		facts, err := host.Gather(ctx, r.Root, r.Settings, r.Progress)
		if err != nil {
			done <- result{err: err}
			return
		}
		d := admission.Decide(facts)
		var own []admission.Finding
		for _, rule := range r.Rules {
			own = append(own, rule(facts, d)...)
		}
		d.Findings = append(own, d.Findings...)
		facts.Deep.Close() // the class indexes are read: release their JARs
		done <- result{v: &Checked{Facts: facts, Decision: d}}
	}()
	select {
	case res := <-done:
		if ctx.Err() != nil || pastDeadline(ctx) { // ended as the check finished: not a verdict
			return nil, stopped(ctx, r.Progress)
		}
		return res.v, res.err
	case <-ctx.Done():
		return nil, stopped(ctx, r.Progress)
	}
}

// DeepMemoryLimit is the soft memory limit of a program that runs one
// check reading class files (host.Settings.Deep, or Baked: a baked
// verdict judges new usrlib JARs' classes): the parsed classes of a
// 100 MB job JAR are ~120 MB live, and the garbage collector's default
// lets the heap grow to twice that (docs/history/performance.md).
const DeepMemoryLimit = 200 << 20

// LimitDeepMemory sets DeepMemoryLimit as the process's soft memory limit
// unless one is set (GOMEMLIMIT, or an earlier call). The program decides,
// not Check: the entrypoint and the CLI's one-check commands call it; a
// server that keeps images' lib and verdicts across checks (the webhook,
// audit) sets its limit from its container's, as its kept heap alone may
// pass 200 MiB and the collector would then run without pause.
func LimitDeepMemory() {
	if debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(DeepMemoryLimit)
	}
}

// pastDeadline says whether ctx's deadline has passed by the clock: a
// process stopped (SIGSTOP, a frozen cgroup) past its deadline may finish
// its check on resuming before the context's timer has run and set Err.
func pastDeadline(ctx context.Context) bool {
	dl, ok := ctx.Deadline()
	return ok && !time.Now().Before(dl)
}

// stopped says why ctx ended.
func stopped(ctx context.Context, p *host.Progress) error {
	var sig *Interrupted
	if cause := context.Cause(ctx); errors.As(cause, &sig) {
		return sig
	}
	if !errors.Is(ctx.Err(), context.DeadlineExceeded) && !pastDeadline(ctx) {
		return ctx.Err()
	}
	reading := p.Reading()
	if len(reading) == 0 {
		reading = []string{"(between files)"}
	}
	return &TimeoutError{Reading: reading}
}

// Bake is Check with shadowing and linkage (Settings.Deep) that, when the
// verdict admits, writes lib's deep verdict and class index into lib
// (host.VerdictFile, internal/baked) for every start to apply: lib and
// usrlib as they are now, judged once. A verdict that refuses writes
// nothing.
func Bake(ctx context.Context, r Request) (*Checked, error) {
	r.Settings.Deep = true
	var verdict []byte
	var verdictErr error
	r.Rules = append(slices.Clone(r.Rules), func(f *admission.Facts, d *admission.Decision) []admission.Finding {
		verdict, verdictErr = baked.Build(f, d) // while the archives are open
		return nil
	})
	v, err := Check(ctx, r)
	if err != nil || v.Err() != nil {
		return v, err
	}
	if verdictErr != nil {
		return nil, fmt.Errorf("build the deep verdict: %w", verdictErr)
	}
	file := filepath.Join(r.Settings.LibDir, host.VerdictFile)
	if err := baked.WriteFile(file, verdict); err != nil {
		if errors.Is(err, fs.ErrPermission) || errors.Is(err, syscall.EROFS) {
			return nil, fmt.Errorf("the check admits, but its deep verdict cannot be written: %w; required: a lib this user (uid %d) can write; "+
				"fix: run the step as lib's owner (in a Dockerfile: USER root before the RUN, the image's user after it)", err, os.Getuid())
		}
		return nil, fmt.Errorf("write the deep verdict %s: %w", file, err)
	}
	return v, nil
}
