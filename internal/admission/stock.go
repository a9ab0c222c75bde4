package admission

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Stock kinds: what a JAR around StreamFusion's is, as far as it says.
const (
	// StockModule is an in-tree Flink module (flink-json, flink-cep, ...):
	// Implementation-Version is the Flink release, A.B.C.
	StockModule = "module"
	// StockConnector is an externalized Flink connector: Implementation-Version
	// is the connector's own version, a dash, and the Flink line it is built
	// for, X.Y.Z-A.B.
	StockConnector = "connector"
	// StockIntegration is a third-party Flink integration (Paimon, Iceberg,
	// Fluss, Doris) that carries the Flink line in its artifact name.
	StockIntegration = "integration"
	// StockCDC is a Flink CDC connector: its name and manifest say only
	// its own release (Implementation-Version 3.0.1), which fixes the
	// Flink it is built against (cdcFlink).
	StockCDC = "cdc"
)

// cdcFlink is the Flink release each Flink CDC line is built against: the
// flink.version of its parent POM (flink-cdc-source-connectors, which the
// connectors' embedded POMs name but do not embed), read with Maven for
// every line the ecosystem corpus fetches (TestEcosystemCDCLines checks
// the table against the published POMs). The group moved from
// com.ververica to org.apache.flink at 3.1.
var cdcFlink = map[string]string{
	"3.0": "1.18.0", "3.1": "1.18.1", "3.2": "1.18.1", "3.3": "1.19.1", "3.4": "1.20.1", "3.5": "1.20.1",
}

// cdcStock reads a Flink CDC connector's manifest: vendor com.ververica or
// org.apache.flink, title flink-(sql-)connector-<db>-cdc, a version of a
// CDC line cdcFlink knows.
func cdcStock(p, vendor, title, ver string) *Stock {
	if vendor != "com.ververica" && vendor != flinkVendorID {
		return nil
	}
	if !strings.HasSuffix(title, "-cdc") || !strings.HasPrefix(title, "flink-connector-") && !strings.HasPrefix(title, "flink-sql-connector-") {
		return nil
	}
	sv, ok := ParseStockVersion(ver)
	if !ok || sv.Connector {
		return nil
	}
	built := cdcFlink[sv.Line]
	if built == "" {
		return nil
	}
	line, _ := ParseStockVersion(built)
	return &Stock{Path: p, Kind: StockCDC, Name: title, Group: vendor, Artifact: title, Version: ver, Line: line.Line,
		Evidence: "Implementation-Version " + ver + " in its manifest: Flink CDC " + sv.Line + " is built against Flink " + built}
}

// cdcFor lists the Flink CDC lines built against a Flink line.
func cdcFor(line string) []string {
	var out []string
	for cdc, built := range cdcFlink {
		if sv, _ := ParseStockVersion(built); sv.Line == line {
			out = append(out, cdc)
		}
	}
	slices.Sort(out)
	return out
}

// Manifest attributes Flink's own JARs carry.
const (
	attrVendorID     = "Implementation-Vendor-Id"
	attrImplTitle    = "Implementation-Title"
	attrImplVersion  = "Implementation-Version"
	flinkVendorID    = "org.apache.flink"
	flinkTitlePrefix = "Flink : "
	paimonTitle      = "Paimon : Flink : "
)

// Stock is what a JAR that is not StreamFusion's says about the Flink it
// is built for. Identity comes from the manifest where the manifest has it,
// so a renamed JAR is still known; from the file name only where it does
// not.
type Stock struct {
	Path string `json:"path"`
	Kind string `json:"kind"`
	// Name is what makes two JARs the same connector or module: the
	// Implementation-Title ("Flink : Connectors : Kafka") or the
	// integration's artifact without its line ("paimon-flink").
	Name     string `json:"name"`
	Group    string `json:"group"`
	Artifact string `json:"artifact"` // its artifactId: of the file name where that is <artifactId>-<version>.jar, else derived
	Version  string `json:"version"`  // its own version: the connector's X.Y.Z, the module's release, the integration's
	Line     string `json:"line"`     // the Flink line it is built for
	Release  string `json:"release,omitempty"`
	// Evidence says where the line came from, for messages.
	Evidence string `json:"evidence"`
}

