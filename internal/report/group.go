package report

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// FewFindings is the most findings the people's report prints one line
// each; above it, findings are grouped (Groups) so that the report fits a
// screen whatever the count. --json always carries every finding.
const FewFindings = 12

// Group is findings of one subject (a JAR, or lib) that one sentence and
// one fix describe: the same severity, rule and library.
type Group struct {
	Subject  string             // the findings' path ("" for host facts)
	Severity admission.Severity //
	Rule     string
	// Library is the root package (org.apache.calcite) of the classes or
	// members a linkage or shadowing group is about; "" for other rules.
	Library string
	// Flink is set when Library is Flink's own API (org.apache.flink, not
	// its relocated org.apache.flink.shaded libraries).
	Flink bool
	// Usual marks linkage-class warnings about a library that nothing on
	// the classpath provides and that only code the JAR bundles (not its
	// Flink-facing classes) uses: optional dependencies the JVM loads only
	// when a feature that needs them runs, the ordinary state of a fat
	// connector.
	Usual    bool
	Findings []admission.Finding
}

// Subject is one path's groups, the groups that need attention first.
type Subject struct {
	Path     string
	Errors   int
	Warnings int
	Groups   []Group
}

// Groups sorts findings by subject (in the order of their first finding,
// subjects with errors first) and, within a subject, by severity, rule and
// library. Every finding is in exactly one group.
func Groups(findings []admission.Finding) []Subject {
	var subjects []Subject
	at := map[string]int{}
	type key struct {
		sev           admission.Severity
		rule, library string
		usual         bool
	}
	groupAt := map[string]map[key]int{}
	for _, f := range findings {
		i, ok := at[f.Path]
		if !ok {
			i = len(subjects)
			at[f.Path] = i
			subjects = append(subjects, Subject{Path: f.Path})
			groupAt[f.Path] = map[key]int{}
		}
		s := &subjects[i]
		if f.Severity == admission.Error {
			s.Errors++
		} else {
			s.Warnings++
		}
		lib, flink := library(f)
		k := key{f.Severity, f.Rule, lib, usual(f, lib, flink)}
		g, ok := groupAt[f.Path][k]
		if !ok {
			g = len(s.Groups)
			groupAt[f.Path][k] = g
			s.Groups = append(s.Groups, Group{Subject: f.Path, Severity: f.Severity, Rule: f.Rule, Library: lib, Flink: flink, Usual: k.usual})
		}
		s.Groups[g].Findings = append(s.Groups[g].Findings, f)
	}
	for i := range subjects {
		slices.SortStableFunc(subjects[i].Groups, func(a, b Group) int {
			return cmp.Or(rank(a)-rank(b), len(b.Findings)-len(a.Findings))
		})
	}
	slices.SortStableFunc(subjects, func(a, b Subject) int { return min(b.Errors, 1) - min(a.Errors, 1) })
	return subjects
}

// rank orders a subject's groups: errors, then warnings that need a look,
// then the usual ones.
func rank(g Group) int {
	switch {
	case g.Severity == admission.Error:
		return 0
	case !g.Usual:
		return 1
	}
	return 2
}

// library is the root package of the class a JVM-level finding is about:
// the referenced class of a linkage finding, the hidden classes of a
// shadowing one. Reversed domains keep two segments (io.netty), three
// under the umbrella organisations that host many libraries
// (org.apache.calcite, com.google.protobuf).
func library(f admission.Finding) (root string, flink bool) {
	if f.Symbol == nil || f.Symbol.Owner == "" || f.Rule == "bytecode-version" {
		return "", false
	}
	owner := f.Symbol.Owner
	if flinkAPI(owner) {
		return "org.apache.flink", true
	}
	parts := strings.Split(owner, "/")
	parts = parts[:len(parts)-1] // the package
	n := 2
	if len(parts) > 2 && umbrella[parts[1]] {
		n = 3
	}
	if i := slices.Index(parts, "shaded"); i >= 0 {
		n = i + 2 // a relocated library: up to the segment after "shaded"
	}
	return strings.Join(parts[:min(n, len(parts))], "."), false
}

// umbrella organisations whose second segment names no library.
var umbrella = map[string]bool{"apache": true, "eclipse": true, "google": true, "jboss": true, "fasterxml": true, "glassfish": true, "springframework": true, "twitter": true, "github": true, "amazonaws": true, "aliyun": true}

// flinkAPI reports whether an internal class name is Flink's own API, not
// one of its relocated libraries.
func flinkAPI(class string) bool {
	return strings.HasPrefix(class, "org/apache/flink/") && !strings.HasPrefix(class, "org/apache/flink/shaded/")
}

// usual reports whether a finding is a warning about an optional library:
// a class missing that is not Flink's, referenced from code the JAR
// bundles rather than from its own Flink-facing classes.
func usual(f admission.Finding, lib string, flink bool) bool {
	if f.Severity != admission.Warning || f.Strict || f.Rule != "linkage-class" || f.Symbol == nil || lib == "" || flink {
		return false
	}
	return !flinkAPI(f.Symbol.From)
}

