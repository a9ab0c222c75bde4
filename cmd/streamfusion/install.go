package main

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

type installOptions struct {
	FlinkHome string
	FlinkLine string
	DryRun    bool
	JSON      bool
	Maven     mavenOptions
}

func newInstall(env []string) *cobra.Command {
	o := &installOptions{}
	c := &cobra.Command{
		Use:   "install --flink-home DIR [--flink-line 2.2|1.18] [--dry-run] [--maven-settings FILE] [--maven-repo URL]... PAYLOAD...",
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

PAYLOAD is a JAR path or Maven coordinates group:artifact:version[:classifier],
resolved from the local Maven repository, then --maven-repo, then the mirrors
and repositories of settings.xml.`,
		Args: atLeastOne("PAYLOAD"),
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, env, args) },
	}
	f := c.Flags()
	f.StringVar(&o.FlinkHome, "flink-home", "", "the Flink distribution to install into (default $FLINK_HOME)")
	f.StringVar(&o.FlinkLine, "flink-line", "", "the Flink line the distribution must be (2.2 or 1.18)")
	f.BoolVar(&o.DryRun, "dry-run", false, "print what would change and write nothing")
	f.BoolVar(&o.JSON, "json", false, "print the plan and the report as JSON")
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

func (o *installOptions) run(c *cobra.Command, env, args []string) error {
	if o.FlinkLine != "" && o.FlinkLine != "2.2" && o.FlinkLine != "1.18" {
		return usagef("--flink-line %q: want 2.2 or 1.18", o.FlinkLine)
	}
	home := o.FlinkHome
	if home == "" {
		if v, ok := lookupEnv(env, "FLINK_HOME"); ok && v != "" {
			home = v
		} else {
			return usagef("install needs --flink-home DIR (or FLINK_HOME)")
		}
	}
	_, s, err := localSettings(env, home)
	if err != nil {
		return err
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
	plan, err := install.Decide(c.Context(), os.DirFS("/"), s, o.FlinkLine, ps)
	var refused *install.Refused
	if err != nil && !errors.As(err, &refused) {
		return err
	}
	out := c.OutOrStdout()
	applied := false
	if err == nil && !o.DryRun {
		if err := install.Apply(plan, "/", nil); err != nil {
			return fmt.Errorf("install into %s: %w (lib is as it was)", plan.LibDir, err)
		}
		applied = true
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