// String names the JAR for messages: "flink-connector-kafka 3.2.0-1.18".
func (s *Stock) String() string {
	switch s.Kind {
	case StockConnector:
		return s.Artifact + " " + s.Version + "-" + s.Line
	default:
		return s.Artifact + " " + s.Version
	}
}

// StockVersion is an Implementation-Version of a Flink JAR read by its
// shape: X.Y.Z-A.B is a connector X.Y.Z for line A.B, A.B.C a module of
// release A.B.C.
type StockVersion struct {
	Connector bool
	Own       string // the connector's X.Y.Z, or the release A.B.C
	Line      string // A.B
}

// ParseStockVersion reads the two shapes of the contract's section 7 and
// nothing else: numbers of at most 9 digits, exactly three for a release or
// a connector's own version and two for a line. Anything else (a SNAPSHOT,
// a vendor's build, text) is not a stock version.
func ParseStockVersion(s string) (StockVersion, bool) {
	if len(s) > 64 {
		return StockVersion{}, false
	}
	own, line, dashed := strings.Cut(s, "-")
	if !numbers(own, 3) || dashed && !numbers(line, 2) {
		return StockVersion{}, false
	}
	if dashed {
		return StockVersion{Connector: true, Own: own, Line: line}, true
	}
	major, rest, _ := strings.Cut(own, ".")
	minor, _, _ := strings.Cut(rest, ".")
	return StockVersion{Own: own, Line: major + "." + minor}, true
}

// numbers reports whether s is n dot-separated runs of 1-9 digits.
func numbers(s string, n int) bool {
	parts := strings.Split(s, ".")
	if len(parts) != n {
		return false
	}
	for _, p := range parts {
		if len(p) == 0 || len(p) > 9 || strings.TrimLeft(p, "0123456789") != "" {
			return false
		}
	}
	return true
}

// isLine reports whether s is a Flink line, A.B.
func isLine(s string) bool { return numbers(s, 2) }

// integrations are the third-party integrations known to carry the Flink
// line in their artifact names, with their groups, longest prefix first.
var integrations = []struct{ artifact, group string }{
	{"iceberg-flink-runtime", "org.apache.iceberg"},
	{"iceberg-flink", "org.apache.iceberg"},
	{"paimon-flink", "org.apache.paimon"},
	{"fluss-flink", "org.apache.fluss"},
	{"flink-doris-connector", "org.apache.doris"},
}

// IdentifyStock returns the stock identity of j, or nil when j says nothing
// this package can read about the Flink it is built for (log4j, a job's
// dependencies, flink-shaded, a vendor's build). It does not look at
// StreamFusion content: callers ask Identify first.
func IdentifyStock(j *payload.JAR) *Stock {
	if j == nil || j.Err != nil {
		return nil
	}
	base := path.Base(j.Path)
	vendor, title, ver := j.ManifestValue(attrVendorID), j.ManifestValue(attrImplTitle), j.ManifestValue(attrImplVersion)
	// Flink's own JARs, by their manifest.
	if vendor == flinkVendorID && strings.HasPrefix(title, flinkTitlePrefix) {
		if sv, ok := ParseStockVersion(ver); ok {
			s := &Stock{Path: j.Path, Name: title, Group: flinkVendorID, Line: sv.Line,
				Artifact: artifactOf(base, ver, title), Evidence: "Implementation-Version " + ver + " in its manifest"}
			s.Kind, s.Version = StockModule, sv.Own
			if sv.Connector {
				s.Kind = StockConnector
			} else {
				s.Release = sv.Own
			}
			return s
		}
	}
	if s := cdcStock(j.Path, vendor, title, ver); s != nil {
		return s
	}
	// Paimon names its line in its manifest's title.
	if line, ok := strings.CutPrefix(title, paimonTitle); ok && isLine(line) {
		return &Stock{Path: j.Path, Kind: StockIntegration, Name: "paimon-flink", Group: "org.apache.paimon",
			Artifact: "paimon-flink-" + line, Version: ver, Line: line, Evidence: "Implementation-Title " + title + " in its manifest"}
	}
	// Without a manifest that says, the file name: an externalized
	// connector's <artifact>-X.Y.Z-A.B.jar, or an integration's
	// <artifact>-A.B-<version>.jar.
	stem, ok := strings.CutSuffix(base, ".jar")
	if !ok {
		return nil
	}
	if strings.HasPrefix(stem, "flink-connector-") || strings.HasPrefix(stem, "flink-sql-connector-") {
		if i := connectorVersionAt(stem); i > 0 {
			sv, _ := ParseStockVersion(stem[i:])
			return &Stock{Path: j.Path, Kind: StockConnector, Name: stem[:i-1], Group: flinkVendorID, Artifact: stem[:i-1],
				Version: sv.Own, Line: sv.Line, Evidence: "its file name"}
		}
	}
	if s := suffixedLine(j.Path, stem); s != nil {
		return s
	}
	for _, in := range integrations {
		rest, ok := strings.CutPrefix(stem, in.artifact+"-")
		if !ok {
			continue
		}
		line, ver, ok := strings.Cut(rest, "-")
		if ok && isLine(line) && ver != "" {
			return &Stock{Path: j.Path, Kind: StockIntegration, Name: in.artifact, Group: in.group, Artifact: in.artifact + "-" + line,
				Version: ver, Line: line, Evidence: "its file name"}
		}
	}
	return nil
}

