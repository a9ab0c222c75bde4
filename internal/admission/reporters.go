package admission

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

// ReporterKind is one family of Flink's reporters: the keys that name
// them, and the service their factories are found by (ReporterSetup,
// TraceReporterSetup, EventReporterSetup: ServiceLoader on lib and every
// plugin's loader, keyed by the factory's class name).
type ReporterKind struct {
	Name    string // metrics, traces, events
	Prefix  string // metrics.reporter.
	List    string // metrics.reporters: the reporters enabled, when set
	Service string
	// Class says a reporter is also named by PREFIX<name>.class, a key
	// Flink still reads only to warn that it is no longer supported.
	Class bool
}

var reporterKinds = []ReporterKind{
	{Name: "metrics", Prefix: "metrics.reporter.", List: "metrics.reporters", Service: "org.apache.flink.metrics.reporter.MetricReporterFactory", Class: true},
	{Name: "traces", Prefix: "traces.reporter.", List: "traces.reporters", Service: "org.apache.flink.traces.reporter.TraceReporterFactory"},
	{Name: "events", Prefix: "events.reporter.", List: "events.reporters", Service: "org.apache.flink.events.reporter.EventReporterFactory"},
}

// reporter is one reporter the configuration enables.
type reporter struct {
	kind    ReporterKind
	name    string
	factory flinkconf.Entry // PREFIX<name>.factory.class; Key "" when unset
	class   flinkconf.Entry // PREFIX<name>.class, when set
}

// enabledReporters are the reporters a release's Flink sets up from the
// configuration: every name with a PREFIX<name>.factory.class (or, for
// metrics, .class) key, the name free of dots and blanks, kept when the
// kind's list key is unset or names it; in name order, per kind. A kind
// the release does not have (its list key unknown to its table) is
// skipped.
func enabledReporters(release string, entries []flinkconf.Entry) []reporter {
	keys := TableFor(release)
	if keys == nil {
		return nil
	}
	last := map[string]flinkconf.Entry{}
	for _, e := range entries {
		last[e.Key] = e
	}
	var out []reporter
	for _, k := range reporterKinds {
		if keys.Option(k.List) == nil {
			continue
		}
		var listed []string
		if e, ok := last[k.List]; ok {
			for _, n := range strings.Split(e.Value, ",") {
				if n = strings.TrimSpace(n); n != "" {
					listed = append(listed, n)
				}
			}
		}
		found := map[string]*reporter{}
		for key, e := range last {
			rest, ok := strings.CutPrefix(key, k.Prefix)
			if !ok {
				continue
			}
			name, suffix, ok := strings.Cut(rest, ".")
			if !ok || name == "" || strings.ContainsAny(name, " \t\n\r\f\v") || suffix != "factory.class" && (suffix != "class" || !k.Class) {
				continue
			}
			if len(listed) > 0 && !slices.Contains(listed, name) {
				continue
			}
			r := found[name]
			if r == nil {
				r = &reporter{kind: k, name: name}
				found[name] = r
			}
			if suffix == "factory.class" {
				r.factory = e
			} else {
				r.class = e
			}
		}
		for _, n := range slices.Sorted(maps.Keys(found)) {
			out = append(out, *found[n])
		}
	}
	return out
}

// reporterFlinkOptions are the options below a reporter's prefix that
// Flink reads itself, through typed ConfigOptions (MetricOptions,
// TraceOptions and EventOptions of 2.2): any value of theirs works.
// Every other option is the reporter's own.
var reporterFlinkOptions = []string{"factory.class", "class", "interval", "scope.delimiter",
	"scope.variables.additional", "scope.variables.excludes", "filter.includes", "filter.excludes"}

