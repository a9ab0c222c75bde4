package admission

import (
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
)

// Severity from consequence (issue 28): a finding is an error when the JVM
// would fail, not because two copies differ in bytes or a JAR has a
// certain name. The real JARs of the ecosystem corpus (make
// test-ecosystem) and the JVM harness decide what the rules below say.

// flinkOwn: a class of Flink's own code (org.apache.flink outside its
// relocated libraries, org.apache.flink.shaded.* and the like).
func flinkOwn(class string) bool {
	return strings.HasPrefix(class, "org/apache/flink/") && !shadedPkg(class)
}

// shadedPkg: a class in a relocated package (a segment named shaded or
// shade).
func shadedPkg(class string) bool {
	for _, seg := range strings.Split(pkg(class), "/") {
		if seg == "shaded" || seg == "shade" {
			return true
		}
	}
	return false
}

// shadowConsequence decides a shadowing pair: winner's copies of names
// hide loser's. hostUses says the host's own code (flink-dist, the
// planner, the host's modules) runs against the winning copies: in lib,
// where the loser's are the host's. An error when Flink's own classes of a
// JAR built for another Flink line win over the host's, or when a public or
// protected member the host's copy declares (not an inlined constant) does not resolve in the winning
// copy (JVMS 5.4.3, through its superclasses and interfaces), or the
// winning copy cannot be read. Otherwise a warning: the copies differ and
// every use resolves (the losing JAR's own code, when it is not the
// host's, is judged against the winning copies by the linkage rules).
func (v *view) shadowConsequence(cp *jvm.Classpath, winner, loser *deepJAR, names []string, hostUses bool) (Severity, string) {
	if !loser.host {
		return Warning, ""
	}
	winnerLine := ""
	if s := v.stockOf[winner.jar.Path]; s != nil {
		winnerLine = s.Line
	}
	for _, n := range names {
		if flinkOwn(n) && winnerLine != "" && winnerLine != v.line() && v.line() != "" {
			return Error, javaName(n) + " is Flink's own class, and " + path.Base(winner.jar.Path) + " is built for Flink " + winnerLine + ", the host runs " + v.line()
		}
	}
	gap := ""
	if !hostUses {
		if slices.ContainsFunc(names, flinkOwn) {
			return Error, "Flink's own classes of another build are loaded child-first for the job, where Flink hands it the host's"
		}
		return Warning, ""
	}
	for _, n := range names {
		if _, err := cp.Class(winner.archive, n); err != nil {
			return Error, "the winning copy of " + javaName(n) + " cannot be read: " + err.Error()
		}
		h, err := cp.Class(loser.archive, n)
		if err != nil {
			continue // the host's copy unreadable: no member to miss
		}
		kind := classfile.Method
		if h.Access&0x0200 != 0 {
			kind = classfile.InterfaceMethod
		}
		for _, g := range []struct {
			kind    classfile.RefKind
			members []classfile.Member
		}{{kind, h.Methods}, {classfile.Field, h.Fields}} {
			for _, m := range g.members {
				// Only public and protected members reach the host's code in
				// other packages (a package's classes the winner hides come
				// from the winner's copy too); <clinit> runs in its class;
				// a constant is inlined where it is read.
				if m.Access&0x0005 == 0 || m.Name == "<clinit>" || g.kind == classfile.Field && inlinedConstant(m) {
					continue
				}
				ref := classfile.Ref{Kind: g.kind, Owner: n, Name: m.Name, Descriptor: m.Descriptor}
				if found, _ := cp.Lookup(cp.Lib, ref); !found {
					if flinkOwn(n) {
						return Error, "the winning copy has no " + javaMember(ref) + ", which " + path.Base(loser.jar.Path) + "'s copy declares and its code is built against"
					}
					// A library the host bundles (slf4j, commons-lang3 in
					// flink-dist): which of its members the host's code
					// calls is not known here, and the real deployments
					// the corpus holds (the Hive connector's older slf4j
					// over 1.20's) run. Said, not refused.
					if gap == "" {
						gap = "; the winning copy lacks " + javaMember(ref) + ", which " + path.Base(loser.jar.Path) + "'s copy declares: a NoSuchMethodError or NoSuchFieldError if the host's code uses it"
					}
				}
			}
		}
	}
	if gap != "" {
		return Warning, "every use by the JARs judged resolves in the copies loaded" + gap
	}
	return Warning, ""
}

