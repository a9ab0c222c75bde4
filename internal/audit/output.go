package audit

import (
	"encoding/xml"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/judge"
)

// Exit statuses of an audit.
const (
	ExitAdmitted = 0
	// ExitRefused: something would be refused (after the what-if, or
	// today without one).
	ExitRefused = 78
	// ExitIncomplete: the audit could not finish: something could not be
	// read or judged (Report.Unread, unverified rows), and nothing that
	// was judged would be refused.
	ExitIncomplete = 75
)

// Report is the whole audit.
type Report struct {
	// Namespaces audited; empty: all.
	Namespaces []string     `json:"namespaces"`
	WhatIf     *WhatIfShown `json:"whatIf,omitempty"`
	Resources  []Row        `json:"resources"`
	// Unread is what could not be read: never skipped silently.
	Unread  []Unread `json:"unread"`
	Notes   []string `json:"notes,omitempty"`
	Summary Summary  `json:"summary"`
}

// WhatIfShown is the what-if as the report states it.
type WhatIfShown struct {
	Images    []string `json:"imageMap,omitempty"`
	AddJARs   []string `json:"addJars,omitempty"`
	RemoveJAR []string `json:"removeJars,omitempty"`
}

// NewReport assembles the report and its summary.
func NewReport(namespaces []string, w WhatIf, s Snapshot, planUnread []Unread, rows []Row, took time.Duration) *Report {
	r := &Report{Namespaces: append([]string{}, namespaces...), Resources: rows, Notes: s.Notes,
		Unread: append(append([]Unread{}, s.Unread...), planUnread...)}
	if r.Resources == nil {
		r.Resources = []Row{}
	}
	if !w.Empty() {
		ws := &WhatIfShown{RemoveJAR: w.Remove}
		for _, m := range w.Images {
			ws.Images = append(ws.Images, m.Old+"="+m.New)
		}
		for _, j := range w.Add {
			ws.AddJARs = append(ws.AddJARs, j.Name)
		}
		r.WhatIf = ws
	}
	r.Summary = Summary{Resources: len(rows), Took: took}
	for _, row := range rows {
		if row.Today.Verdict == Refused {
			r.Summary.RefusedToday++
		}
		if row.After.Verdict == Refused {
			r.Summary.RefusedAfter++
		}
		if row.Today.Verdict == Unverified || row.After.Verdict == Unverified {
			r.Summary.Unverified++
		}
		if row.Today.Verdict != row.After.Verdict || len(row.Fixed)+len(row.New) > 0 {
			r.Summary.Flipped++
		}
	}
	return r
}

// ExitCode is 78 when something would be refused, else 75 when the audit
// could not finish, else 0.
func (r *Report) ExitCode() int {
	switch {
	case r.Summary.RefusedAfter > 0:
		return ExitRefused
	case len(r.Unread) > 0 || r.Summary.Unverified > 0:
		return ExitIncomplete
	}
	return ExitAdmitted
}

// first is the finding a row's table line shows: the first that flips
// to refused, else the first of the verdict that decides (after, then
// today).
func (row Row) first() *judge.Finding {
	if len(row.New) > 0 {
		return &row.New[0]
	}
	for _, s := range []State{row.After, row.Today} {
		if len(s.Findings) > 0 {
			return &s.Findings[0]
		}
	}
	return nil
}

// maxCell bounds a table cell.
const maxCell = 120

func cell(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxCell {
		return s[:maxCell-3] + "..."
	}
	if s == "" {
		return "-"
	}
	return s
}

