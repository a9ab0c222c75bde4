package admission

import (
	"fmt"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Symbol is the JVM symbol a shadowing, linkage or bytecode-version
// finding is about, in the JVM's own names.
type Symbol struct {
	Kind       string `json:"kind"`       // class, method, field, version, shadow
	From       string `json:"from"`       // the referencing class (internal name a/b/C)
	Owner      string `json:"owner"`      // the referenced class (internal name)
	Name       string `json:"name"`       // member name, or empty
	Descriptor string `json:"descriptor"` // JVM descriptor, or empty
	JAR        string `json:"jar"`        // the referencing JAR; for a shadow, the JAR whose copy the loader takes
	// Classes are every class a shadowing finding is about: the hidden
	// ones, in name order (From and Owner are the first).
	Classes []string `json:"classes,omitempty"`
}

// Symbol kinds.
const (
	SymClass   = "class"
	SymMethod  = "method"
	SymField   = "field"
	SymVersion = "version"
	SymShadow  = "shadow"
)

// deepJAR is one JAR of the deep facts with what the rules derive of it.
type deepJAR struct {
	jar     *payload.JAR
	archive *payload.Archive
	loader  *jvm.Loader
	usrlib  bool
	host    bool     // the host's own: not judged, only resolved against
	sev     Severity // of its findings
	// mustLoad: a payload or a stock JAR a payload requires, whose own
	// code must load (a library it is built on absent is an error).
	mustLoad bool
	builtFor string // "Flink A.B (evidence)" from its stock identity, or ""
	plugin   string // the plugin folder's name, for a plugin's JAR
	// roots are its entry points when not all of jvm.EntryPoints are
	// (a plugin's: the providers of Flink's services only).
	roots []string
}

// linkage is what the deep rules found, computed once per decision.
type linkage struct {
	shadow, class, method, field, version []Finding
	// cp is the class path model the findings were made on (nil from a
	// baked verdict): the other deep rules read it rather than index lib
	// again.
	cp *jvm.Classpath
}

func (v *view) linkage() *linkage {
	if v.link != nil || v.Deep == nil {
		return v.link
	}
	v.link = &linkage{}
	if v.Deep.Err != nil {
		return v.link
	}
	if v.Deep.Baked != nil {
		v.link = v.bakedLinkage() // baked.go
		return v.link
	}
	cp := newClasspath(v.Deep)
	v.link.cp = cp
	var jars []*deepJAR
	for i, a := range v.Deep.Lib {
		if a != nil && i < len(v.Classpath) {
			jars = append(jars, v.deepJAR(v.Classpath[i], a, cp.Lib, false))
		}
	}
	for i, a := range v.Deep.Usrlib {
		if a != nil && i < len(v.Usrlib) {
			jars = append(jars, v.deepJAR(v.Usrlib[i], a, cp.Usrlib, true))
		}
	}
	r := &resolver{cp: cp, packages: lazy(func() map[string]bool { return packages(jars) }), maxMajor: v.maxClassMajor(), line: v.line(),
		hostPackages: lazy(func() map[string]bool { return hostPackages(jars) }), parentFirst: v.Deep.ParentFirst}
	var judge []*deepJAR
	for _, j := range jars {
		if !j.host {
			judge = append(judge, j)
		} else {
			cp.ResolveOnly(j.archive)
		}
	}
	v.link.shadow = v.shadowing(cp, jars, false)
	r.dropped = v.droppedPackages(judge)
	r.judge(judge, v.link)
	v.judgePlugins(cp, jars, v.link)
	return v.link
}

// hostOwn says whether a JAR is the host's own: flink-dist, the planner,
// an in-tree Flink module of the host's release (Implementation-Vendor-Id
// org.apache.flink, Implementation-Version the planner's), and the Log4j
// JARs Flink ships (Bundle-SymbolicName org.apache.logging.log4j.*).
func (v *view) hostOwn(j *payload.JAR) bool { return HostOwn(j, v.flink) }

// HostOwn says whether a JAR is the host's own (view.hostOwn) on a host
// of the Flink release flink ("" when not known).
func HostOwn(j *payload.JAR, flink string) bool {
	name := path.Base(j.Path)
	if IsDist(name) || isPlannerLoader(name) || isPlannerScala(name) {
		return true
	}
	if j.ManifestValue("Implementation-Vendor-Id") == "org.apache.flink" && flink != "" &&
		j.ManifestValue("Implementation-Version") == flink {
		return true
	}
	return strings.HasPrefix(j.ManifestValue("Bundle-SymbolicName"), "org.apache.logging.log4j")
}

func (v *view) deepJAR(j *payload.JAR, a *payload.Archive, l *jvm.Loader, usrlib bool) *deepJAR {
	d := &deepJAR{jar: j, archive: a, loader: l, usrlib: usrlib, sev: Warning}
	d.host = !usrlib && v.hostOwn(j)
	if usrlib || v.byPath[j.Path] != nil || v.stockRequired(j) {
		d.sev = Error
	}
	d.mustLoad = !usrlib && (v.byPath[j.Path] != nil || v.stockRequired(j))
	if s := v.stockOf[j.Path]; s != nil && s.Line != "" {
		d.builtFor = "Flink " + s.Line + " (" + s.Evidence + ")"
	}
	return d
}

// stockRequired: a payload's StreamFusion-Stock-Requires names the JAR.
func (v *view) stockRequired(j *payload.JAR) bool {
	for _, id := range v.ids {
		for _, prefix := range id.Stock {
			if prefix != "" && strings.HasPrefix(path.Base(j.Path), prefix) {
				return true
			}
		}
	}
	return false
}

// maxClassMajor is the newest class file version the host JDK loads; 0
// when the JDK is not known.
func (v *view) maxClassMajor() int {
	if v.java == nil {
		return 0
	}
	return v.java.Major + 44
}

// shadowing reports the classes the loaders take from one JAR where
// another holds a different copy (jvm.Classpath.Shadowed), with the
// severity their consequence has: one finding per pair of JARs, every
// hidden class in its symbol. With usrlibOnly (a baked verdict holds
// lib's own findings), lib's shadowing within itself is not looked for.
func (v *view) shadowing(cp *jvm.Classpath, jars []*deepJAR, usrlibOnly bool) []Finding {
	var out []Finding
	byArchive := map[*payload.Archive]*deepJAR{}
	for _, j := range jars {
		byArchive[j.archive] = j
	}
	shadowed := cp.Shadowed
	if usrlibOnly {
		shadowed = cp.UsrlibShadowed
	}
	within, between := shadowed()
	for _, h := range within {
		winner, loser := byArchive[h.Winner], byArchive[h.Loser]
		where, how := "lib", "comes first in lib"
		if winner.usrlib {
			where, how = "usrlib", "comes first in usrlib"
		}
		sev, why := v.shadowConsequence(cp, winner, loser, h.Classes, true)
		out = append(out, v.shadowFinding(winner, loser, h.Classes, where, how, sev, why))
	}
	for _, h := range between {
		winner, loser := byArchive[h.Winner], byArchive[h.Loser]
		if winner.usrlib {
			sev, why := v.shadowConsequence(cp, winner, loser, h.Classes, false)
			out = append(out, v.shadowFinding(winner, loser, h.Classes, "usrlib", "is loaded child-first from usrlib", sev, why))
		} else {
			// The JVM takes lib's copy, which the host expects: the job's
			// own copy is what is lost (a warning; what the job's code
			// cannot then link is the linkage rules' to say).
			out = append(out, v.shadowFinding(winner, loser, h.Classes, "usrlib", "is loaded parent-first from lib", Warning, ""))
		}
	}
	return out
}

// shadowExamples is how many hidden classes a message names.
const shadowExamples = 3

// shadowFinding: winner's copies of names hide loser's, of severity sev
// (shadowConsequence), why the consequence that makes it an error. The
// symbol names the first class (from, owner) and lists every hidden one
// (classes); the message names how many and the first few.
func (v *view) shadowFinding(winner, loser *deepJAR, names []string, where, how string, sev Severity, why string) Finding {
	first := names[0]
	subject := javaName(first)
	if len(names) > 1 {
		var ex []string
		for _, n := range names[:min(shadowExamples, len(names))] {
			ex = append(ex, javaName(n))
		}
		more := ""
		if len(names) > shadowExamples {
			more = ", ..."
		}
		subject = fmt.Sprintf("%d classes (%s%s)", len(names), strings.Join(ex, ", "), more)
		how = strings.Replace(how, "comes", "come", 1)
		how = strings.Replace(how, "is loaded", "are loaded", 1)
	}
	at, fix := winner.jar.Path, "remove "+path.Base(winner.jar.Path)+" or the JAR it duplicates, or use a build of it that relocates (shades) the classes it bundles"
	if !winner.usrlib && loser.usrlib {
		// The job's copies are the ones lost.
		at, fix = loser.jar.Path, "leave the classes lib provides out of "+path.Base(loser.jar.Path)+" (provided scope in its build), or relocate (shade) them"
	}
	found := fmt.Sprintf("%s with different contents in %s (first: CRC %08x, %d bytes) and %s (CRC %08x, %d bytes)", plural(len(names), "class"), winner.jar.Path, winner.archive.Classes[first].CRC, winner.archive.Classes[first].Size, loser.jar.Path, loser.archive.Classes[first].CRC, loser.archive.Classes[first].Size)
	if why != "" {
		found += "; " + why
	} else if sev == Warning {
		found += "; every use of them on the classpath resolves in the copies loaded"
	}
	return Finding{Severity: sev, Path: at,
		Message:  fmt.Sprintf("%s %s and hide%s a different copy in %s", subject, how, map[bool]string{true: "", false: "s"}[len(names) > 1], loser.jar.Path),
		Found:    found,
		Required: "each class once on the " + where + " classpath, or identical copies",
		Fix:      fix,
		Symbol:   &Symbol{Kind: SymShadow, From: first, Owner: first, JAR: winner.jar.Path, Classes: names}}
}

// resolver judges what the classpath model says of the references of the
// classes of non-host JARs.
type resolver struct {
	cp           *jvm.Classpath
	hostPackages func() map[string]bool // packages the host's own JARs provide (lazy)
	packages     func() map[string]bool // packages some JAR on the classpath provides (lazy)
	parentFirst  []string               // usrlib's parent-first patterns (clusterProvided)
	maxMajor     int
	line         string // the host's Flink line, for the fix
	// dropped are the packages the flink-dist of another line carries
	// that a JAR on the classpath is built for (DistPackages), by package.
	dropped map[string]droppedBy
}

type droppedBy struct{ line, jar string }

// droppedPackages: for every judged JAR built for a Flink line other than
// the host's (its stock identity), the packages that line's flink-dist
// carries outside org.apache.flink. Only the ones nothing on this
// classpath provides matter (the caller asks for those).
func (v *view) droppedPackages(js []*deepJAR) map[string]droppedBy {
	host := v.line()
	if sv, ok := ParseStockVersion(v.flink); host == "" && ok && !sv.Connector {
		host = sv.Line // a release outside the support matrix
	}
	if host == "" {
		return nil
	}
	out := map[string]droppedBy{}
	for _, j := range js {
		s := v.stockOf[j.jar.Path]
		if s == nil || s.Line == "" || s.Line == host {
			continue
		}
		for _, p := range DistPackages(s.Line) {
			if _, ok := out[p]; !ok {
				out[p] = droppedBy{s.Line, path.Base(j.jar.Path)}
			}
		}
	}
	return out
}

// packages are the packages every JAR of lib and usrlib holds classes of.
func packages(jars []*deepJAR) map[string]bool {
	out := map[string]bool{}
	for _, j := range jars {
		for name := range j.archive.Classes {
			out[pkg(name)] = true
		}
	}
	return out
}

// lazy makes a set at its first use: a package set of every class of
// every JAR costs a map insert per class, and only a class that does not
// load asks for one (most checks have none).
func lazy(build func() map[string]bool) func() map[string]bool { return sync.OnceValue(build) }

func pkg(name string) string {
	if i := strings.LastIndexByte(name, '/'); i >= 0 {
		return name[:i]
	}
	return ""
}

// judged is a JAR that is not the host's own, with what judging its
// classes needs and gathers.
type judged struct {
	j        *deepJAR
	own      namespaces
	groups   []string // its POM's runtime groups
	hasPOM   bool
	fix      string
	required map[string]bool // libraries its own reachable code is built on
	absent   []pending       // findings waiting for required
	newer    []*classfile.Class
	roots    map[string]bool // its entry points
}

type pending struct {
	f       Finding
	library string
}

// library is the namespace a class's library occupies: its package's first
// four segments (org/apache/kafka/clients, org/apache/kafka/common).
func library(class string) string {
	parts := strings.Split(pkg(class), "/")
	return strings.Join(parts[:min(4, len(parts))], "/")
}

// namespaces are the packages of a JAR's own code: those of its entry
// points, cut to their first three segments, the project's (org/apache/flink,
// com/acme/jobs): a connector's factories in org.apache.flink.streaming
// and its sources in org.apache.flink.connector are one project's code.
// Code a JAR bundles from elsewhere lies outside them, relocated or not
// (Kafka's clients in the fat SQL connector, at
// org/apache/flink/kafka/shaded/...); a package with a segment named
// "shaded" or "shade" (Paimon's relocations) is never a JAR's own.
type namespaces map[string]bool

func namespace(class string) (string, bool) {
	// Without splitting: this runs for every reference judged.
	p := pkg(class)
	cut, segs := len(p), 0
	for rest, start := p, 0; ; {
		i := strings.IndexByte(rest, '/')
		seg := rest
		if i >= 0 {
			seg = rest[:i]
		}
		if seg == "shaded" || seg == "shade" {
			return "", false
		}
		segs++
		if segs == 3 && i >= 0 {
			cut = start + i
		}
		if i < 0 {
			break
		}
		start += i + 1
		rest = rest[i+1:]
	}
	return p[:cut], true
}

func (n namespaces) add(class string) {
	if ns, ok := namespace(class); ok {
		n[ns] = true
	}
}

func (n namespaces) has(class string) bool {
	ns, ok := namespace(class)
	return ok && n[ns]
}

// judge resolves every reference of the classes reachable from the entry
// points of the JARs that are not the host's own (js), each class in the
// context of the JAR that holds it: its own code's namespaces, its POM,
// its severity and fix.
func (r *resolver) judge(js []*deepJAR, out *linkage) {
	// A library nothing on the classpath provides is one the JAR requires
	// when its own classes are built on it: a supertype of a reachable
	// class of its own code lies in it, so that class cannot load at all.
	// References into other absent libraries stay quiet: optional paths
	// (Oracle types in the JDBC dialects, Joda in Avro's converters) that
	// fail where the JAR belongs too. Which libraries are required is known
	// once every reachable class is seen: until then such findings wait.
	var all []*judged
	var scopes []jvm.Scope
	for _, j := range js {
		jd := &judged{j: j, own: namespaces{}, fix: fixFor(j, r.line), required: map[string]bool{}}
		roots := j.roots
		if roots == nil {
			roots = jvm.EntryPoints(j.jar, j.archive)
		}
		jd.roots = map[string]bool{}
		for _, root := range roots {
			jd.own.add(root)
			jd.roots[root] = true
		}
		jd.groups, jd.hasPOM = runtimeGroups(j)
		all = append(all, jd)
		scopes = append(scopes, jvm.Scope{JAR: j.archive, Loader: j.loader, Roots: roots})
	}
	reported := map[jvm.Edge]bool{}
	r.cp.Reachable(scopes, func(i int, c *classfile.Class) {
		jd := all[i]
		j, own := jd.j, jd.own
		if r.maxMajor > 0 && int(c.Major) > r.maxMajor {
			jd.newer = append(jd.newer, c)
		}
		bundled := func(owner string) bool {
			// Bundled code calling bundled code of the same JAR (Paimon's
			// shaded ORC and Parquet): a disagreement inside the JAR
			// fails on every host, it is not the host's doing.
			return !own.has(c.Name) && !own.has(owner) && j.loader.Find(owner) == j.archive
		}
		r.cp.Resolve(j.loader, c, func(owner string) bool { return !bundled(owner) }, func(u jvm.Unresolved) {
			if u.Ref == nil {
				if requiresLibrary(r.missing(jd, c, u.Class.Missing), u.Super) {
					jd.required[library(u.Class.Missing)] = true
				}
				r.classFailed(jd, c, u.Class, u.Super, reported, out)
				return
			}
			r.memberFailed(jd, c, u, out)
		})
	})
	for _, jd := range all {
		for _, p := range jd.absent {
			if jd.required[p.library] {
				out.class = append(out.class, p.f)
			}
		}
		if len(jd.newer) == 0 {
			continue
		}
		j, c := jd.j, jd.newer[0]
		out.version = append(out.version, Finding{Severity: j.sev, Path: j.jar.Path,
			Message:  fmt.Sprintf("%s is compiled for a newer Java than the host's", javaName(c.Name)),
			Found:    fmt.Sprintf("class file version %d (Java %d) in %s reachable from entry points", c.Major, int(c.Major)-44, plural(len(jd.newer), "class")),
			Required: fmt.Sprintf("class file version %d (Java %d) or older", r.maxMajor, r.maxMajor-44),
			Fix:      "use a build of " + path.Base(j.jar.Path) + " compiled for the host's Java, or a Flink image with a newer JDK",
			Symbol:   &Symbol{Kind: SymVersion, From: c.Name, Owner: c.Name, JAR: j.jar.Path}})
	}
}

// memberFailed reports u, a member reference of c (a reachable class of
// jd's JAR) that does not resolve, with memberSeverity's severity.
func (r *resolver) memberFailed(jd *judged, c *classfile.Class, u jvm.Unresolved, out *linkage) {
	j, fix := jd.j, jd.fix
	ref, owner, looked := *u.Ref, u.Ref.Owner, u.Looked
	kind, list := SymMethod, &out.method
	member := javaMember(ref)
	if ref.Kind == classfile.Field {
		kind, list = SymField, &out.field
	}
	where := "its class"
	if len(looked) > 1 {
		var ns []string
		for _, n := range looked[1:] {
			ns = append(ns, simpleName(n))
		}
		where = "the class, then " + strings.Join(ns, ", ")
	}
	in := ""
	if u.In != nil {
		in = " in " + u.In.Path
	}
	hostsFlinkOwn := u.In != nil && r.cp.IsResolvedOnly(u.In) && flinkOwn(owner)
	sev, what := memberSeverity(j.sev, hostsFlinkOwn), "no "+member+" in "+javaName(owner)+in+" (looked in "+where+")"
	if hostsFlinkOwn {
		what += "; " + r.builtFor(j)
	}
	*list = append(*list, Finding{Severity: sev, Path: j.jar.Path,
		Message:  simpleName(c.Name) + " uses " + member + ", which the host does not have",
		Found:    what,
		Required: member + ", as " + path.Base(j.jar.Path) + " was built against it",
		Fix:      fix,
		Symbol:   &Symbol{Kind: kind, From: c.Name, Owner: owner, Name: ref.Name, Descriptor: ref.Descriptor, JAR: j.jar.Path}})
}

// classFailed reports e, a class that does not load, named by c, a
// reachable class of jd's JAR (super: as its superclass or an interface,
// else an instruction of c names it), as judgeMissing decides.
func (r *resolver) classFailed(jd *judged, c *classfile.Class, e jvm.Edge, super bool, reported map[jvm.Edge]bool, out *linkage) {
	j, fix := jd.j, jd.fix
	if e.From == "" {
		e.From = c.Name
	} else {
		super = true // a supertype deeper in the hierarchy
	}
	missing := e.Missing
	m := r.missing(jd, c, missing)
	verdict, sev := judgeMissing(m)
	if verdict == missingQuiet || reported[e] {
		return
	}
	reported[e] = true
	in := j.jar.Path // the JAR of the class naming the missing one
	if e.From != c.Name {
		if a := j.loader.Find(e.From); a != nil {
			in = a.Path
		}
	}
	f := classFinding(j, e, c.Name, in, fix, super)
	f.Severity = sev
	switch {
	case m.Dropped:
		// The flink-dist of the line a JAR on the classpath is
		// built for carries the library: the JAR relied on it.
		dropped := r.dropped[pkg(missing)]
		f.Found += "; flink-dist of Flink " + dropped.line + " carries " + javaName(pkg(missing)) + " unrelocated, the host's does not"
		f.Fix = "add the library of " + javaName(pkg(missing)) + " to lib (" + dropped.jar + " is built for Flink " + dropped.line + ", whose flink-dist carries it), or " + fix
	case m.Provided && m.PlannerOnly:
		f.Fix = plannerFix(missing)
	case m.Provided && m.HostProvides:
		f.Found += "; " + r.builtFor(j)
	case m.InLib:
		f.Found += "; lib has it (" + r.cp.Lib.Find(missing).Path + "), where a plugin's class loader looks only for the classes of its parent-first patterns"
		f.Fix = "put the JAR with " + javaName(missing) + " into " + path.Dir(in) + "/ beside " + path.Base(in) + " (a plugin brings its own libraries), or add " + javaName(pkg(missing)) + ". to " + keyPluginParentFirstAdditional + " if the plugin must share lib's copy"
	case verdict == missingIfRequired:
		f.Fix = "add the JAR that provides " + javaName(library(missing)) + " to lib beside " + path.Base(in) + ", which is built against it (a dependency it declares)"
		if j.usrlib {
			f.Fix = "bundle the JAR that provides " + javaName(library(missing)) + " in " + path.Base(in) + ", or add it to lib"
		}
	}
	if verdict == missingIfRequired {
		jd.absent = append(jd.absent, pending{f, library(missing)})
		return
	}
	out.class = append(out.class, f)
}

// missing gathers what judgeMissing decides on for a class that c, a
// reachable class of jd's JAR, cannot load.
func (r *resolver) missing(jd *judged, c *classfile.Class, missing string) missingClass {
	provided := r.packages()[pkg(missing)] || hostAPI(missing)
	_, dropped := r.dropped[pkg(missing)]
	return missingClass{
		Provided:        provided,
		Dropped:         dropped && !provided,
		OwnCode:         jd.own.has(c.Name),
		ClusterProvided: clusterProvided(r.parentFirst, missing),
		Undeclared:      jd.hasPOM && !declares(jd.groups, missing),
		PlannerOnly:     plannerOnly(missing),
		HostProvides:    r.hostProvides(missing),
		JARSeverity:     jd.j.sev,
		MustLoad:        jd.j.mustLoad,
		InLib:           jd.j.plugin != "" && r.cp.Lib.Find(missing) != nil,
		Plugin:          jd.j.plugin != "",
		Root:            jd.roots[c.Name],
	}
}

// classFinding is a linkage-class finding's sentences: e.From (in the JAR
// at in) names e.Missing, which does not load; from is the reachable class
// the walk came from; fix is the JAR's. Severity is the caller's.
func classFinding(j *deepJAR, e jvm.Edge, from, in, fix string, super bool) Finding {
	missing := e.Missing
	where := "on the classpath"
	if j.plugin != "" {
		where = "in its plugin's class loader"
	}
	msg := simpleName(e.From) + " uses " + javaName(missing) + ", which has no class file " + where
	if super {
		msg = simpleName(e.From) + " does not load: its supertype " + javaName(missing) + " has no class file " + where
	}
	if e.From != from {
		msg += " (reached from " + simpleName(from) + ")"
	}
	return Finding{Path: in,
		Message:  msg,
		Found:    "no " + javaName(missing) + " in " + searched(j.loader, missing) + " or the JDK",
		Required: javaName(missing) + " on the classpath, as " + path.Base(in) + " was built against it",
		Fix:      fix,
		Symbol:   &Symbol{Kind: SymClass, From: e.From, Owner: missing, JAR: in}}
}

// hostAPI: a class of Flink's own API and runtime (org.apache.flink outside
// the connector and format namespaces and Flink CDC's, which are artifacts
// of their own,
// and outside the planner, which lib never sees): its package gone from
// the host is the host's API changing under the JAR (Flink 2 dropped
// org.apache.flink.table.api.constraints), not an optional library left out.
func hostAPI(class string) bool {
	if !strings.HasPrefix(class, "org/apache/flink/") || slices.Contains(strings.Split(pkg(class), "/"), "shaded") {
		return false
	}
	for _, p := range []string{"org/apache/flink/connector/", "org/apache/flink/connectors/", "org/apache/flink/streaming/connectors/",
		"org/apache/flink/formats/", "org/apache/flink/table/planner/", "org/apache/flink/cdc/"} {
		if strings.HasPrefix(class, p) {
			return false
		}
	}
	return true
}

// runtimeGroups are the groups (as package paths: org/apache/kafka/) of the
// libraries a JAR's own POM (the embedded pom.xml of the artifact its file
// name starts with) needs at run time: compile or runtime scope, not
// optional. ok is false when the JAR embeds no POM of its own.
func runtimeGroups(j *deepJAR) (groups []string, ok bool) {
	base, best := path.Base(j.jar.Path), ""
	for _, p := range j.archive.POMs {
		parts := strings.Split(p, "/") // META-INF/maven/<group>/<artifact>/pom.xml
		if len(parts) == 5 && strings.HasPrefix(base, parts[3]+"-") && len(p) > len(best) {
			best = p
		}
	}
	if best == "" {
		return nil, false
	}
	data, err := j.archive.File(best)
	if err != nil {
		return nil, false
	}
	return pomRuntimeGroups(string(data), strings.Split(best, "/")[2]), true
}

// pomRuntimeGroups reads the project's own <dependencies> of a pom.xml:
// the group of each dependency of compile or runtime scope, not optional,
// as a package path; own replaces ${...} groups. A scan of the elements
// it needs, not an XML parser: the entrypoint links no encoding/xml, and
// what a malformed POM yields is only fewer groups (FuzzPOMRuntimeGroups).
func pomRuntimeGroups(pom, own string) []string {
	// The sections whose <dependency> elements are not the project's own.
	for _, sec := range []string{"!--", "dependencyManagement", "build", "profiles", "reporting", "exclusions"} {
		open, end := "<"+sec, "</"+sec+">"
		if sec == "!--" {
			end = "-->"
		}
		var b strings.Builder
		rest := pom
		for {
			before, after, found := strings.Cut(rest, open)
			b.WriteString(before)
			if !found {
				break
			}
			_, rest, found = strings.Cut(after, end)
			if !found {
				break
			}
		}
		pom = b.String()
	}
	text := func(block, name string) string {
		_, v, ok := strings.Cut(block, "<"+name+">")
		if !ok {
			return ""
		}
		v, _, _ = strings.Cut(v, "</"+name+">")
		return strings.TrimSpace(v)
	}
	var groups []string
	rest := pom
	for {
		_, after, found := strings.Cut(rest, "<dependency>")
		if !found {
			return groups
		}
		block, next, _ := strings.Cut(after, "</dependency>")
		rest = next
		scope, g := text(block, "scope"), text(block, "groupId")
		if (scope != "" && scope != "compile" && scope != "runtime") || text(block, "optional") == "true" || g == "" {
			continue
		}
		if strings.HasPrefix(g, "${") {
			g = own // ${project.groupId}
		}
		groups = append(groups, strings.ReplaceAll(g, ".", "/")+"/")
	}
}

// declares says whether one of groups covers class.
func declares(groups []string, class string) bool {
	return slices.ContainsFunc(groups, func(g string) bool { return strings.HasPrefix(class, g) })
}

// fixFor names what to install instead: the JAR's Maven coordinates
// (Implementation-Vendor-Id as the group, the file name less its
// Implementation-Version as the artifact, else the path of an embedded
// POM), in a release built for the host's Flink line.
func fixFor(j *deepJAR, line string) string {
	base := path.Base(j.jar.Path)
	target := "the host's Flink release"
	if line != "" {
		target = "Flink " + line
	}
	group, version := j.jar.ManifestValue("Implementation-Vendor-Id"), j.jar.ManifestValue("Implementation-Version")
	if artifact, ok := strings.CutSuffix(base, "-"+version+".jar"); ok && group != "" && version != "" {
		if j.usrlib {
			return "rebuild the job against " + target + ", with the connectors built for it (" + group + ":" + artifact + " is " + version + " here)"
		}
		return "install " + group + ":" + artifact + " in a release built for " + target + " instead of " + version
	}
	for _, p := range j.archive.POMs {
		parts := strings.Split(p, "/") // META-INF/maven/<group>/<artifact>/pom.xml
		if len(parts) == 5 && strings.HasPrefix(base, parts[3]) {
			return "install " + parts[2] + ":" + parts[3] + " in a release built for " + target + " instead of " + base
		}
	}
	if j.usrlib {
		return "rebuild the job against " + target + ", with the connectors built for it"
	}
	return "install the build of " + base + " made for " + target + ", with the dependencies it declares"
}

// javaName is a class's binary name in Java syntax (a.b.C$D).
func javaName(internal string) string { return strings.ReplaceAll(internal, "/", ".") }

func simpleName(internal string) string {
	n := internal[strings.LastIndexByte(internal, '/')+1:]
	return n
}

// javaMember renders a member reference in Java syntax:
// Owner.name(ParamType, ...) for methods, Owner.name for fields; types by
// simple name.
func javaMember(ref classfile.Ref) string {
	owner := simpleName(ref.Owner)
	if ref.Kind == classfile.Field {
		return owner + "." + ref.Name
	}
	params, _ := descriptorParams(ref.Descriptor)
	return owner + "." + ref.Name + "(" + strings.Join(params, ", ") + ")"
}

// descriptorParams lists a method descriptor's parameter types in Java
// syntax, simple names.
func descriptorParams(desc string) ([]string, bool) {
	if !strings.HasPrefix(desc, "(") {
		return nil, false
	}
	var out []string
	s := desc[1:]
	for len(s) > 0 && s[0] != ')' {
		dims := 0
		for len(s) > 0 && s[0] == '[' {
			dims++
			s = s[1:]
		}
		if s == "" {
			return out, false
		}
		var t string
		switch s[0] {
		case 'L':
			end := strings.IndexByte(s, ';')
			if end < 0 {
				return out, false
			}
			t = simpleName(s[1:end])
			s = s[end+1:]
		default:
			t = map[byte]string{'B': "byte", 'C': "char", 'D': "double", 'F': "float", 'I': "int", 'J': "long", 'S': "short", 'Z': "boolean"}[s[0]]
			if t == "" {
				return out, false
			}
			s = s[1:]
		}
		out = append(out, t+strings.Repeat("[]", dims))
	}
	return out, true
}

// The deep rules: one computation, split by rule.

func classpathShadowed(v *view) []Finding {
	return v.linkage().get(func(l *linkage) []Finding { return l.shadow })
}
func linkageClass(v *view) []Finding {
	return v.linkage().get(func(l *linkage) []Finding { return l.class })
}
func linkageMethod(v *view) []Finding {
	return v.linkage().get(func(l *linkage) []Finding { return l.method })
}
func linkageField(v *view) []Finding {
	return v.linkage().get(func(l *linkage) []Finding { return l.field })
}
func bytecodeVersion(v *view) []Finding {
	return v.linkage().get(func(l *linkage) []Finding { return l.version })
}

func (l *linkage) get(f func(*linkage) []Finding) []Finding {
	if l == nil {
		return nil
	}
	return f(l)
}