// lineSuffixed are the integrations that spell the Flink line inside
// their version or artifact rather than as an -A.B artifact suffix:
// StarRocks' <artifact>-<version>_flink-A.B.jar and Hudi's bundles,
// hudi-flinkA.B-bundle-<version>.jar.
var lineSuffixed = []struct{ artifact, group string }{
	{"flink-connector-starrocks", "com.starrocks"},
}

// suffixedLine reads the StarRocks and Hudi file names; nil for others.
func suffixedLine(p, stem string) *Stock {
	for _, in := range lineSuffixed {
		rest, ok := strings.CutPrefix(stem, in.artifact+"-")
		if !ok {
			continue
		}
		ver, line, ok := strings.Cut(rest, "_flink-")
		if ok && isLine(line) && ver != "" {
			return &Stock{Path: p, Kind: StockIntegration, Name: in.artifact, Group: in.group, Artifact: in.artifact,
				Version: ver, Line: line, Evidence: "its file name (version " + rest + ")"}
		}
	}
	if rest, ok := strings.CutPrefix(stem, "hudi-flink"); ok {
		line, ver, ok := strings.Cut(rest, "-bundle-")
		if ok && isLine(line) && ver != "" {
			return &Stock{Path: p, Kind: StockIntegration, Name: "hudi-flink-bundle", Group: "org.apache.hudi", Artifact: "hudi-flink" + line + "-bundle",
				Version: ver, Line: line, Evidence: "its file name"}
		}
	}
	return nil
}

// connectorVersionAt returns where a connector version X.Y.Z-A.B starts in
// stem, "<artifact>-X.Y.Z-A.B", or 0.
func connectorVersionAt(stem string) int {
	for i := len(stem) - 1; i > 0; i-- {
		if stem[i-1] != '-' {
			continue
		}
		if sv, ok := ParseStockVersion(stem[i:]); ok && sv.Connector {
			return i
		}
	}
	return 0
}

// artifactOf is the artifactId of a Flink JAR: from its file name when that
// is <artifactId>-<version>.jar, as Maven names it, else derived from the
// title (a renamed JAR): "Connectors : Kafka" is flink-connector-kafka,
// "Connectors : SQL : Kafka" flink-sql-connector-kafka, "Formats : Json"
// flink-json, "Libraries : CEP" flink-cep, anything else flink- and the
// title's words.
func artifactOf(base, version, title string) string {
	if a, ok := strings.CutSuffix(base, "-"+version+".jar"); ok && a != "" {
		return a
	}
	words := strings.Split(strings.ToLower(strings.TrimPrefix(title, flinkTitlePrefix)), " : ")
	for i := range words {
		words[i] = strings.Join(strings.Fields(words[i]), "-")
	}
	switch {
	case len(words) > 2 && words[0] == "connectors" && words[1] == "sql":
		return "flink-sql-connector-" + strings.Join(words[2:], "-")
	case len(words) > 1 && words[0] == "connectors":
		return "flink-connector-" + strings.Join(words[1:], "-")
	case len(words) > 1 && (words[0] == "formats" || words[0] == "libraries"):
		return "flink-" + strings.Join(words[1:], "-")
	}
	return "flink-" + strings.Join(words, "-")
}

