package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

type installOptions struct {
	FlinkHome   string
	FlinkLine   string
	DryRun      bool
	JSON        bool
	Recover     bool
	LockTimeout time.Duration
	Maven       mavenOptions
}

func newInstall(env []string) *cobra.Command {
	o := &installOptions{}
	c := &cobra.Command{
		Use:   "install --flink-home DIR [--flink-line 2.2|1.18] [--dry-run] [--lock-timeout 30s] [--maven-settings FILE] [--maven-repo URL]... PAYLOAD... | install --recover --flink-home DIR",
		Short: "Install StreamFusion payloads into a Flink distribution's lib",
		Long: `install puts StreamFusion payloads into $FLINK_HOME/lib under their
documented names (loader 00-streamfusion-loader.jar, core streamfusion-core.jar,
Paimon's module 01-streamfusion-paimon.jar, other extensions
streamfusion-<name>.jar), replacing the earlier payloads of the same modules
whatever their file names.

Before writing anything it checks the distribution (flink-dist, planner, JDK,
platform), --flink-line, every payload's manifest and lib as it would be,
with the entrypoint's full rule set; if Flink would be refused it writes
nothing and exits 78 with the report. The install is all or nothing: on any
failure lib is left as it was.

Installs into one lib take turns: each holds an flock on the lib directory
while it plans and applies; another waits up to --lock-timeout, then exits 1
naming the holder's pid and start time. The lock of a process that died is
free. An install killed half way (or cut by a power loss) leaves a journal
in lib; until it is recovered, check and the entrypoint refuse lib
(install-interrupted). The next install recovers it first, and
--recover does only that: the interrupted install is completed when every
new file was in place, rolled back otherwise.

PAYLOAD is a JAR path or Maven coordinates group:artifact:version[:classifier],
resolved from the local Maven repository, then --maven-repo, then the mirrors
and repositories of settings.xml.`,
		Args: func(c *cobra.Command, args []string) error {
			if o.Recover {
				if len(args) > 0 {
					return usagef("install --recover takes no PAYLOAD")
				}
				return nil
			}
			return atLeastOne("PAYLOAD")(c, args)
		},
		PreRun: func(*cobra.Command, []string) { admit.LimitDeepMemory() }, // lib checked deep, once
		RunE:   func(c *cobra.Command, args []string) error { return o.run(c, env, args) },
	}
	f := c.Flags()
	f.StringVar(&o.FlinkHome, "flink-home", "", "the Flink distribution to install into (default $FLINK_HOME)")
	f.StringVar(&o.FlinkLine, "flink-line", "", "the Flink line the distribution must be (2.2 or 1.18)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would change and write nothing")
	f.BoolVar(&o.JSON, "json", false, "print the plan and the report as JSON")
	f.BoolVar(&o.Recover, "recover", false, "only complete or roll back an install that did not finish, then exit")
	f.DurationVar(&o.LockTimeout, "lock-timeout", 30*time.Second, "how long to wait for another install into the same lib")
	o.Maven.bind(c)
	return c
}

// installed is what `install --json` prints.
type installed struct {
	LibDir  string           `json:"libDir"`
	DryRun  bool             `json:"dryRun"`
	Applied bool             `json:"applied"`
	Changes []install.Change `json:"changes"`
	Report  report.Report    `json:"report"`
}

// run is the install command. It is long because it checks its flags,
// reads the payloads named by path or coordinates, plans, applies or
// recovers under lib's lock and reports, in the order they run, each step
// a call.
func (o *installOptions) run(c *cobra.Command, env, args []string) error {
	if o.FlinkLine != "" && o.FlinkLine != "2.2" && o.FlinkLine != "1.18" {
		return usagef("--flink-line %q: want 2.2 or 1.18", o.FlinkLine)
	}
	if o.LockTimeout < 0 {
		return usagef("--lock-timeout %s: want a duration of zero or more", o.LockTimeout)
	}
	if o.FlinkHome == "" {
		if v, ok := lookupEnv(env, "FLINK_HOME"); !ok || v == "" {
			return usagef("install needs --flink-home DIR (or FLINK_HOME)")
		}
	}
	_, s, err := localSettings(env, o.FlinkHome)
	if err != nil {
		return err
	}
	lib := filepath.FromSlash(s.LibDir)
	if o.Recover {
		unlock, err := o.lock(c, lib, false)
		if err != nil {
			return err
		}
		defer unlock()
		r, err := install.Recover(lib, fileOps())
		if err != nil {
			return fmt.Errorf("recover the install into %s: %w", lib, err)
		}
		fmt.Fprintf(c.OutOrStdout(), "%s: %s\n", lib, r)
		if r.Outcome == install.Completed {
			return recoveredVerdict(c, s)
		}
		return nil // lib as before: its verdict, if any, describes it again
	}
	rs, err := o.Maven.resolveAll(c, env, "", args)
	if err != nil {
		return err
	}
	if err := sameNames("", rs); err != nil {
		return err
	}
	var ps []install.Payload
	for _, r := range rs {
		ps = append(ps, install.Payload{Source: r.Arg, Data: r.Data})
	}
	// The lock covers plan and apply: a plan made on a lib another install
	// is changing would judge a state that is about to go.
	unlock, err := o.lock(c, lib, o.DryRun)
	if err != nil {
		return err
	}
	defer unlock()
	if !o.DryRun { // a dry run writes nothing: an interrupted install refuses its plan instead
		r, err := install.Recover(lib, fileOps())
		if err != nil {
			return fmt.Errorf("recover the interrupted install into %s first: %w", lib, err)
		}
		if r.Outcome != install.Nothing {
			fmt.Fprintf(c.ErrOrStderr(), "streamfusion: an earlier install into %s had not finished: %s\n", lib, r)
		}
	}
	plan, err := install.Decide(c.Context(), os.DirFS("/"), s, o.FlinkLine, ps)
	var refused *install.Refused
	if err != nil && !errors.As(err, &refused) {
		return err
	}
	out := c.OutOrStdout()
	applied := false
	if err == nil && !o.DryRun {
		if err := install.Apply(plan, "/", fileOps()); err != nil {
			if errors.Is(err, install.ErrUnfinished) {
				return fmt.Errorf("install into %s: %w", plan.LibDir, err)
			}
			return fmt.Errorf("install into %s: %w (lib is as it was)", plan.LibDir, err)
		}
		applied = true
		if err := writeVerdict(plan); err != nil {
			return err
		}
	}
	r := report.New(plan.Facts, plan.Decision)
	if o.JSON {
		if e := report.WriteJSON(out, installed{plan.LibDir, o.DryRun, applied, plan.Changes, r}); e != nil {
			return e
		}
	} else {
		writePlan(out, plan, refused != nil, o.DryRun)
		if refused != nil {
			if e := r.Text(out); e != nil {
				return e
			}
		} else {
			for _, f := range plan.Decision.Warnings() {
				fmt.Fprintf(out, "WARNING [%s] %s\n", f.Rule, f.Text())
			}
		}
	}
	if refused != nil {
		fmt.Fprintln(c.ErrOrStderr(), "streamfusion:", refused)
		return &reportedError{refused}
	}
	return nil
}

