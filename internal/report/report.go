// Package report renders decisions for the people and programs that read
// them: log lines on stderr (text or JSON lines), the one-line summary that
// ends a refusal and goes to Kubernetes' termination-message file, and the
// full report of `streamfusion check`.
package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"
	"syscall"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// MaxTermination is what Kubernetes keeps of a termination message.
const MaxTermination = 4096

// Logger returns the entrypoint's logger on w: plain lines
// "streamfusion: LEVEL message" for text, JSON lines otherwise.
func Logger(w io.Writer, json bool, level zerolog.Level) zerolog.Logger {
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

// Summary is the plain line that ends a refusal, at most MaxTermination
// bytes: every error with its path, message and fix, then where to read
// more. It is what `kubectl describe pod` shows.
func Summary(role string, d *admission.Decision) string {
	errs := d.Errors()
	var b strings.Builder
	fmt.Fprintf(&b, "StreamFusion refused to start %s (%d error(s)): ", role, len(errs))
	for i, f := range errs {
		if i > 0 {
			b.WriteString("; ")
		}
		if f.Path != "" {
			b.WriteString(f.Path + ": ")
		}
		b.WriteString(f.Message)
		b.WriteString(" (fix: " + f.Fix + ")")
	}
	b.WriteString(". Run '/docker-entrypoint.sh streamfusion check' in the image for the full report.")
	return Clip(b.String(), MaxTermination)
}

// Clip cuts s to at most n bytes on a rune boundary, marking the cut.
func Clip(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const more = " [...]"
	cut := n - len(more)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
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
	fmt.Fprintf(&b, "  Flink     %s (line %s, %s)\n", or(r.Flink, "unknown"), or(r.Line, "unknown"), or(string(r.Support), "not supported"))
	fmt.Fprintf(&b, "  Java      %s\n", or(r.JDK, "unknown"))
	if r.JDKFrom != "" {
		fmt.Fprintf(&b, "            from %s\n", r.JDKFrom)
	}
	fmt.Fprintf(&b, "  platform  %s, %s\n", r.Platform, r.Libc)
	fmt.Fprintf(&b, "  lib       %s (%d JARs, %s)\n", r.LibDir, len(r.Classpath), r.Order)
	if len(r.Payloads) > 0 {
		b.WriteString("payloads, in classpath order:\n")
		for _, id := range r.Payloads {
			fmt.Fprintf(&b, "  %-9s %s  %s\n", or(id.Kind, "?"), id, id.Path)
		}
	}
	if len(r.Findings) == 0 {
		b.WriteString("no findings\n")
	}
	for _, f := range r.Findings {
		fmt.Fprintf(&b, "%s [%s] %s%s\n", strings.ToUpper(string(f.Severity)), f.Rule, f.Text(), strict(f))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func or(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
