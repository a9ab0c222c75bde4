package admission

import (
	"cmp"
	"fmt"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/sqlscan"
)

// Facts is everything admission decides on. The host package gathers it;
// Decide reads nothing else.
type Facts struct {
	LibDir    string         // absolute
	LibErr    error          // lib is missing or cannot be listed: nothing else was read
	Classpath []*payload.JAR // every *.jar below lib, in classpath order
	Order     string         // how the classpath was ordered (the locale's collation or bytes)
	Usrlib    []*payload.JAR // job JARs beside lib
	Plugins   []*payload.JAR // JARs below plugins/
	Unlisted  []Unlisted     // directories below lib, usrlib or plugins that cannot be listed
	// InstallJournal is the journal of an install into lib that has not
	// finished (running, or interrupted), "" when there is none.
	InstallJournal string

	JDK      JDK
	Platform Platform
	Strict   bool

	// Deep are the class indexes the shadowing and linkage rules read;
	// nil when they were not asked for (the start path, unless
	// STREAMFUSION_LINKAGE=true).
	Deep *Deep
	// Libs is what the root filesystem offers the payloads' native
	// libraries (the native-* rules); nil when their ELF was not read.
	Libs *Libs
	// Linkage says how the deep rules were given their facts at a start
	// that may apply a baked deep verdict (host.Settings.Baked), for the
	// log: applied, judged against its index, in full, or not at all.
	Linkage string
	// Config is the configuration the process about to start runs with;
	// its zero value (no Dir) turns the config rules off.
	Config Config
	// FileSystems is what Flink's FileSystem and plugin loader will find;
	// nil when not read.
	FileSystems *FileSystems
	// SQL are the SQL files the process may run (usrlib's, and those its
	// arguments name), with the table factories their statements name.
	SQL []SQLFile
}

// SQLFile is one SQL file and the factory identifiers of its statements
// (internal/sqlscan).
type SQLFile struct {
	Path string // absolute
	// Named says the process runs it: an argument of the process, or of
	// the application's job ($internal.application.program-args), names
	// it. A file in usrlib that nothing names may not be run.
	Named bool
	Uses  []sqlscan.Use
	// AddsCode are the lines of its statements that add JARs to the
	// job's class path (ADD JAR, USING JAR, SET 'pipeline.jars'), where a
	// factory may come from.
	AddsCode  []int
	Truncated bool   // more factory options than the scanner returns (sqlscan.MaxUses): the rest not judged
	Err       string // not read (too large, not a regular file): not judged
}

// Unlisted is a directory that cannot be listed: JARs in it may be
// missing from the check.
type Unlisted struct {
	Path string // absolute
	Err  error
}

// JDK is the host JDK as found.
type JDK struct {
	Version string // JAVA_VERSION of the release file, raw
	Source  string // the release file it came from
	Err     error  // no JDK found or its release file unreadable
	Via     string // how Flink's scripts chose it (env.java.home, JAVA_HOME, PATH); "" when not derived
}

// Platform is the host platform.
type Platform struct {
	OS   string // linux
	Arch string // x86_64, aarch64 (uname -m, arm64 normalised)
	// Libc is glibc, musl or unknown; Evidence is the loader path that
	// showed it, or what was looked for.
	Libc     string
	Evidence string
}

// Name is the platform as StreamFusion-Native-Platforms spells it.
func (p Platform) Name() string { return p.OS + "-" + p.Arch }

// Severity of a finding.
type Severity string

// Severities: an error refuses the start, a warning is logged.
const (
	Error   Severity = "error"
	Warning Severity = "warning"
)

// Finding is one rule's verdict on one subject.
type Finding struct {
	Rule     string   `json:"rule"`
	Severity Severity `json:"severity"`
	Path     string   `json:"path,omitempty"`
	Message  string   `json:"message"`
	Found    string   `json:"found"`
	Required string   `json:"required"`
	Fix      string   `json:"fix"`
	// Strict is set on a warning raised to an error by STREAMFUSION_STRICT.
	Strict bool `json:"strict,omitempty"`
	// Symbol is the JVM symbol of a classpath-shadowed, linkage-* or
	// bytecode-version finding.
	Symbol *Symbol `json:"symbol,omitempty"`
}

