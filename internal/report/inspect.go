package report

import (
	"fmt"
	"io"
	"io/fs"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Inspected is one JAR as `inspect --json` prints it, in the entrypoint's
// own command and in the host CLI alike.
type Inspected struct {
	Path     string              `json:"path"`
	Error    string              `json:"error,omitempty"`
	Identity *admission.Identity `json:"identity,omitempty"`
	Embedded *admission.Identity `json:"embeddedCore,omitempty"`
	Entries  int                 `json:"entries"`
}

// Shown is a JAR to inspect: its absolute path on the machine, and how to
// show it (what the user named it by).
type Shown struct{ Path, As string }

// InspectAll inspects each JAR in root (the machine's "/") and writes the
// result, as JSON or a line each. bad is set when one would fail admission.
func InspectAll(w io.Writer, root fs.FS, jars []Shown, asJSON bool) (bad bool, err error) {
	out := make([]Inspected, 0, len(jars))
	for _, j := range jars {
		in, b := Inspect(root, strings.TrimPrefix(j.Path, "/"), j.As)
		bad = bad || b
		out = append(out, in)
	}
	if asJSON {
		return bad, WriteJSON(w, out)
	}
	for _, in := range out {
		if _, err := fmt.Fprintln(w, in.Text()); err != nil {
			return bad, err
		}
	}
	return bad, nil
}

// Inspect reads the JAR at name (a name in fsys) and returns what it says.
// bad is set when the JAR, its embedded core or its identity would fail
// admission.
func Inspect(fsys fs.FS, name, shown string) (in Inspected, bad bool) {
	j := payload.Open(fsys, name, payload.Options{Properties: true})
	in = Inspected{Path: shown, Entries: j.Entries, Identity: admission.Identify(j)}
	if j.Err != nil {
		in.Error = j.Err.Error()
		bad = true
	}
	if j.Nested != nil {
		in.Embedded = admission.Identify(j.Nested)
		if j.Nested.Err != nil {
			in.Error = "embedded core: " + j.Nested.Err.Error()
			bad = true
		}
	}
	if in.Identity != nil && !in.Identity.Valid() {
		bad = true
	}
	return in, bad
}

// Text describes the JAR for people.
func (in Inspected) Text() string {
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
	b.WriteString(IdentityLine(in.Identity))
	if in.Embedded != nil {
		b.WriteString("\n  embedded core: " + IdentityLine(in.Embedded))
	}
	if in.Error != "" {
		b.WriteString("\n  error: " + in.Error)
	}
	return b.String()
}

// IdentityLine is a payload's identity on one line, with its problems on
// the lines after.
func IdentityLine(id *admission.Identity) string {
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

// Rules writes a rule catalogue, as a table for people or as Markdown.
func Rules(w io.Writer, markdown bool, rules []admission.Rule) error {
	var b strings.Builder
	if markdown {
		b.WriteString("| rule | severity | tier | what it refuses or warns about |\n|---|---|---|---|\n")
	}
	for _, r := range rules {
		if markdown {
			fmt.Fprintf(&b, "| `%s` | %s | %s | %s |\n", r.ID, r.Severity, r.Tier, r.Doc)
		} else {
			fmt.Fprintf(&b, "%-30s %-8s %-10s %s\n", r.ID, r.Severity, r.Tier, r.Doc)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}
