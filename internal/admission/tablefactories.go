package admission

import (
	"fmt"
	"maps"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/sqlscan"
)

// tableFactoryService is the service Flink's FactoryUtil discovers table
// factories by (connectors, formats, catalogs, modules).
const tableFactoryService = "org.apache.flink.table.factories.Factory"

// maxFactoryHierarchy bounds the supertypes walked for a factory's kinds.
const maxFactoryHierarchy = 64

// tableProvider is one Factory provider a service file names, with the
// loader that reads it.
type tableProvider struct {
	class  string // internal name
	jar    string // the JAR whose service file names it
	loader *jvm.Loader
	where  string // "lib" or "usrlib"
}

// tableProviders lists the Factory providers of lib's JARs (read by every
// class loader: the user code loader's parent) and of usrlib's (read by
// the jobs' loader).
func tableProviders(v *view, cp *jvm.Classpath) []tableProvider {
	var out []tableProvider
	add := func(jars []*payload.JAR, archives []*payload.Archive, l *jvm.Loader, where string) {
		for i, a := range archives {
			if a == nil || i >= len(jars) || !slices.Contains(a.Services, "META-INF/services/"+tableFactoryService) {
				continue
			}
			data, err := a.File("META-INF/services/" + tableFactoryService)
			if err != nil {
				continue
			}
			for _, c := range payload.ServiceClasses(data) {
				out = append(out, tableProvider{class: c, jar: jars[i].Path, loader: l, where: where})
			}
		}
	}
	add(v.Classpath, v.Deep.Lib, cp.Lib, "lib")
	add(v.Usrlib, v.Deep.Usrlib, cp.Usrlib, "usrlib")
	return out
}

// tableFactoriesReadable says whether the deep facts hold the JARs' service
// files: not from a baked class index, which keeps classes only.
func tableFactoriesReadable(v *view) bool {
	return v.Deep != nil && v.Deep.Err == nil && v.Deep.Baked == nil
}

// tableAnalysis is what both table factory rules read: every provider,
// whether its loader finds it, and the identifier and kinds of those it
// does; made once per decision, on the linkage rules' class path model.
type tableAnalysis struct {
	missing []tableProvider
	answers []tableAnswer
	// unlisted are the factories no service file lists, by JAR.
	unlisted []unlistedFactories
	// computed are the providers found of a kind FactoryUtil is asked for
	// whose identifier is no constant this check reads: any identifier may
	// be theirs.
	computed []tableProvider
}

// unlistedFactories are one JAR's factory classes that no Factory service
// file on the class path lists.
type unlistedFactories struct {
	jar       string
	factories []tableAnswer
}

type tableAnswer struct {
	p     tableProvider
	id    string
	kinds []string
}

func (v *view) tableFactories() *tableAnalysis {
	if v.tables != nil {
		return v.tables
	}
	v.tables = &tableAnalysis{}
	if !tableFactoriesReadable(v) {
		return v.tables
	}
	cp := v.linkage().cp
	if cp == nil {
		cp = newClasspath(v.Deep)
	}
	listed := map[string]bool{}
	for _, p := range tableProviders(v, cp) {
		listed[p.class] = true
		if p.loader.Find(p.class) == nil {
			v.tables.missing = append(v.tables.missing, p)
			continue
		}
		if id := factoryIdentifier(p.loader, p.class); id != "" {
			v.tables.answers = append(v.tables.answers, tableAnswer{p: p, id: id, kinds: factoryKinds(cp, p.loader, p.class)})
		} else if len(factoryKinds(cp, p.loader, p.class)) > 0 {
			// of a kind a statement's options are looked up among (not the
			// planner's and executor's factories, whose identifiers the
			// planner loader computes)
			v.tables.computed = append(v.tables.computed, p)
		}
	}
	v.tables.unlisted = unlistedTableFactories(v, cp, listed)
	return v.tables
}