// Decision is the outcome of admission.
type Decision struct {
	Findings []Finding `json:"findings"`

	Flink    string      `json:"flink,omitempty"` // the planner's version
	Line     string      `json:"line,omitempty"`  // known only for a release in the matrix
	Support  Support     `json:"support,omitempty"`
	JDK      string      `json:"jdk,omitempty"`
	JDKFrom  string      `json:"jdkFrom,omitempty"` // how Flink's scripts chose the JDK
	Platform string      `json:"platform"`
	Libc     string      `json:"libc"`
	Payloads []*Identity `json:"payloads"` // in classpath order
	// RunTime is what Flink will resolve at run time, when every provider
	// of lib and the plugins was read whatever the configuration names
	// (an image's check): a FlinkDeployment's own configuration is judged
	// against it (JudgeConfig).
	RunTime *FileSystems `json:"runTime,omitempty"`
}

// Admitted reports whether no finding is an error.
func (d *Decision) Admitted() bool { return len(d.Errors()) == 0 }

// Errors returns the findings that refuse the start.
func (d *Decision) Errors() []Finding { return d.by(Error) }

// Warnings returns the findings that are only logged.
func (d *Decision) Warnings() []Finding { return d.by(Warning) }

func (d *Decision) by(s Severity) []Finding {
	var out []Finding
	for _, f := range d.Findings {
		if f.Severity == s {
			out = append(out, f)
		}
	}
	return out
}

// view is the facts with what every rule needs derived once.
type view struct {
	*Facts
	ids     []*Identity // StreamFusion content on the classpath, in order
	byPath  map[string]*Identity
	jars    map[string]*payload.JAR // the classpath by path
	planner []*payload.JAR
	scala   []*payload.JAR // flink-table-planner_2.1x
	dists   []*payload.JAR

	// stock is the identity of every other Flink JAR on the classpath
	// (connectors, formats, in-tree modules, integrations), in order;
	// flink-dist and the planners are the host rules' to judge.
	stock   []*Stock
	stockOf map[string]*Stock // by path, the host's own JARs included

	thePlanner *payload.JAR // the one readable planner JAR, if exactly one
	flink      string       // its version
	release    *Release     // nil when unknown
	java       *JavaVersion

	payloads bool // StreamFusion content on the classpath

	loader   *Identity // the one valid loader, if exactly one
	embedded *Identity // its embedded core, if readable
	core     *Identity // the one runtime core, if exactly one

	link   *linkage       // the deep rules' findings, computed once
	tables *tableAnalysis // the table factories' facts, computed once
}

// Flink's own JARs are known by file name, as Flink's scripts know them.
func isPlannerLoader(name string) bool {
	return strings.HasPrefix(name, "flink-table-planner-loader-") && strings.HasSuffix(name, ".jar")
}

// isPlannerScala matches flink-table-planner_2.1x-*.jar.
func isPlannerScala(name string) bool {
	const prefix = "flink-table-planner_2.1"
	return strings.HasPrefix(name, prefix) && len(name) > len(prefix)+1 &&
		name[len(prefix)] >= '0' && name[len(prefix)] <= '9' && name[len(prefix)+1] == '-' && strings.HasSuffix(name, ".jar")
}

// IsDist matches flink-dist*.jar, the JAR bin/config.sh puts last.
func IsDist(name string) bool {
	return strings.HasPrefix(name, "flink-dist") && strings.HasSuffix(name, ".jar")
}

