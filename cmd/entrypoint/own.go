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
	"github.com/streamfusion/image-entrypoint/internal/payload"
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
		fmt.Fprintf(stdout, "streamfusion-entrypoint %s\n", version)
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

// inspected is one JAR as `inspect --json` prints it.
type inspected struct {
	Path     string              `json:"path"`
	Error    string              `json:"error,omitempty"`
	Identity *admission.Identity `json:"identity,omitempty"`
	Embedded *admission.Identity `json:"embeddedCore,omitempty"`
	Entries  int                 `json:"entries"`
}

func inspect(paths []string, asJSON bool, stdout, stderr io.Writer) int {
	code := 0
	root := os.DirFS("/")
	var out []inspected
	for _, p := range paths {
		abs, err := filepath.Abs(p)
		if err != nil {
			fmt.Fprintln(stderr, "streamfusion: ERROR", err)
			return exitUsage
		}
		j := payload.Open(root, strings.TrimPrefix(abs, "/"), payload.Options{Properties: true})
		in := inspected{Path: abs, Entries: j.Entries, Identity: admission.Identify(j)}
		if j.Err != nil {
			in.Error = j.Err.Error()
			code = exitRefused
		}
		if j.Nested != nil {
			in.Embedded = admission.Identify(j.Nested)
			if j.Nested.Err != nil {
				in.Error = "embedded core: " + j.Nested.Err.Error()
				code = exitRefused
			}
		}
		if in.Identity != nil && !in.Identity.Valid() {
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
		fmt.Fprintln(stdout, describe(in))
	}
	return code
}

func describe(in inspected) string {
	var b strings.Builder
	b.WriteString(in.Path + ": ")
	switch {
	case in.Error != "" && in.Identity == nil:
		b.WriteString("cannot read: " + in.Error)
		return b.String()
	case in.Identity == nil:
		fmt.Fprintf(&b, "not StreamFusion content (%d entries)", in.Entries)
		return b.String()
	}
	b.WriteString(identityLine(in.Identity))
	if in.Embedded != nil {
		b.WriteString("\n  embedded core: " + identityLine(in.Embedded))
	}
	if in.Error != "" {
		b.WriteString("\n  error: " + in.Error)
	}
	return b.String()
}

func identityLine(id *admission.Identity) string {
	if !id.Marked {
		return "UNVERSIONED StreamFusion content (" + id.Evidence + ")"
	}
	s := fmt.Sprintf("%s %s, artifact %s, Java %d", id.Kind, id, id.Artifact, id.JavaNeeded())
	if id.BuildID != "" {
		s += ", build " + id.BuildID
	}
	if len(id.Platforms) > 0 {
		s += ", native " + strings.Join(id.Platforms, " ")
	}
	for _, p := range id.Problems {
		s += "\n  malformed: " + p
	}
	for _, p := range id.Incoherent {
		s += "\n  incoherent: " + p
	}
	return s
}

func rules(markdown bool, stdout io.Writer) int {
	var b strings.Builder
	if markdown {
		b.WriteString("| rule | severity | what it refuses or warns about |\n|---|---|---|\n")
	}
	for _, r := range admission.Catalogue() {
		if markdown {
			fmt.Fprintf(&b, "| `%s` | %s | %s |\n", r.ID, r.Severity, r.Doc)
		} else {
			fmt.Fprintf(&b, "%-28s %-8s %s\n", r.ID, r.Severity, r.Doc)
		}
	}
	_, err := io.WriteString(stdout, b.String())
	if err != nil {
		return exitInternal
	}
	return 0
}