// hostPackages are the packages the host's own JARs hold classes of.
func hostPackages(jars []*deepJAR) map[string]bool {
	out := map[string]bool{}
	for _, j := range jars {
		if j.host {
			for name := range j.archive.Classes {
				out[pkg(name)] = true
			}
		}
	}
	return out
}

// hostProvides: a class of a package the host's own Flink provides (its
// API, or a package of flink-dist, the planner or the host's modules),
// relocated packages aside: a JAR whose code needs a class there that the
// host lacks is built for another Flink release, whatever its name.
func (r *resolver) hostProvides(class string) bool {
	if shadedPkg(class) || plannerOnly(class) {
		return false
	}
	// Flink's own packages: a library flink-dist bundles unrelocated
	// (commons-lang3) is the JAR's to match, as the absent ones are (the
	// Iceberg runtime's Parquet readers call a newer commons-lang3 than
	// 2.0.0's on their own release too).
	return hostAPI(class) || r.hostPackages()[pkg(class)] && flinkOwn(class)
}

// builtFor says which Flink a JAR whose code does not link against the
// host's is built for, as far as it says.
func (r *resolver) builtFor(j *deepJAR) string {
	host := "the host's"
	if r.line != "" {
		host = "the host's " + r.line
	}
	if j.builtFor != "" {
		return path.Base(j.jar.Path) + " is built for " + j.builtFor + ", not " + host
	}
	return path.Base(j.jar.Path) + " is built against another Flink release than " + host + " (its name and manifest do not say which)"
}

// plannerOnly: a class only Flink's planner holds (the planner itself, and
// the Calcite bridge it bundles), which the planner loader keeps from lib's
// loader: code in lib that needs it (the Hive dialect's parser and its
// CalciteContext) links only with the planner JAR from opt in lib.
func plannerOnly(class string) bool {
	return strings.HasPrefix(class, "org/apache/flink/table/planner/") || strings.HasPrefix(class, "org/apache/flink/table/calcite/")
}

func plannerFix(class string) string {
	return "if the feature is used (" + javaName(class) + " is Flink's planner's, which flink-table-planner-loader keeps from lib): " +
		"move flink-table-planner_2.12 from opt to lib and flink-table-planner-loader out of lib, as Flink's docs say for the Hive dialect"
}

// inlinedConstant: a static final field of a primitive or String type,
// which javac inlines into the code that reads it (a compile-time
// constant): a copy without it breaks no other class.
func inlinedConstant(m classfile.Member) bool {
	return m.Access&0x0018 == 0x0018 && (len(m.Descriptor) == 1 || m.Descriptor == "Ljava/lang/String;")
}

// missingClass is what the classpath model and the JAR say of a class that
// does not load, named by a class reachable from a JAR's entry points
// (directly, or as a supertype deeper in its hierarchy): the facts the
// linkage-class policy (judgeMissing) decides on.
type missingClass struct {
	// Provided: a JAR on the classpath holds its package, or it is of
	// Flink's own API: the class is gone from where the JAR expects it.
	Provided bool
	// Dropped: the flink-dist of the line a JAR here is built for carries
	// its package unrelocated, the host's does not, and nothing else
	// provides it (a JAR relied on its own line's flink-dist).
	Dropped bool
	// OwnCode: the class naming it is of the JAR's own code (its entry
	// points' namespaces), not code it bundles.
	OwnCode bool
	// ClusterProvided: a parent-first pattern leaves it to the cluster's
	// class path beyond lib (Hadoop's).
	ClusterProvided bool
	// Undeclared: the JAR's POM does not declare a runtime dependency
	// whose group covers it (it is provided or optional: the user adds it).
	Undeclared bool
	// PlannerOnly: a class only Flink's planner holds, which the planner
	// loader keeps from lib.
	PlannerOnly bool
	// HostProvides: the host's own JARs hold its package (Flink's own
	// code): the host's API changed under the JAR.
	HostProvides bool
	// JARSeverity is the JAR's (jar.sev): an error for payloads, the stock
	// JARs they require and usrlib's job JARs, a warning otherwise.
	JARSeverity Severity
	// MustLoad: the JAR is a payload, or a stock JAR a payload requires.
	MustLoad bool
	// InLib: the JAR is a plugin's, and lib has the class, but the
	// plugin's class loader does not look in lib for it (no plugin
	// parent-first pattern covers it).
	InLib bool
	// Plugin: the JAR is a plugin's, entered only through Flink's services.
	Plugin bool
	// Root: the class naming it is an entry point (a plugin's: a provider
	// Flink's PluginLoader instantiates and calls whenever the plugin is
	// used).
	Root bool
}

