// Package report renders decisions for the people and programs that read
// them: log lines on stderr (text or JSON lines), the one-line summary that
// ends a refusal and goes to Kubernetes' termination-message file, and the
// full report of `streamfusion check`.
package report

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// MaxTermination is what Kubernetes keeps of a termination message.
const MaxTermination = 4096

// Logger returns the entrypoint's logger on w: plain lines
// "streamfusion: LEVEL message" for text, JSON lines otherwise. level is
// trace, debug, info, warn or error; anything else means info.
func Logger(w io.Writer, json bool, name string) zerolog.Logger {
	level, err := zerolog.ParseLevel(name)
	if err != nil || level == zerolog.NoLevel || level == zerolog.Disabled {
		level = zerolog.InfoLevel
	}
	if json {
		return zerolog.New(w).Level(level).With().Timestamp().Str("logger", "streamfusion").Logger()
	}
	cw := zerolog.ConsoleWriter{Out: w, NoColor: true, PartsOrder: []string{zerolog.LevelFieldName, zerolog.MessageFieldName},
		FormatLevel: func(i any) string {
			s, _ := i.(string)
			return "streamfusion: " + strings.ToUpper(s)
		},
		FieldsExclude: []string{"rule", "path", "found", "required", "fix", "strict"},
	}
	return zerolog.New(cw).Level(level)
}

// Findings logs every finding, errors at error level, warnings at warn.
// Text lines carry the whole message; JSON lines carry its parts as fields.
func Findings(log zerolog.Logger, d *admission.Decision) {
	for _, f := range d.Findings {
		ev := log.Warn()
		if f.Severity == admission.Error {
			ev = log.Error()
		}
		ev.Str("rule", f.Rule).Str("path", f.Path).Str("found", f.Found).Str("required", f.Required).Str("fix", f.Fix)
		if f.Strict {
			ev.Bool("strict", true)
		}
		ev.Msg("[" + f.Rule + "] " + f.Text() + strict(f))
	}
}

// FindingLines logs the findings for people, as Text prints them: a line
// each when they are few, grouped by JAR and library otherwise, each line
// at the level of its group. The JSON log keeps a line per finding
// (Findings).
func FindingLines(log zerolog.Logger, d *admission.Decision) {
	for _, l := range people(d.Findings, ScreenLines-2) { // the summary and one line before
		ev := log.Warn()
		if l.severity == admission.Error {
			ev = log.Error()
		}
		ev.Msg(strings.TrimPrefix(l.text, severityWord(l.severity)+" ")) // the level says it
	}
}

func strict(f admission.Finding) string {
	if f.Strict {
		return " (a warning, refused because STREAMFUSION_STRICT=true)"
	}
	return ""
}

// Admitted is the one line logged before the hand-off.
func Admitted(role string, d *admission.Decision) string {
	var mods []string
	var version string
	for _, id := range d.Payloads {
		if id.Kind == admission.KindLoader {
			version = id.Version
		}
		mods = append(mods, strings.TrimPrefix(id.Module, "streamfusion-"))
	}
	s := fmt.Sprintf("admitted %s: Flink %s (line %s, %s), Java %s, %s %s; StreamFusion %s: %s",
		role, d.Flink, d.Line, d.Support, d.JDK, d.Platform, d.Libc, version, strings.Join(mods, ", "))
	if n := len(d.Warnings()); n > 0 {
		s += fmt.Sprintf("; %d warning(s) above", n)
	}
	return s
}

// MaxStatus is the part of a termination message the Flink Kubernetes
// Operator copies into the FlinkDeployment's status.error: the summary
// names every refused JAR within it.
const MaxStatus = 2048

// Summary is the plain line that ends a refusal and is Kubernetes'
// termination message: every error in one sentence each, then where to
// read more. It stays within MaxTermination bytes, and names every refused
// path within the first MaxStatus bytes, by saying less, never by cutting
// text: the first of these forms that fits is used.
//
//  1. each error in full: "PATH: WHAT: found X, required Y; fix: Z."
//  2. without found and required: "PATH: WHAT; fix: Z."
//  3. only the subject and what: "PATH: WHAT."
//  4. the paths by rule: "RULE: PATH, PATH."
//  5. the paths by rule and directory: "RULE: DIR/{NAME, NAME}."
//  6. counts by rule and directory, naming the files that fit in
//     MaxStatus: "RULE: 60 in DIR/{NAME, NAME, and 52 more}."
func Summary(role string, d *admission.Decision) string {
	errs := d.Errors()
	head := fmt.Sprintf("StreamFusion refused to start %s: %s.", role, count(len(errs), "error"))
	const tail = "Run '/docker-entrypoint.sh streamfusion check' in the image for the full report."
	forms := []func([]admission.Finding) []string{full, withFix, what, byRule, byDir}
	for _, form := range forms {
		s := strings.Join(append(append([]string{head}, form(errs)...), tail), " ")
		if len(s) <= MaxTermination && namesAll(s, errs) {
			return s
		}
	}
	budget := MaxStatus - len(head) - 1
	return Clip(strings.Join(append(append([]string{head}, counted(errs, budget)...), tail), " "), MaxTermination)
}