// KnownConnectors are connector releases known to exist for each line the
// matrix admits, checked by their Maven coordinates (the realflink tests
// fetch them): the fix of a connector of another line names one. A
// connector missing here is named by its artifact and the line's suffix.
var KnownConnectors = map[string]map[string]string{
	"flink-connector-kafka":     {"2.2": "5.0.0-2.2", "1.18": "3.2.0-1.18"},
	"flink-sql-connector-kafka": {"2.2": "5.0.0-2.2"},
	"flink-connector-jdbc":      {"1.18": "3.2.0-1.18"},
}

// stockFix is the JAR to install instead of s on a host of release
// (A.B.C) and line.
func stockFix(s *Stock, release, line string) string {
	if v := KnownConnectors[s.Artifact][line]; v != "" {
		return fmt.Sprintf("install %s:%s:%s in its place (the release this entrypoint knows for line %s)", s.Group, s.Artifact, v, line)
	}
	switch s.Kind {
	case StockModule:
		return fmt.Sprintf("install %s:%s:%s in its place (the module of the host's release)", s.Group, s.Artifact, release)
	case StockConnector:
		return fmt.Sprintf("install a release of %s:%s built for Flink %s (version <connector version>-%s) in its place", s.Group, s.Artifact, line, line)
	}
	switch s.Name {
	case "flink-connector-starrocks":
		return fmt.Sprintf("install %s:%s:<version>_flink-%s (a release built for Flink %s) in its place", s.Group, s.Name, line, line)
	case "hudi-flink-bundle":
		return fmt.Sprintf("install %s:hudi-flink%s-bundle (a release built for Flink %s) in its place", s.Group, line, line)
	}
	if s.Kind == StockCDC {
		if cdc := cdcFor(line); len(cdc) > 0 {
			return fmt.Sprintf("install org.apache.flink:%s of Flink CDC %s (built against Flink %s) in its place", s.Artifact, strings.Join(cdc, " or "), line)
		}
		return fmt.Sprintf("no Flink CDC release this entrypoint knows is built against Flink %s: run %s on Flink %s, the release it is built for", line, s.Artifact, s.Line)
	}
	return fmt.Sprintf("install %s:%s-%s (a release built for Flink %s) in its place", s.Group, s.Name, line, line)
}

// lineMajor is the major of a line or release, -1 when it has none.
func lineMajor(s string) int {
	m, _, _ := strings.Cut(s, ".")
	n, err := strconv.Atoi(m)
	if err != nil {
		return -1
	}
	return n
}

// stockNamed returns the payloads whose StreamFusion-Stock-Requires names
// s (by the prefix of its file name or of its artifactId).
func (v *view) stockNamed(j *payload.JAR, s *Stock) []*Identity {
	var out []*Identity
	for _, id := range v.ids {
		if !id.Valid() {
			continue
		}
		for _, prefix := range id.Stock {
			if names(prefix, j, s) {
				out = append(out, id)
				break
			}
		}
	}
	return out
}

// names reports whether a StreamFusion-Stock-Requires prefix names j.
func names(prefix string, j *payload.JAR, s *Stock) bool {
	return strings.HasPrefix(path.Base(j.Path), prefix) || s != nil && strings.HasPrefix(s.Artifact, prefix)
}

