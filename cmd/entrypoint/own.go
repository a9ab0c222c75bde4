package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

const usage = `usage: /docker-entrypoint.sh streamfusion COMMAND

Commands:
  check [--json] [--write-verdict]
                         check this image as a Flink start would, shadowing and linkage included;
                         exit 0 (admitted) or 78 (refused). --write-verdict: when admitted, write
                         lib's deep verdict (lib/.streamfusion-deep-verdict) covering lib and usrlib
                         as they are, for every start to apply: a Dockerfile RUN step after the
                         COPY of a job JAR into usrlib
  inspect [--json] JAR...  print the StreamFusion identity of each JAR
  rules [--markdown]     print the rule catalogue
  version                print the entrypoint's version
`

// own runs the entrypoint's own commands: `streamfusion <command> ...`.
func own(args, env []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return &toldError{&usageError{errors.New("no command")}}
	}
	fs := flag.NewFlagSet("streamfusion "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	markdown := fs.Bool("markdown", false, "print Markdown")
	writeVerdict := fs.Bool("write-verdict", false, "with check: when admitted, write lib's deep verdict for every start to apply")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return nil
		}
		return &usageError{fmt.Errorf("streamfusion %s: %w", args[0], err)}
	}
	switch args[0] {
	case "check":
		return check(env, *asJSON, *writeVerdict, stdout, stderr)
	case "inspect":
		if fs.NArg() == 0 {
			return &usageError{errors.New("inspect needs at least one JAR: streamfusion inspect [--json] JAR")}
		}
		return inspect(fs.Args(), *asJSON, stdout)
	case "rules":
		return report.Rules(stdout, *markdown, admission.Catalogue())
	case "version":
		fmt.Fprintf(stdout, "streamfusion-entrypoint %s (%s)\n", version, stamp)
		return nil
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	}
	fmt.Fprintf(stderr, "streamfusion: unknown command %q\n%s", args[0], usage)
	return &toldError{&usageError{fmt.Errorf("unknown command %q", args[0])}}
}

// check prints the report of the check a start would make; with
// writeVerdict, an admitted check writes lib's deep verdict (admit.Bake).
func check(env []string, asJSON, writeVerdict bool, stdout, stderr io.Writer) error {
	cfg, err := settings.FromEnv(env)
	if err != nil {
		return &usageError{err}
	}
	cfg.Linkage = true // the full report: shadowing and linkage too, whatever STREAMFUSION_LINKAGE says
	how := admit.Check
	if writeVerdict {
		how = admit.Bake
	}
	v, err := checkWith(how, cfg, process{}, nil) // no signals caught: an interactive command
	var late *admit.TimeoutError
	if errors.As(err, &late) {
		fmt.Fprintln(stderr, "streamfusion: ERROR", timedOut("check", cfg, late))
		return &toldError{err}
	}
	if err != nil {
		return err
	}
	r := report.New(v.Facts, v.Decision)
	if asJSON {
		err = r.JSON(stdout)
	} else {
		err = r.Text(stdout)
	}
	if err != nil {
		return err
	}
	return told(v.Err())
}

// told marks err, if any, as already on the output.
func told(err error) error {
	if err == nil {
		return nil
	}
	return &toldError{err}
}

func inspect(paths []string, asJSON bool, stdout io.Writer) error {
	jars := make([]report.Shown, 0, len(paths))
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			return &usageError{err}
		}
		jars = append(jars, report.Shown{Path: abs, As: abs})
	}
	bad, err := report.InspectAll(stdout, os.DirFS("/"), jars, asJSON)
	if err != nil || !bad {
		return err
	}
	return &toldError{admit.ErrRefused}
}