func count(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// sentence ends s with a full stop.
func sentence(s string) string {
	if strings.HasSuffix(s, ".") {
		return s
	}
	return s + "."
}

func subject(f admission.Finding) string {
	if f.Path == "" {
		return ""
	}
	return f.Path + ": "
}

func full(errs []admission.Finding) []string {
	var out []string
	for _, f := range errs {
		out = append(out, sentence(f.Text()))
	}
	return out
}

func withFix(errs []admission.Finding) []string {
	var out []string
	for _, f := range errs {
		out = append(out, sentence(subject(f)+f.Message+"; fix: "+f.Fix))
	}
	return out
}

func what(errs []admission.Finding) []string {
	var out []string
	for _, f := range errs {
		out = append(out, sentence(subject(f)+f.Message))
	}
	return out
}

// group is one rule's paths, in the order of the findings.
type group struct {
	rule  string
	paths []string
}

func groups(errs []admission.Finding) []group {
	var out []group
	at := map[string]int{}
	for _, f := range errs {
		i, ok := at[f.Rule]
		if !ok {
			i = len(out)
			at[f.Rule] = i
			out = append(out, group{rule: f.Rule})
		}
		if f.Path != "" {
			out[i].paths = append(out[i].paths, f.Path)
		}
	}
	return out
}

func byRule(errs []admission.Finding) []string {
	var out []string
	for _, g := range groups(errs) {
		if len(g.paths) == 0 {
			out = append(out, g.rule+".")
			continue
		}
		out = append(out, g.rule+": "+strings.Join(g.paths, ", ")+".")
	}
	return out
}

// dirs splits paths by directory, in the order of first appearance.
func dirs(paths []string) (order []string, names map[string][]string) {
	names = map[string][]string{}
	for _, p := range paths {
		dir, name := path.Split(p)
		if names[dir] == nil {
			order = append(order, dir)
		}
		names[dir] = append(names[dir], name)
	}
	return order, names
}

func byDir(errs []admission.Finding) []string {
	var out []string
	for _, g := range groups(errs) {
		order, names := dirs(g.paths)
		var parts []string
		for _, dir := range order {
			if len(names[dir]) == 1 {
				parts = append(parts, dir+names[dir][0])
			} else {
				parts = append(parts, dir+"{"+strings.Join(names[dir], ", ")+"}")
			}
		}
		out = append(out, sentence(g.rule+cond(len(parts) > 0, ": ", "")+strings.Join(parts, ", ")))
	}
	return out
}

// counted is the last resort: counts by rule and directory, with as many
// file names as fit in budget bytes.
func counted(errs []admission.Finding, budget int) []string {
	var out []string
	used := 0
	for _, g := range groups(errs) {
		order, names := dirs(g.paths)
		var parts []string
		for _, dir := range order {
			var shown []string
			for _, n := range names[dir] {
				if used+len(n)+2 > budget-len(dir)-len(g.rule)-32 {
					break
				}
				used += len(n) + 2
				shown = append(shown, n)
			}
			if rest := len(names[dir]) - len(shown); rest > 0 {
				shown = append(shown, fmt.Sprintf("and %d more", rest))
			}
			parts = append(parts, fmt.Sprintf("%d in %s{%s}", len(names[dir]), dir, strings.Join(shown, ", ")))
			used += len(dir) + 16
		}
		used += len(g.rule) + 4
		out = append(out, sentence(g.rule+cond(len(parts) > 0, ": ", "")+strings.Join(parts, ", ")))
	}
	return out
}

func cond(ok bool, yes, no string) string {
	if ok {
		return yes
	}
	return no
}

// namesAll reports whether the first MaxStatus bytes of s name every
// error's path, in full or as DIR/{..., NAME, ...}.
func namesAll(s string, errs []admission.Finding) bool {
	status := s[:min(len(s), MaxStatus)]
	for _, f := range errs {
		if f.Path != "" && !Names(status, f.Path) {
			return false
		}
	}
	return true
}

// Names reports whether text names path, in full or inside a
// DIR/{NAME, NAME} group of its directory.
func Names(text, p string) bool {
	if strings.Contains(text, p) {
		return true
	}
	dir, name := path.Split(p)
	for rest := text; ; {
		i := strings.Index(rest, dir+"{")
		if i < 0 {
			return false
		}
		rest = rest[i+len(dir)+1:]
		end := strings.IndexByte(rest, '}')
		if end < 0 {
			return false
		}
		if slices.Contains(strings.Split(rest[:end], ", "), name) {
			return true
		}
	}
}

// Clip cuts s to at most n bytes at a word boundary, marking the cut. The
// summary never needs it; it guards messages of unbounded input (the files
// a late admission was reading).
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = " [...]"
	cut := n - len(more)
	for cut > 0 && s[cut] != ' ' {
		cut--
	}
	if cut == 0 { // one long word: cut on a rune boundary
		cut = n - len(more)
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
	}
	return s[:cut] + more
}