func newView(f *Facts) *view {
	v := &view{Facts: f, byPath: map[string]*Identity{}, jars: make(map[string]*payload.JAR, len(f.Classpath)), stockOf: map[string]*Stock{}}
	for _, j := range f.Classpath {
		v.jars[j.Path] = j
		name := path.Base(j.Path)
		switch {
		case isPlannerLoader(name):
			v.planner = append(v.planner, j)
		case isPlannerScala(name):
			v.scala = append(v.scala, j)
		case IsDist(name):
			v.dists = append(v.dists, j)
		}
		if id := Identify(j); id != nil {
			v.ids = append(v.ids, id)
			v.byPath[j.Path] = id
		} else if s := IdentifyStock(j); s != nil {
			v.stockOf[j.Path] = s
			if !isPlannerLoader(name) && !isPlannerScala(name) && !IsDist(name) {
				v.stock = append(v.stock, s)
			}
		}
	}
	v.payloads = len(v.ids) > 0
	if all := append(append([]*payload.JAR(nil), v.planner...), v.scala...); len(all) == 1 && all[0].Err == nil {
		v.thePlanner = all[0]
		v.flink = v.thePlanner.ManifestValue("Implementation-Version")
		v.release = Lookup(v.flink)
	}
	if f.JDK.Err == nil {
		if jv, err := ParseJava(f.JDK.Version); err == nil {
			v.java = &jv
		}
	}
	var loaders []*Identity
	var cores []*Identity
	for _, id := range v.ids {
		switch id.Kind {
		case KindLoader:
			loaders = append(loaders, id)
		case KindCore:
			cores = append(cores, id)
		}
	}
	if len(loaders) == 1 && loaders[0].Valid() {
		v.loader = loaders[0]
		if j := v.jar(v.loader.Path); j.Nested != nil && j.Nested.Err == nil {
			v.embedded = Identify(j.Nested)
		}
	}
	if len(cores) == 1 && cores[0].Valid() {
		v.core = cores[0]
	}
	return v
}

func (v *view) jar(p string) *payload.JAR { return v.jars[p] }

func (v *view) line() string {
	if v.release == nil {
		return ""
	}
	return v.release.Line
}

func (v *view) hostText() string {
	if v.release == nil {
		return "Flink " + cmp.Or(v.flink, "(unknown)")
	}
	return fmt.Sprintf("Flink %s (line %s)", v.flink, v.release.Line)
}

// Decide applies every rule to the facts and returns all findings, errors
// first in rule-table order, then warnings.
func Decide(f *Facts) *Decision {
	v := newView(f)
	d := &Decision{Flink: v.flink, Platform: f.Platform.Name(), Libc: f.Platform.Libc, Payloads: v.ids}
	if v.release != nil {
		d.Line, d.Support = v.release.Line, v.release.Support
	}
	if v.java != nil {
		d.JDK = v.java.Raw
	}
	d.JDKFrom = f.JDK.Via
	if f.FileSystems != nil && f.FileSystems.Complete {
		d.RunTime = f.FileSystems
	}
	if f.LibErr != nil {
		d.Findings = []Finding{{Rule: libRule.ID, Severity: Error, Path: f.LibDir, Message: "Flink's lib directory cannot be read",
			Found: f.LibErr.Error(), Required: "a readable lib directory (FLINK_LIB_DIR, else $FLINK_HOME/lib)",
			Fix: "set FLINK_HOME or FLINK_LIB_DIR to the Flink distribution's directory"}}
		return d
	}
	var warnings []Finding
	for _, r := range Rules {
		for _, fd := range r.check(v) {
			// A rule of two severities sets the milder one on its finding.
			fd.Rule, fd.Severity = r.ID, cmp.Or(fd.Severity, r.Severity)
			if fd.Severity == Warning && f.Strict {
				fd.Severity, fd.Strict = Error, true
			}
			if fd.Severity == Warning {
				warnings = append(warnings, fd)
			} else {
				d.Findings = append(d.Findings, fd)
			}
		}
	}
	d.Findings = append(d.Findings, warnings...)
	return d
}

// Text renders a finding for people as one sentence that says each fact
// once, in the habit of ko's policy errors:
// "PATH: WHAT: found X, required Y; fix: Z". Message is the what: the values
// belong to Found and Required, the subject to Path.
func (f Finding) Text() string {
	var b strings.Builder
	if f.Path != "" {
		b.WriteString(f.Path)
		b.WriteString(": ")
	}
	b.WriteString(f.Message)
	fmt.Fprintf(&b, ": found %s, required %s; fix: %s", f.Found, f.Required, f.Fix)
	return b.String()
}