// unlistedTableFactories finds, in each JAR but Flink's own modules, the
// concrete classes named *Factory that implement a kind FactoryUtil is
// asked for, answer a constant identifier, and that no Factory service
// file lists, where no listed factory answers that identifier for that
// kind: ServiceLoader never finds them. Only classes named *Factory are
// read (every factory of Flink and of the connectors and formats of the
// ecosystem corpus is), so a check parses a few classes per JAR, not all.
func unlistedTableFactories(v *view, cp *jvm.Classpath, listed map[string]bool) []unlistedFactories {
	var out []unlistedFactories
	scan := func(jars []*payload.JAR, archives []*payload.Archive, l *jvm.Loader, where string) {
		for i, a := range archives {
			if a == nil || i >= len(jars) {
				continue
			}
			if s := v.stockOf[jars[i].Path]; s != nil && s.Kind == StockModule {
				continue // Flink's own modules list what they mean to serve
			}
			var found []tableAnswer
			var named []string // the few classes named *Factory, sorted: not all of the JAR's
			for name := range a.Classes {
				if strings.HasSuffix(name, "Factory") {
					named = append(named, name)
				}
			}
			slices.Sort(named)
			for _, name := range named {
				if listed[name] || l.Find(name) != a {
					continue
				}
				c, err := cp.Class(a, name)
				if err != nil || c == nil || c.Access&(classfile.AccInterface|classfile.AccAbstract) != 0 {
					continue
				}
				kinds := factoryKinds(cp, l, name)
				if len(kinds) == 0 {
					continue
				}
				id := factoryIdentifier(l, name)
				if id == "" || v.tables.served(id, kinds) {
					continue
				}
				found = append(found, tableAnswer{p: tableProvider{class: name, jar: jars[i].Path, loader: l, where: where}, id: id, kinds: kinds})
			}
			if len(found) > 0 {
				out = append(out, unlistedFactories{jar: jars[i].Path, factories: found})
			}
		}
	}
	scan(v.Classpath, v.Deep.Lib, cp.Lib, "lib")
	scan(v.Usrlib, v.Deep.Usrlib, cp.Usrlib, "usrlib")
	return out
}

// served says whether a listed factory answers id for one of kinds.
func (t *tableAnalysis) served(id string, kinds []string) bool {
	for _, a := range t.answers {
		if a.id == id && slices.ContainsFunc(a.kinds, func(k string) bool { return slices.Contains(kinds, k) }) {
			return true
		}
	}
	return false
}

// tableFactoryUnlisted reports a JAR's factories that no Factory service
// file lists (an uber JAR whose build kept another JAR's service file in
// place of its own, or dropped it): Flink's FactoryUtil discovers table
// factories only through ServiceLoader, so a statement naming one of
// their identifiers fails with "Could not find any factory for
// identifier". A warning: a deployment that never names them works.
func tableFactoryUnlisted(v *view) []Finding {
	var out []Finding
	for _, u := range v.tableFactories().unlisted {
		var ids, classes []string
		for _, f := range u.factories {
			if q := "'" + f.id + "'"; !slices.Contains(ids, q) {
				ids = append(ids, q)
			}
			classes = append(classes, fmt.Sprintf("%s ('%s', %s)", javaName(f.p.class), f.id, strings.Join(javaNames(f.kinds), ", ")))
		}
		out = append(out, Finding{Severity: Warning, Path: u.jar,
			Message: fmt.Sprintf("its table factories for %s are listed by no META-INF/services/%s on the class path: Flink's factory discovery never finds them, and a statement naming %s fails with \"Could not find any factory for identifier %s\"",
				strings.Join(ids, ", "), tableFactoryService, strings.Join(ids, " or "), ids[0]),
			Found:    strings.Join(classes, "; ") + ", in no service file",
			Required: "each factory a statement names listed in its JAR's META-INF/services/" + tableFactoryService,
			Fix:      fmt.Sprintf("use a build of %s whose service file lists its factories (an uber JAR must merge the service files of what it bundles: maven-shade's ServicesResourceTransformer), or the connector's published SQL JAR", path.Base(u.jar))})
	}
	return out
}

func javaNames(internal []string) []string {
	out := make([]string, len(internal))
	for i, n := range internal {
		out[i] = javaName(n)
	}
	return out
}