// WriteTermination writes msg to Kubernetes' termination-message file when
// that file exists and can be written; it never creates one. The returned
// error is for logging only: a missing file is not an error.
func WriteTermination(path, msg string) error {
	if path == "" {
		return nil
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_TRUNC|syscall.O_NONBLOCK, 0)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil
		}
		return err
	}
	_, werr := f.WriteString(Clip(msg, MaxTermination))
	return errors.Join(werr, f.Close())
}

// Report is what `streamfusion check --json` prints.
type Report struct {
	Admitted  bool                  `json:"admitted"`
	Flink     string                `json:"flink,omitempty"`
	Line      string                `json:"line,omitempty"`
	Support   admission.Support     `json:"support,omitempty"`
	JDK       string                `json:"jdk,omitempty"`
	JDKFrom   string                `json:"jdkFrom,omitempty"`
	Platform  string                `json:"platform"`
	Libc      string                `json:"libc"`
	LibDir    string                `json:"libDir"`
	Order     string                `json:"classpathOrder"`
	Classpath []string              `json:"classpath"`
	Payloads  []*admission.Identity `json:"payloads"`
	Findings  []admission.Finding   `json:"findings"`
}

// New builds the report of a decision.
func New(f *admission.Facts, d *admission.Decision) Report {
	r := Report{Admitted: d.Admitted(), Flink: d.Flink, Line: d.Line, Support: d.Support, JDK: d.JDK, JDKFrom: d.JDKFrom,
		Platform: d.Platform, Libc: d.Libc, LibDir: f.LibDir, Order: f.Order, Payloads: d.Payloads, Findings: d.Findings,
		Classpath: []string{}}
	for _, j := range f.Classpath {
		r.Classpath = append(r.Classpath, j.Path)
	}
	if r.Payloads == nil {
		r.Payloads = []*admission.Identity{}
	}
	if r.Findings == nil {
		r.Findings = []admission.Finding{}
	}
	return r
}

// JSON writes the report as one indented JSON document.
func (r Report) JSON(w io.Writer) error { return WriteJSON(w, r) }

// WriteJSON writes v as one indented JSON document.
func WriteJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// Text writes the report for people.
func (r Report) Text(w io.Writer) error {
	var b strings.Builder
	verdict := "ADMITTED"
	if !r.Admitted {
		verdict = "REFUSED"
	}
	fmt.Fprintf(&b, "StreamFusion admission: %s\n", verdict)
	fmt.Fprintf(&b, "  Flink     %s (line %s, %s)\n", cmp.Or(r.Flink, "unknown"), cmp.Or(r.Line, "unknown"), cmp.Or(string(r.Support), "not supported"))
	fmt.Fprintf(&b, "  Java      %s\n", cmp.Or(r.JDK, "unknown"))
	if r.JDKFrom != "" {
		fmt.Fprintf(&b, "            from %s\n", r.JDKFrom)
	}
	fmt.Fprintf(&b, "  platform  %s, %s\n", r.Platform, r.Libc)
	fmt.Fprintf(&b, "  lib       %s (%d JARs, %s)\n", r.LibDir, len(r.Classpath), r.Order)
	if len(r.Payloads) > 0 {
		b.WriteString("payloads, in classpath order:\n")
		for _, id := range r.Payloads {
			fmt.Fprintf(&b, "  %-9s %s  %s\n", cmp.Or(id.Kind, "?"), id, id.Path)
		}
	}
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	for _, l := range people(r.Findings, ScreenLines-strings.Count(b.String(), "\n")) {
		b.WriteString(l.text + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