// missingVerdict is judgeMissing's answer.
type missingVerdict int

const (
	// missingQuiet: it fails where the JAR belongs too (bundled code's,
	// the cluster's, an undeclared library): not reported.
	missingQuiet missingVerdict = iota
	// missingReported: reported now, with the severity given.
	missingReported
	// missingIfRequired: a library nothing on the classpath provides,
	// reported (with the severity given) only when the JAR's own code is
	// built on it (requiresLibrary), which is known once every reachable
	// class is seen.
	missingIfRequired
)

// judgeMissing is the linkage-class policy: whether a class that does not
// load is reported, and how severely. Severity follows consequence: an
// error where the host's own API changed under the JAR; the JAR's own
// severity where the classpath lacks a class of a package it has, or a
// plugin's provider names a class its class loader does not have; a
// library nothing provides is one the user may be meant to add, a warning,
// unless a JAR that must load is built on it.
func judgeMissing(m missingClass) (missingVerdict, Severity) {
	switch {
	case m.Plugin && m.Root:
		// A plugin's provider (its factory) names a class its loader
		// does not have: Flink fails whenever it uses the plugin (real
		// Flink: NoClassDefFoundError when it opens the location), wherever
		// else lib may hold the class (InLib says so in the message).
		return missingReported, m.JARSeverity
	case m.Plugin && !m.HostProvides:
		// Deeper code of a plugin, its own (the paths of other schemes:
		// the hdfs code of an s3 plugin) or bundled (Hadoop, an SDK),
		// naming what the plugin does not hold: a path the plugin does not
		// take on any host, not the host's doing (real 2.2.0 opens s3 with
		// the 2.1.1 plugin, whose bundled Hadoop names lib's lz4). Flink's
		// own API gone from the host is judged as for any JAR.
		return missingQuiet, ""
	case !m.Provided && !m.Dropped && (!m.OwnCode || m.ClusterProvided || m.Undeclared):
		return missingQuiet, ""
	case m.Dropped:
		return missingReported, m.JARSeverity
	case m.Provided && m.PlannerOnly:
		return missingReported, m.JARSeverity
	case m.Provided && m.HostProvides:
		return missingReported, Error
	case m.Provided:
		return missingReported, m.JARSeverity
	case m.MustLoad:
		return missingIfRequired, Error
	}
	return missingIfRequired, Warning
}

// requiresLibrary: the JAR's own reachable class cannot load at all
// without the missing class's library, which nothing provides: its
// supertype lies in it.
func requiresLibrary(m missingClass, super bool) bool {
	return super && !m.Provided && m.OwnCode && !m.ClusterProvided && !m.Plugin // a plugin's are reported or quiet at once
}

// memberSeverity is the linkage-method and linkage-field policy: a member
// missing from Flink's own code (relocated libraries aside) of a JAR the
// host resolves against is the host's API changing under the JAR, an
// error; otherwise the JAR's severity.
func memberSeverity(jarSeverity Severity, hostsFlinkOwn bool) Severity {
	if hostsFlinkOwn {
		return Error
	}
	return jarSeverity
}