// tableFactoryBroken reports a Factory service entry naming a class its
// class loader cannot find: ServiceLoader throws ServiceConfigurationError
// on it, and FactoryUtil turns that (anything but a NoClassDefFoundError)
// into "Unexpected error when trying to load service provider" for every
// factory it discovers: every SQL statement fails.
func tableFactoryBroken(v *view) []Finding {
	var out []Finding
	for _, p := range v.tableFactories().missing {
		out = append(out, Finding{Path: p.jar,
			Message:  fmt.Sprintf("its META-INF/services/%s names %s, which the %s class loader cannot find: Flink's factory discovery fails on it, and every SQL statement fails with \"Unexpected error when trying to load service provider\"", tableFactoryService, javaName(p.class), p.where),
			Found:    fmt.Sprintf("%s listed by %s; no JAR %s holds %s.class", javaName(p.class), path.Base(p.jar), searchedIn(p.where), p.class),
			Required: "every class a Factory service file names loadable by its class loader",
			Fix:      fmt.Sprintf("add the JAR that holds %s, or use a build of %s whose service file lists only its own factories (an uber JAR that merged service files of JARs it left out)", javaName(p.class), path.Base(p.jar))})
	}
	return out
}

func searchedIn(where string) string {
	if where == "usrlib" {
		return "of usrlib or lib"
	}
	return "of lib"
}

// tableFactoryDuplicate reports two different factory classes answering
// one identifier for one kind (a source, a sink, a format, a catalog...):
// FactoryUtil refuses the identifier ("Multiple factories for identifier
// ... found in the classpath") whenever a statement names it. The same
// class in two JARs is one provider to ServiceLoader and not reported here
// (classpath-shadowed judges the copies).
func tableFactoryDuplicate(v *view) []Finding {
	answers := v.tableFactories().answers
	var out []Finding
	seen := map[string]bool{}
	for i, a := range answers {
		for _, b := range answers[i+1:] {
			if a.id != b.id || a.p.class == b.p.class {
				continue
			}
			var shared []string
			for _, k := range a.kinds {
				if slices.Contains(b.kinds, k) {
					shared = append(shared, javaName(k))
				}
			}
			key := a.p.class + "|" + b.p.class
			if len(shared) == 0 || seen[key] {
				continue
			}
			seen[key] = true
			// Two JARs (two releases of a connector side by side) are a
			// mistake of the image: an error. One JAR that ships both (the
			// JDBC connector 3.3.0-1.20's two 'jdbc' catalog factories) fails
			// only the statements that name it, and its other factories work:
			// a warning, so that a deployment using them is not refused.
			sev := Error
			if a.p.jar == b.p.jar {
				sev = Warning
			}
			out = append(out, Finding{Severity: sev, Path: b.p.jar,
				Message:  fmt.Sprintf("two factories answer the identifier '%s': a statement naming it fails with \"Multiple factories for identifier '%s' that implement '%s' found in the classpath\"", a.id, a.id, shared[0]),
				Found:    fmt.Sprintf("%s (%s) and %s (%s), both %s", javaName(a.p.class), a.p.jar, javaName(b.p.class), b.p.jar, strings.Join(shared, ", ")),
				Required: fmt.Sprintf("one factory for '%s' of each kind on the class path", a.id),
				Fix:      fmt.Sprintf("keep one of %s and %s (two releases of one connector, most often)", path.Base(a.p.jar), path.Base(b.p.jar))})
		}
	}
	return out
}

// factoryIdentifier is the constant factoryIdentifier() returns, found in
// the class or its superclasses; "" when it is computed.
func factoryIdentifier(l *jvm.Loader, class string) string {
	name := class
	for range maxFactoryHierarchy {
		a := l.Find(name)
		if a == nil {
			return ""
		}
		data, err := a.Class(name, nil)
		if err != nil {
			return ""
		}
		c, err := classfile.Parse(data, classfile.Options{MembersOnly: true, Returns: "factoryIdentifier"})
		if err != nil {
			return ""
		}
		if c.Returns != "" {
			return c.Returns
		}
		if c.Super == "" || slices.ContainsFunc(c.Methods, func(m classfile.Member) bool { return m.Name == "factoryIdentifier" }) {
			return ""
		}
		name = c.Super
	}
	return ""
}