// reporterOptionIgnored reports an option of one of Flink's own
// reporters that the reporter does not get as written:
//
//   - on Flink 2, a value config.yaml gives as a YAML int, float or bool.
//     Flink 2 keeps it typed and puts it into the reporter's MetricConfig
//     (a Properties) as that Integer, Double or Boolean, and MetricConfig's
//     lookups (getString, getInteger... all through
//     Properties.getProperty) see only strings: the reporter never sees
//     the option and uses its default. Real Flink 2.2.0 with
//     `metrics.reporter.prom.port: 9251` serves Prometheus on 9249.
//   - on Flink 1, a value in quotes: 1.x reads its config a line at a
//     time and keeps the quotes in the value. Real Flink 1.18.1 with
//     `metrics.reporter.prom.port: "9251"` sets up no Prometheus reporter.
//
// Both are the reporter oracle's findings (internal/realflink). Only
// Flink's own reporters (factories in org.apache.flink) are judged:
// another reporter may read the typed value itself.
func reporterOptionIgnored(v *view) []Finding {
	rel, _ := v.confRelease()
	if rel == "" {
		return nil
	}
	legacy := strings.HasPrefix(rel, "1.")
	var out []Finding
	for _, r := range enabledReporters(rel, v.Config.Entries) {
		if !strings.HasPrefix(strings.TrimSpace(r.factory.Value), "org.apache.flink.") {
			continue
		}
		prefix := r.kind.Prefix + r.name + "."
		seen := map[string]bool{}
		for i := len(v.Config.Entries) - 1; i >= 0; i-- { // the last of each key is the one Flink keeps
			e := v.Config.Entries[i]
			opt, ok := strings.CutPrefix(e.Key, prefix)
			if !ok || seen[e.Key] {
				continue
			}
			seen[e.Key] = true
			if slices.Contains(reporterFlinkOptions, opt) {
				continue
			}
			switch {
			case legacy && quoted(e.Value):
				out = append(out, Finding{Severity: Warning, Path: v.Config.File,
					Message: fmt.Sprintf("the %s reporter %s gets its option %s with the quotes around it: Flink %s reads its config a line at a time and keeps quotes in the value, so the reporter cannot read it as written (a port in quotes is no port: the reporter is not set up)",
						r.kind.Name, r.name, opt, rel),
					Found:    fmt.Sprintf("%s: %s (%s)", e.Key, e.Value, e.Source),
					Required: fmt.Sprintf("%s without quotes", e.Key),
					Fix:      fmt.Sprintf("write the value without quotes: %s: %s", e.Key, e.Value[1:len(e.Value)-1])})
			case !legacy && e.Type != "":
				out = append(out, Finding{Severity: Warning, Path: v.Config.File,
					Message: fmt.Sprintf("the %s reporter %s never sees its option %s: config.yaml gives it as a YAML %s, Flink %s hands the reporter that %s, and the reporter reads its options as strings (MetricConfig): it uses its default instead",
						r.kind.Name, r.name, opt, e.Type, rel, javaTypes[e.Type]),
					Found:    fmt.Sprintf("%s: %s (%s, a YAML %s)", e.Key, e.Value, e.Source, e.Type),
					Required: fmt.Sprintf("%s as a YAML string", e.Key),
					Fix:      fmt.Sprintf("quote the value: %s: \"%s\"", e.Key, e.Value)})
			}
		}
	}
	slices.SortFunc(out, func(a, b Finding) int { return strings.Compare(a.Found, b.Found) })
	return out
}

// quoted says whether a value is wrapped in a pair of double or single
// quotes.
func quoted(s string) bool {
	return len(s) >= 2 && (s[0] == '"' || s[0] == '\'') && s[len(s)-1] == s[0]
}

// javaTypes are the classes snakeyaml-engine makes of the YAML types.
var javaTypes = map[string]string{"int": "Integer", "float": "Double", "bool": "Boolean"}

// reporterUnavailable reports a reporter Flink will set up without a
// factory: no factory.class (only the unsupported .class), or a factory
// class no service file of lib or a plugin provides. Flink logs a warning
// and runs without it, so monitoring (or traces, or events) is silently
// gone: a warning, which STREAMFUSION_STRICT raises, and which the webhook
// returns to kubectl as an admission warning.
func reporterUnavailable(v *view) []Finding {
	rel, _ := v.confRelease()
	fsys := v.FileSystems
	if rel == "" || fsys == nil || !fsys.ReportersRead {
		return nil
	}
	var out []Finding
	for _, r := range enabledReporters(rel, v.Config.Entries) {
		var available, broken []string
		for _, p := range fsys.Reporters {
			if p.Service != r.kind.Service {
				continue
			}
			switch {
			case p.Missing:
				broken = append(broken, p.Class+" ("+p.JAR+")")
			case p.Err == "" && !slices.Contains(available, p.Class):
				available = append(available, p.Class)
			}
		}
		if r.factory.Key == "" {
			out = append(out, Finding{Severity: Warning, Path: v.Config.File,
				Message:  fmt.Sprintf("the %s reporter %s names a reporter class, which Flink no longer instantiates: it runs without the reporter", r.kind.Name, r.name),
				Found:    fmt.Sprintf("%s: %s (%s), no %s%s.factory.class", r.class.Key, r.class.Value, r.class.Source, r.kind.Prefix, r.name),
				Required: fmt.Sprintf("%s%s.factory.class naming a reporter factory", r.kind.Prefix, r.name),
				Fix:      fmt.Sprintf("set %s%s.factory.class to the reporter's factory%s", r.kind.Prefix, r.name, availableList(available))})
			continue
		}
		class := strings.TrimSpace(r.factory.Value)
		if slices.Contains(available, class) {
			continue
		}
		found := fmt.Sprintf("%s: %s (%s); no service file of lib or plugins/ provides it", r.factory.Key, class, r.factory.Source)
		for _, b := range broken {
			if strings.HasPrefix(b, class+" ") {
				found = fmt.Sprintf("%s: %s (%s); its service file names it, but the class is not in that JAR's class loader: %s", r.factory.Key, class, r.factory.Source, b)
			}
		}
		if len(fsys.Loose) > 0 {
			found += "; not loaded, straight in plugins/: " + strings.Join(fsys.Loose, ", ")
		}
		out = append(out, Finding{Severity: Warning, Path: v.Config.File,
			Message:  fmt.Sprintf("the %s reporter %s names a factory Flink will not find: it logs a warning and runs without the reporter", r.kind.Name, r.name),
			Found:    found,
			Required: fmt.Sprintf("a %s provider %s in lib or in a folder of its own below plugins/", r.kind.Service, class),
			Fix:      fmt.Sprintf("put the reporter's plugin JAR (as the distribution ships it in plugins/, flink-metrics-<name>-<release>.jar) into %s/<name>/, or correct the factory class%s", fsys.pluginsDir(), availableList(available))})
	}
	return out
}

func availableList(available []string) string {
	if len(available) == 0 {
		return ""
	}
	return " (this image provides " + strings.Join(available, ", ") + ")"
}