func stockLine(v *view) []Finding {
	line := v.line()
	if line == "" {
		return nil
	}
	var out []Finding
	for _, s := range v.stock {
		if s.Kind == StockModule || s.Line == line {
			continue
		}
		f := Finding{Path: s.Path, Message: s.String() + " is built for another Flink line",
			Found: "line " + s.Line + " (" + s.Evidence + ")", Required: "line " + line + " (the host runs Flink " + v.flink + ")",
			Fix: stockFix(s, v.flink, line)}
		named := v.stockNamed(v.jar(s.Path), s)
		if len(named) > 0 {
			f.Required += ", which " + name(named[0]) + " needs (" + AttrStock + ")"
		}
		if lineMajor(s.Line) == lineMajor(line) && len(named) == 0 {
			f.Severity = Warning
		}
		out = append(out, f)
	}
	return out
}

func stockRelease(v *view) []Finding {
	if v.release == nil {
		return nil
	}
	host := strings.Split(v.release.Version, ".")
	var out []Finding
	for _, s := range v.stock {
		if s.Kind != StockModule || s.Release == v.flink {
			continue
		}
		f := Finding{Path: s.Path, Message: s.String() + " is a module of another Flink release",
			Found: "Flink " + s.Release + " (" + s.Evidence + ")", Required: "Flink " + v.flink + ", the host's",
			Fix: stockFix(s, v.flink, v.release.Line)}
		seg := strings.Split(s.Release, ".")
		if seg[0] == host[0] && seg[1] == host[1] {
			f.Severity = Warning // another patch of the same minor
		}
		out = append(out, f)
	}
	return out
}

func stockDuplicate(v *view) []Finding {
	seen := map[string][]*Stock{}
	var order []string
	for _, s := range v.stock {
		key := s.Group + " " + s.Name
		if seen[key] == nil {
			order = append(order, key)
		}
		seen[key] = append(seen[key], s)
	}
	var out []Finding
	for _, k := range order {
		ss := seen[k]
		if len(ss) < 2 {
			continue
		}
		var all []string
		keep := ""
		for _, s := range ss {
			all = append(all, s.String()+" at "+s.Path)
			if keep == "" && (s.Kind == StockModule && s.Release == v.flink || s.Kind != StockModule && s.Line == v.line()) {
				keep = s.Path
			}
		}
		fix := "keep one, of the host's Flink line, and remove the others"
		if keep != "" {
			fix = "keep " + keep + " and remove the others"
		}
		what := ss[0].Artifact
		if ss[0].Kind == StockIntegration {
			what = ss[0].Name // paimon-flink, whatever the lines
		}
		out = append(out, Finding{Path: ss[1].Path, Message: what + " is installed more than once; the first on the classpath wins, class by class",
			Found: strings.Join(all, ", "), Required: "each connector or module once", Fix: fix})
	}
	return out
}

// stockMissing reports a StreamFusion-Stock-Requires prefix that no JAR of
// the host's line satisfies.
func stockMissing(v *view) []Finding {
	line := v.line()
	var out []Finding
	for _, id := range v.ids {
		if !id.Valid() {
			continue
		}
		for _, prefix := range id.Stock {
			var others []string
			ok := false
			for _, j := range v.Classpath {
				s := v.stockOf[j.Path]
				if !names(prefix, j, s) {
					continue
				}
				switch {
				case line == "" || s != nil && s.Line == line:
					ok = true
				case s == nil:
					others = append(others, j.Path+", whose Flink line cannot be told")
				default:
					others = append(others, j.Path+", built for line "+s.Line)
				}
			}
			if ok {
				continue
			}
			found := "no " + prefix + "*.jar"
			if len(others) > 0 {
				found = "only " + strings.Join(others, "; ")
			}
			out = append(out, Finding{Path: id.Path, Message: name(id) + " needs a stock Flink JAR of the host's line that is not in lib",
				Found: found, Required: prefix + "*.jar built for line " + cmp.Or(line, "(the host's)"),
				Fix: "install the " + prefix + " JAR built for the host's Flink release into lib" + knownFor(prefix, line)})
		}
	}
	return out
}

// knownFor names the known release of a connector artifact for a line.
func knownFor(artifact, line string) string {
	if v := KnownConnectors[artifact][line]; v != "" {
		return " (" + flinkVendorID + ":" + artifact + ":" + v + ")"
	}
	return ""
}