// factoryKindsAsked are the factory interfaces FactoryUtil is asked for
// (createDynamicTableSource/Sink, the formats' discover*Format with the
// interface a connector names, catalogs, modules, catalog stores). Their
// common supertypes (DynamicTableFactory, DecodingFormatFactory, ...) are
// never asked for: a CSV row format and a CSV bulk format both answer
// 'csv' without conflict (the oracle, on Flink's own lib, showed it).
var factoryKindsAsked = map[string]bool{
	"org/apache/flink/table/factories/DynamicTableSourceFactory":              true,
	"org/apache/flink/table/factories/DynamicTableSinkFactory":                true,
	"org/apache/flink/table/factories/DeserializationFormatFactory":           true,
	"org/apache/flink/table/factories/SerializationFormatFactory":             true,
	"org/apache/flink/connector/file/table/factories/BulkReaderFormatFactory": true,
	"org/apache/flink/connector/file/table/factories/BulkWriterFormatFactory": true,
	"org/apache/flink/table/factories/CatalogFactory":                         true,
	"org/apache/flink/table/factories/ModuleFactory":                          true,
	"org/apache/flink/table/factories/CatalogStoreFactory":                    true,
}

// factoryKinds are the interfaces of factoryKindsAsked a class implements,
// through its whole hierarchy.
func factoryKinds(cp *jvm.Classpath, l *jvm.Loader, class string) []string {
	var kinds []string
	seen := map[string]bool{}
	queue := []string{class}
	for len(queue) > 0 && len(seen) < maxFactoryHierarchy {
		name := queue[0]
		queue = queue[1:]
		if seen[name] {
			continue
		}
		seen[name] = true
		if factoryKindsAsked[name] {
			kinds = append(kinds, name)
		}
		a := l.Find(name)
		if a == nil {
			continue
		}
		c, err := cp.Class(a, name)
		if err != nil || c == nil {
			continue
		}
		if c.Super != "" {
			queue = append(queue, c.Super)
		}
		queue = append(queue, c.Interfaces...)
	}
	slices.Sort(kinds)
	return kinds
}

// tableFactoryMissing reports a factory identifier a SQL file names (a
// CREATE TABLE's 'connector', 'format', 'key.format' or 'value.format',
// a CREATE CATALOG's 'type') that no table factory on the class path
// answers, of any kind: Flink's FactoryUtil fails the statement that uses
// the table with "Could not find any factory for identifier". One finding
// per file and identifier, naming its tables. An error when the process's
// arguments name the file (the job runs it); a warning for a file of
// usrlib nothing names, when the SQL or the configuration adds JARs to the
// job's class path (ADD JAR, USING JAR, pipeline.jars or
// pipeline.classpaths: the factory may be in one), and when a factory of
// an asked kind has a computed identifier.
func tableFactoryMissing(v *view) []Finding {
	if len(v.SQL) == 0 || !tableFactoriesReadable(v) {
		return nil
	}
	t := v.tableFactories()
	answered := map[string]bool{}
	for _, a := range t.answers {
		answered[a.id] = true
	}
	computed, jarsConf := otherFactorySources(v, t)
	known := slices.Sorted(maps.Keys(answered))
	var out []Finding
	for _, file := range v.SQL {
		type missing struct {
			use   sqlscan.Use
			names []string
		}
		var order []string
		by := map[string]*missing{}
		for _, u := range file.Uses {
			if answered[u.Value] {
				continue
			}
			k := u.Option + "\x00" + u.Value
			if by[k] == nil {
				by[k] = &missing{use: u}
				order = append(order, k)
			}
			by[k].names = append(by[k].names, u.Statement+" "+u.Name)
		}
		for _, k := range order {
			m := by[k]
			u := m.use
			what := "the " + u.Option
			if u.Option == "type" {
				what = "the catalog type"
			}
			users := m.names[0]
			if n := len(m.names); n > 1 {
				users = fmt.Sprintf("%s and %d more", m.names[0], n-1)
			}
			f := Finding{Path: file.Path,
				Message:  fmt.Sprintf("%s '%s' of %s has no factory on the class path: Flink fails every statement that uses it with \"Could not find any factory for identifier '%s'\"", what, u.Value, users, u.Value),
				Found:    fmt.Sprintf("'%s' = '%s' (%s, line %d); the identifiers the class path answers: %s", u.Option, u.Value, file.Path, u.Line, listOr(known, "none")),
				Required: fmt.Sprintf("a table factory answering '%s' in lib or usrlib", u.Value),
				Fix:      factoryFix(u, v.line())}
			if file.Truncated {
				f.Found += fmt.Sprintf("; only the file's first %d factory options were read", sqlscan.MaxUses)
			}
			var unless []string
			if !file.Named {
				f.Severity = Warning
				f.Message += SQLUnnamed
			}
			if len(file.AddsCode) > 0 {
				unless = append(unless, fmt.Sprintf("a JAR the SQL adds (line %d) answers it", file.AddsCode[0]))
			}
			if len(jarsConf) > 0 {
				unless = append(unless, "a JAR of "+strings.Join(jarsConf, ", ")+" answers it")
			}
			if len(computed) > 0 {
				unless = append(unless, "a factory whose identifier is computed answers it: "+strings.Join(computed, ", "))
			}
			if len(unless) > 0 {
				f.Severity = Warning
				f.Message += ", unless " + strings.Join(unless, ", or ")
			}
			out = append(out, f)
		}
	}
	return out
}