// WriteTable writes the report for people: one line a resource, then
// what could not be read, then the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 2, 8, 2, ' ', 0)
	fmt.Fprintln(tw, "NAMESPACE\tRESOURCE\tIMAGES\tTODAY\tAFTER\tFIRST FINDING\tFIX")
	for _, row := range r.Resources {
		var imgs []string
		for _, im := range row.Images {
			s := im.Image
			if im.TagMoved {
				s += " (tag moved)"
			}
			if im.After != "" {
				s += " -> " + im.After
			}
			imgs = appendNew(imgs, s)
		}
		if row.Kind == "FlinkSessionJob" {
			imgs = append([]string{"on " + row.Cluster + ":"}, imgs...)
		}
		name := row.Kind + " " + row.Name
		if row.Kind == "Pods" {
			name = fmt.Sprintf("Pods of %s (%d)", row.Name, row.Pods)
		}
		text, fix := "", ""
		if f := row.first(); f != nil {
			text, fix = "["+f.Rule+"] "+f.Text, f.Fix
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", row.Namespace, name, cell(strings.Join(imgs, " ")),
			strings.ToUpper(row.Today.Verdict), strings.ToUpper(row.After.Verdict), cell(text), cell(fix))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	var b strings.Builder
	for _, row := range r.Resources {
		for _, n := range row.Notes {
			fmt.Fprintf(&b, "note: %s: %s\n", row.ID(), n)
		}
		if r.WhatIf == nil {
			continue
		}
		for _, f := range row.Fixed {
			fmt.Fprintf(&b, "fixed: %s: [%s] %s\n", row.ID(), f.Rule, f.Text)
		}
		for _, f := range row.New {
			fmt.Fprintf(&b, "new:   %s: [%s] %s (fix: %s)\n", row.ID(), f.Rule, f.Text, f.Fix)
		}
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	for _, u := range r.Unread {
		fmt.Fprintf(&b, "NOT READ: %s: %s\n", u.What, u.Error)
	}
	s := r.Summary
	fmt.Fprintf(&b, "StreamFusion audit: %d resource(s); refused today %d, after %d; %d flipped; %d not verified; %d not read; %d image(s) verified, %d job JAR check(s), %d verdict(s) reused; %s\n",
		s.Resources, s.RefusedToday, s.RefusedAfter, s.Flipped, s.Unverified, len(r.Unread), s.ImagesVerified, s.JobJARsChecked, s.VerdictHits, s.Took.Round(time.Millisecond))
	_, err := io.WriteString(w, b.String())
	return err
}

// JUnit XML, as CI systems read it: one test case per resource, failed
// when it would be refused after the what-if (today without one), in
// error when it could not be judged; what could not be read is a test
// case in error of its own.
type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name     string      `xml:"name,attr"`
	Tests    int         `xml:"tests,attr"`
	Failures int         `xml:"failures,attr"`
	Errors   int         `xml:"errors,attr"`
	Time     string      `xml:"time,attr"`
	Cases    []junitCase `xml:"testcase"`
}

type junitCase struct {
	Name      string        `xml:"name,attr"`
	ClassName string        `xml:"classname,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	SystemOut string        `xml:"system-out,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

// WriteJUnit writes the report as JUnit XML.
func (r *Report) WriteJUnit(w io.Writer) error {
	s := junitSuite{Name: "streamfusion audit", Time: fmt.Sprintf("%.3f", r.Summary.Took.Seconds())}
	for _, row := range r.Resources {
		c := junitCase{Name: row.ID(), ClassName: "streamfusion.audit." + row.Namespace}
		var out []string
		if r.WhatIf != nil {
			out = append(out, "today: "+row.Today.Verdict, "after: "+row.After.Verdict)
		}
		for _, n := range row.Notes {
			out = append(out, "note: "+n)
		}
		c.SystemOut = strings.Join(out, "\n")
		switch row.After.Verdict {
		case Refused:
			c.Failure = problem(row, row.After)
			s.Failures++
		case Unverified:
			c.Error = problem(row, row.After)
			s.Errors++
		}
		s.Cases = append(s.Cases, c)
	}
	for _, u := range r.Unread {
		s.Cases = append(s.Cases, junitCase{Name: u.What, ClassName: "streamfusion.audit.unread",
			Error: &junitProblem{Message: "not read: " + u.Error, Type: "unread", Text: u.Error}})
		s.Errors++
	}
	s.Tests = len(s.Cases)
	doc := junitSuites{Name: s.Name, Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: s.Time, Suites: []junitSuite{s}}
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return err
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return err
	}
	_, err := io.WriteString(w, "\n")
	return err
}

func problem(row Row, st State) *junitProblem {
	p := &junitProblem{Type: st.Verdict}
	var lines []string
	findings := st.Findings
	if len(row.New) > 0 {
		findings = append(append([]judge.Finding{}, row.New...), findings...)
	}
	seen := map[string]bool{}
	for _, f := range findings {
		l := fmt.Sprintf("[%s] %s: %s", f.Rule, f.Subject, f.Text)
		if f.Fix != "" {
			l += " (fix: " + f.Fix + ")"
		}
		if !seen[l] {
			seen[l] = true
			lines = append(lines, l)
		}
	}
	if len(findings) > 0 {
		p.Message = "[" + findings[0].Rule + "] " + findings[0].Text
	} else {
		p.Message = st.Verdict
	}
	p.Text = strings.Join(lines, "\n")
	if st.Message != "" {
		p.Text += "\n\nthe webhook would answer: " + st.Message
	}
	return p
}
