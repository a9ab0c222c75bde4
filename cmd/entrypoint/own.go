package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/config"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

const usage = `usage: /docker-entrypoint.sh streamfusion COMMAND

Commands:
  check [--json]         check this image as a Flink start would; exit 0 (admitted) or 78 (refused)
  inspect [--json] JAR...  print the StreamFusion identity of each JAR
  rules [--markdown]     print the rule catalogue
  version                print the entrypoint's version
`

// own runs the entrypoint's own commands: `streamfusion <command> ...`.
func own(args, env []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	fs := flag.NewFlagSet("streamfusion "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	markdown := fs.Bool("markdown", false, "print Markdown")
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, usage)
			return 0
		}
		fmt.Fprintf(stderr, "streamfusion %s: %v\n", args[0], err)
		return exitUsage
	}
	switch args[0] {
	case "check":
		return check(env, *asJSON, stdout, stderr)
	case "inspect":
		if fs.NArg() == 0 {
			fmt.Fprintln(stderr, "usage: streamfusion inspect [--json] JAR...")
			return exitUsage
		}
		return inspect(fs.Args(), *asJSON, stdout, stderr)
	case "rules":
		return rules(*markdown, stdout)
	case "version":
		fmt.Fprintf(stdout, "streamfusion-entrypoint %s (%s)\n", version, stamp)
		return 0
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "streamfusion: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

func check(env []string, asJSON bool, stdout, stderr io.Writer) int {
	cfg, err := config.FromEnv(env)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion: ERROR", strings.ReplaceAll(err.Error(), "\n", "; "))
		return exitUsage
	}
	facts, d, err := decide(cfg, nil)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion: ERROR", err)
		var to *timeoutError
		if errors.As(err, &to) {
			fmt.Fprintln(stderr, "still reading:", strings.Join(to.reading, ", "))
			return exitTimeout
		}
		return exitInternal
	}
	r := report.New(facts, d)
	if asJSON {
		err = r.JSON(stdout)
	} else {
		err = r.Text(stdout)
	}
	if err != nil {
		return exitInternal
	}
	if !d.Admitted() {
		return exitRefused
	}
	return 0
}

func inspect(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	code := 0
	root := os.DirFS("/")
	var out []report.Inspected
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(stderr, "streamfusion: ERROR", err)
			return exitUsage
		}
		in, bad := report.Inspect(root, strings.TrimPrefix(abs, "/"), abs)
		if bad {
			code = exitRefused
		}
		out = append(out, in)
	}
	if asJSON {
		if err := report.WriteJSON(stdout, out); err != nil {
			return exitInternal
		}
		return code
	}
	for _, in := range out {
		fmt.Fprintln(stdout, in.Text())
	}
	return code
}

func rules(markdown bool, stdout io.Writer) int {
	if err := report.Rules(stdout, markdown, admission.Catalogue()); err != nil {
		return exitInternal
	}
	return 0
}