// usualNote says what a usual group is, once per subject.
const usualNote = "the usual state of this JAR, nothing to do unless you use the feature: libraries nothing in lib provides, used only by code the JAR bundles, which the JVM loads only when a feature that needs them runs (then add the library to lib; Hadoop: HADOOP_CLASSPATH)"

// grouped writes findings for people, grouped by subject, rule and
// library, each group its count, its fix, then examples; usual groups one
// line each. detail says how much: 2 and 1 examples a group, 0 none (and
// the usual libraries on one line), -1 a line per subject for warnings.
func grouped(findings []admission.Finding, detail int) []line {
	var out []line
	for _, s := range Groups(findings) {
		if len(s.Groups) == 1 && len(s.Groups[0].Findings) == 1 {
			f := s.Groups[0].Findings[0]
			out = append(out, line{severity: f.Severity, text: severityWord(f.Severity) + " [" + f.Rule + "] " + f.Text() + strict(f)})
			continue
		}
		sev := admission.Warning
		if s.Errors > 0 {
			sev = admission.Error
		}
		head := fmt.Sprintf("%s: %s", cmp.Or(s.Path, "host"), counts(s.Errors, s.Warnings))
		if detail < 0 && s.Errors == 0 {
			out = append(out, line{severity: sev, text: head + " (" + rulesOf(s) + ")", subject: &s})
			continue
		}
		out = append(out, line{severity: sev, text: head})
		var usualGroups []Group
		for _, g := range s.Groups {
			switch {
			case g.Usual:
				usualGroups = append(usualGroups, g)
			case detail < 0 && g.Severity == admission.Warning:
				out = append(out, line{severity: g.Severity, text: fmt.Sprintf("  %d WARNING [%s]%s", len(g.Findings), g.Rule, cond(g.Library != "", " on "+g.Library, ""))})
			default:
				out = append(out, groupLines(g, max(detail, 0))...)
			}
		}
		out = append(out, usualLines(usualGroups, detail)...)
	}
	return out
}

// rulesOf lists a subject's rules with their counts.
func rulesOf(s Subject) string {
	n := map[string]int{}
	var order []string
	for _, g := range s.Groups {
		if n[g.Rule] == 0 {
			order = append(order, g.Rule)
		}
		n[g.Rule] += len(g.Findings)
	}
	var parts []string
	for _, r := range order {
		parts = append(parts, fmt.Sprintf("%d %s", n[r], r))
	}
	return strings.Join(parts, ", ")
}

// line is one line of the people's report, with the level it is logged at.
type line struct {
	severity admission.Severity
	text     string
	subject  *Subject // a subject of warnings on one line, which fold can fold further
}

func severityWord(s admission.Severity) string { return strings.ToUpper(string(s)) }

func counts(errors, warnings int) string {
	var parts []string
	if errors > 0 {
		parts = append(parts, count(errors, "error"))
	}
	if warnings > 0 {
		parts = append(parts, count(warnings, "warning"))
	}
	return strings.Join(parts, ", ")
}

// maxExampleLen bounds an example's length; the full text is in --json.
const maxExampleLen = 200

func groupLines(g Group, examplesShown int) []line {
	f0 := g.Findings[0]
	if len(g.Findings) == 1 {
		return []line{{severity: g.Severity, text: "  " + severityWord(g.Severity) + " [" + g.Rule + "] " + f0.Message + ": found " + f0.Found + ", required " + f0.Required + "; fix: " + f0.Fix + strict(f0)}}
	}
	what := ""
	switch {
	case g.Flink && g.Rule == "linkage-class":
		what = " on Flink's own classes (org.apache.flink) that lib's loader does not have: they are in a module of the distribution outside lib (opt/, the planner), or the JAR is built for another Flink release"
	case g.Flink:
		what = " on Flink's own classes (org.apache.flink), whose members differ from the host's: the JAR is built for another Flink release"
	case g.Library != "":
		what = " on " + g.Library
		if g.Rule == "linkage-class" && g.Severity == admission.Warning {
			what += ", used by the JAR's Flink-facing classes"
		}
		if g.Library == "org.apache.hadoop" && strings.HasPrefix(g.Rule, "linkage-") {
			what += " (Hadoop is the cluster's: HADOOP_CLASSPATH)"
		}
	}
	fix, others := commonFix(g.Findings)
	head := fmt.Sprintf("  %d %s [%s]%s", len(g.Findings), severityWord(g.Severity), g.Rule, what)
	if g.Findings[0].Strict {
		head += strict(g.Findings[0])
	}
	out := []line{{severity: g.Severity, text: head}}
	fixLine := "    fix: " + fix
	if others > 0 {
		fixLine += fmt.Sprintf(" (and %s, in --json)", count(others, "other fix"))
	}
	out = append(out, line{severity: g.Severity, text: fixLine})
	if examplesShown == 0 {
		return out
	}
	for _, f := range examples(g.Findings, examplesShown) {
		out = append(out, line{severity: g.Severity, text: "    e.g. " + Clip(f.Message, maxExampleLen)})
	}
	return out
}