// fileOps are the file operations of install: nil, the real ones. Tests
// of a process killed half way put their fault hooks here
// (faults_test.go); the shipped binary holds no such code.
var fileOps = func() install.FileOps { return nil }

// lock takes the lib's install lock (shared for a dry run), saying on
// stderr whom it waits for. A lib that does not exist is not locked: the
// plan refuses it (host-lib) and nothing is written.
func (o *installOptions) lock(c *cobra.Command, lib string, shared bool) (func(), error) {
	l, err := install.LockLib(c.Context(), lib, shared, o.LockTimeout, func(h *install.Holder) {
		fmt.Fprintf(c.ErrOrStderr(), "streamfusion: %s is locked by another install (%s); waiting up to %s (--lock-timeout)\n", lib, h, o.LockTimeout)
	})
	if errors.Is(err, os.ErrNotExist) && !o.Recover {
		return func() {}, nil
	}
	if err != nil {
		return nil, err
	}
	return func() { _ = l.Unlock() }, nil
}

func writePlan(w io.Writer, p *install.Plan, refused, dryRun bool) {
	switch {
	case refused:
		fmt.Fprintf(w, "would install into %s, but it would not start (nothing written):\n", p.LibDir)
	case dryRun:
		fmt.Fprintf(w, "would install into %s (dry run, nothing written):\n", p.LibDir)
	default:
		fmt.Fprintf(w, "installed into %s:\n", p.LibDir)
	}
	for _, ch := range p.Changes {
		switch ch.Op {
		case install.OpRemove:
			fmt.Fprintf(w, "  %-8s %-32s %s\n", ch.Op, ch.Name, describeID(ch.Old))
		case install.OpReplace:
			fmt.Fprintf(w, "  %-8s %-32s %s from %s (was %s)\n", ch.Op, ch.Name, describeID(ch.Identity), ch.Source, describeID(ch.Old))
		default:
			fmt.Fprintf(w, "  %-8s %-32s %s from %s\n", ch.Op, ch.Name, describeID(ch.Identity), ch.Source)
		}
	}
}

// recoveredVerdict gives the lib a completed recovery left its deep
// verdict, as the uninterrupted install would have: the earlier one
// describes the lib before the install, so every start would otherwise
// check linkage in full. A lib the deep check refuses keeps none.
func recoveredVerdict(c *cobra.Command, s host.Settings) error {
	v, err := deepCheck(c.Context(), s, true)
	if err == nil && v.Err() == nil {
		return nil
	}
	file := filepath.Join(s.LibDir, host.VerdictFile)
	if rmErr := os.Remove(file); rmErr != nil && !errors.Is(rmErr, os.ErrNotExist) {
		return fmt.Errorf("remove the deep verdict %s of lib before the install: %w", file, rmErr)
	}
	if err == nil {
		err = v.Err()
	}
	fmt.Fprintf(c.ErrOrStderr(), "streamfusion: lib %s is recovered, but its deep verdict was not written (%v); each start checks linkage in full until `streamfusion check --write-verdict` writes it\n", s.LibDir, err)
	return nil
}

// writeVerdict writes the deep verdict of the installed lib beside it,
// for the entrypoint to apply at every start; without one (it could not
// be made), an earlier install's goes, so no start compares lib with it.
func writeVerdict(p *install.Plan) error {
	file := filepath.Join(p.LibDir, host.VerdictFile)
	if p.VerdictErr != nil || p.Verdict == nil {
		if err := os.Remove(file); err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("lib %s is installed; remove its earlier deep verdict %s: %w", p.LibDir, file, err)
		}
		return nil
	}
	if err := baked.WriteFile(file, p.Verdict); err != nil {
		return fmt.Errorf("lib %s is installed, its deep verdict not written (each start checks linkage in full until it is): %w", p.LibDir, err)
	}
	return nil
}