// AddedJARKeys are the options that put JARs on a job's class path beyond
// lib and usrlib: a factory this check does not see may come from them.
var AddedJARKeys = []string{"pipeline.jars", "pipeline.classpaths"}

// SQLUnnamed ends the message of a table-factory-missing finding that is a
// warning only because nothing the process is given names the file (a
// deployment whose job's arguments name it makes it an error:
// internal/deploy).
const SQLUnnamed = " (if the job runs this file: nothing the process is given names it)"

// otherFactorySources are where a factory this check does not see may
// come from: providers whose identifier is computed, and the
// configuration's pipeline.jars and pipeline.classpaths.
func otherFactorySources(v *view, t *tableAnalysis) (computed, jarsConf []string) {
	for _, p := range t.computed {
		computed = append(computed, strings.ReplaceAll(p.class, "/", ".")+" ("+p.jar+")")
	}
	for _, k := range AddedJARKeys {
		if e, ok := flinkconf.Last(v.Config.Entries, k); ok && strings.TrimSpace(e.Value) != "" {
			jarsConf = append(jarsConf, fmt.Sprintf("%s (%s)", k, e.Source))
		}
	}
	return computed, jarsConf
}

// listOr is the list, or none when it is empty.
func listOr(list []string, none string) string {
	if len(list) == 0 {
		return none
	}
	return strings.Join(list, ", ")
}

// factoryFix names what to install for an identifier: the Kafka
// connector's SQL JAR by coordinates for 'kafka' and 'upsert-kafka',
// the module's name otherwise.
func factoryFix(u sqlscan.Use, line string) string {
	switch {
	case (u.Value == "kafka" || u.Value == "upsert-kafka") && KnownConnectors["flink-sql-connector-kafka"][line] != "":
		return fmt.Sprintf("add org.apache.flink:flink-sql-connector-kafka:%s to lib (or bundle it into the job JAR)", KnownConnectors["flink-sql-connector-kafka"][line])
	case u.Option == "connector":
		return fmt.Sprintf("add the SQL JAR of the connector that answers '%s', built for Flink %s, to lib (flink-sql-connector-%s, or the vendor's), or correct the identifier", u.Value, line, u.Value)
	case u.Option == "type":
		return fmt.Sprintf("add the JAR of the catalog that answers '%s' to lib, or correct the type", u.Value)
	}
	return fmt.Sprintf("add the format's JAR of the host's Flink release to lib (flink-%s, or flink-sql-%s for a bundled one), or correct the identifier", u.Value, u.Value)
}