// maxUsualLibraries is how many usual libraries a subject lists before
// folding the rest into one line.
const maxUsualLibraries = 6

func usualLines(groups []Group, detail int) []line {
	if len(groups) == 0 {
		return nil
	}
	if detail <= 0 {
		var libs []string
		for _, g := range groups {
			libs = append(libs, fmt.Sprintf("%s %d", g.Library, len(g.Findings)))
		}
		total := 0
		for _, g := range groups {
			total += len(g.Findings)
		}
		return []line{{severity: admission.Warning, text: fmt.Sprintf("  %d WARNING [linkage-class] in %d libraries (%s): %s", total, len(groups), Clip(strings.Join(libs, ", "), maxExampleLen), usualNote)}}
	}
	total := 0
	for _, g := range groups {
		total += len(g.Findings)
	}
	out := []line{{severity: admission.Warning, text: fmt.Sprintf("  %d WARNING [linkage-class] in %d libraries: %s", total, len(groups), usualNote)}}
	rest, restN := 0, 0
	for i, g := range groups {
		if i >= maxUsualLibraries && len(groups) > maxUsualLibraries+1 {
			rest++
			restN += len(g.Findings)
			continue
		}
		ex := examples(g.Findings, 1)[0]
		out = append(out, line{severity: admission.Warning, text: fmt.Sprintf("    %d %s, e.g. %s", len(g.Findings), g.Library, Clip(ex.Message, maxExampleLen))})
	}
	if rest > 0 {
		out = append(out, line{severity: admission.Warning, text: fmt.Sprintf("    %d in %d more libraries", restN, rest)})
	}
	return out
}

// commonFix is the fix most of the findings give, and how many other fixes
// there are.
func commonFix(fs []admission.Finding) (fix string, others int) {
	n := map[string]int{}
	for _, f := range fs {
		n[f.Fix]++
	}
	for _, f := range fs { // the first of the most common, for a stable choice
		if n[f.Fix] > n[fix] {
			fix = f.Fix
		}
	}
	return fix, len(n) - 1
}

// examples are up to k findings about different classes, in order.
func examples(fs []admission.Finding, k int) []admission.Finding {
	var out []admission.Finding
	seen := map[string]bool{}
	for _, f := range fs {
		id := f.Message
		if f.Symbol != nil {
			id = f.Symbol.Owner + "." + f.Symbol.Name
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		out = append(out, f)
		if len(out) == k {
			break
		}
	}
	return out
}

// ScreenLines is what the people's report fits in, header included,
// whatever the number of findings, as long as the errors alone fit: they
// are never folded.
const ScreenLines = 40

// people is the findings part of the people's report: a line each when
// they are few, grouped otherwise, with as much detail as fits in budget
// lines.
func people(findings []admission.Finding, budget int) []line {
	if len(findings) <= FewFindings {
		var out []line
		for _, f := range findings {
			out = append(out, line{severity: f.Severity, text: severityWord(f.Severity) + " [" + f.Rule + "] " + f.Text() + strict(f)})
		}
		return out
	}
	errs := 0
	for _, f := range findings {
		if f.Severity == admission.Error {
			errs++
		}
	}
	out := []line{{severity: admission.Warning, text: fmt.Sprintf("%s, grouped by JAR and library, the fix first; every finding in full: --json", counts(errs, len(findings)-errs))}}
	var body []line
	for detail := 2; detail >= -1; detail-- {
		body = grouped(findings, detail)
		if len(out)+len(body) <= budget {
			break
		}
	}
	return append(out, fold(body, budget-len(out))...)
}

// fold keeps lines within budget by putting the last subjects of warnings
// on one line: how many JARs, how many warnings of each rule.
func fold(lines []line, budget int) []line {
	if len(lines) <= budget {
		return lines
	}
	var folded []*Subject
	for i := len(lines) - 1; i >= 0 && len(lines)-len(folded)+1 > budget; i-- {
		if lines[i].subject != nil {
			folded = append(folded, lines[i].subject)
		}
	}
	if len(folded) == 0 {
		return lines
	}
	skip := map[*Subject]bool{}
	rest := Subject{}
	for _, s := range slices.Backward(folded) {
		skip[s] = true
		rest.Warnings += s.Warnings
		rest.Groups = append(rest.Groups, s.Groups...)
	}
	var out []line
	for _, l := range lines {
		if l.subject == nil || !skip[l.subject] {
			out = append(out, l)
		}
	}
	return append(out, line{severity: admission.Warning, text: fmt.Sprintf("%d more JARs: %s (%s)", len(folded), count(rest.Warnings, "warning"), rulesOf(rest))})
}
