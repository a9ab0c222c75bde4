package admission

import (
	"bytes"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/hashicorp/go-version"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

var documentedShape = regexp.MustCompile(`^[0-9]+(\.[0-9]+)*([+-][0-9A-Za-z.+-]*)?$`)

func FuzzParseJava(f *testing.F) {
	for _, s := range []string{"17.0.15", "11.0.21+9", "21.0.1+12-LTS", "1.8.0_392", "17", "17-ea", `"17.0.2"`, "", "banana", "1.", "0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseJava(s)
		if err != nil {
			return
		}
		// The major is the leading number, or the second in the 1.x scheme,
		// for versions of the documented shapes (digits and dots, then an
		// optional +build or -tag); other shapes the normaliser accepts are
		// held by the unit tests.
		lead := strings.Trim(strings.TrimSpace(s), `"`)
		if !documentedShape.MatchString(lead) {
			return
		}
		first, rest, dotted := strings.Cut(lead, ".")
		first = leadingDigits(first)
		want, aerr := strconv.Atoi(first)
		if aerr == nil && want == 1 {
			// the first number is 1 (also written 01) and a dot follows it
			if second := leadingDigits(rest); second != "" && dotted && first == leadingDigits(lead) {
				want, aerr = strconv.Atoi(second)
			}
		}
		if aerr != nil || v.Major != want {
			t.Fatalf("ParseJava(%q).Major = %d; the leading number says %d (%v)", s, v.Major, want, aerr)
		}
		// The major alone parses back to itself ("1" alone is not a Java
		// version: 1.1 is the only major-1 version).
		if v.Major == 1 {
			return
		}
		back, err := ParseJava(strconv.Itoa(v.Major))
		if err != nil || back.Major != v.Major {
			t.Fatalf("ParseJava(%q) = %d, %v; want %d", strconv.Itoa(v.Major), back.Major, err, v.Major)
		}
	})
}

func FuzzIdentify(f *testing.F) {
	f.Add([]byte("Manifest-Version: 1.0\nStreamFusion-Payload: loader\nStreamFusion-Module: streamfusion-loader\nStreamFusion-Artifact: tech.streamfusion:streamfusion-loader\nStreamFusion-Version: 0.1.0\nStreamFusion-Flink-Line: 2.2\nStreamFusion-Java-Release: 11\n"))
	f.Fuzz(func(t *testing.T, mf []byte) {
		m, err := payload.ParseManifest(bytes.NewReader(mf))
		if err != nil {
			return
		}
		id := Identify(&payload.JAR{Path: "/x.jar", Manifest: &m})
		_, marked := m.Get(AttrPayload)
		if (id != nil) != marked {
			t.Fatalf("marked=%v but identity %+v (a JAR with no content marks is StreamFusion only by its manifest)", marked, id)
		}
		if id == nil {
			return
		}
		// Identity fields come from the manifest's attributes.
		for name, got := range map[string]string{AttrPayload: id.Kind, AttrModule: id.Module, AttrArtifact: id.Artifact, AttrVersion: id.Version, AttrLine: id.Line} {
			v, _ := m.Get(name)
			if utf8.ValidString(v) && got != v {
				t.Fatalf("%s: identity says %q, the manifest %q", name, got, v)
			}
		}
		if id.Valid() && (id.Module == "" || id.Version == "" || id.Line == "") {
			t.Fatalf("valid identity with empty fields: %+v", id)
		}
	})
}

func leadingDigits(s string) string {
	i := 0
	for i < len(s) && s[i] >= '0' && s[i] <= '9' {
		i++
	}
	return s[:i]
}

// FuzzParseStockVersion holds the two shapes of the contract's section 7:
// an accepted version is rebuilt from its parts, its numbers are digits,
// and a module's line is its release's major.minor.
func FuzzParseStockVersion(f *testing.F) {
	for _, s := range []string{"3.2.0-1.18", "5.0.0-2.2", "2.2.0", "1.18.1", "1.17-vvr-8.0.4", "3.3.0-1.19-SNAPSHOT", "", "2.2", "0.0.0-0.0", "-", "1..1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, ok := ParseStockVersion(s)
		if !ok {
			if v != (StockVersion{}) {
				t.Fatalf("refused %q but returned %+v", s, v)
			}
			return
		}
		rebuilt := v.Own
		if v.Connector {
			rebuilt += "-" + v.Line
		}
		if rebuilt != s {
			t.Fatalf("ParseStockVersion(%q) = %+v, which rebuilds %q", s, v, rebuilt)
		}
		if strings.Trim(v.Own+v.Line, "0123456789.") != "" || strings.Count(v.Own, ".") != 2 || strings.Count(v.Line, ".") != 1 {
			t.Fatalf("ParseStockVersion(%q) = %+v: not numbers of the documented shape", s, v)
		}
		if !v.Connector && !strings.HasPrefix(v.Own, v.Line+".") {
			t.Fatalf("module %q: line %q is not its release's major.minor", s, v.Line)
		}
	})
}

// FuzzIdentifyStock: any manifest and file name give a stock identity or
// none, never a panic; an identity always has a line of the documented
// shape and names its JAR.
func FuzzIdentifyStock(f *testing.F) {
	f.Add("flink-connector-kafka-3.2.0-1.18.jar", []byte("Manifest-Version: 1.0\nImplementation-Title: Flink : Connectors : Kafka\nImplementation-Version: 3.2.0-1.18\nImplementation-Vendor-Id: org.apache.flink\n"))
	f.Add("json.jar", []byte("Manifest-Version: 1.0\nImplementation-Title: Flink : Formats : Json\nImplementation-Version: 2.2.0\nImplementation-Vendor-Id: org.apache.flink\n"))
	f.Add("paimon.jar", []byte("Manifest-Version: 1.0\nImplementation-Title: Paimon : Flink : 1.18\nImplementation-Version: 0.8.2\n"))
	f.Add("iceberg-flink-runtime-1.18-1.5.2.jar", []byte("Manifest-Version: 1.0\n"))
	f.Add("flink-sql-connector-kafka-5.0.0-2.2.jar", []byte(""))
	f.Fuzz(func(t *testing.T, name string, mf []byte) {
		m, err := payload.ParseManifest(bytes.NewReader(mf))
		if err != nil {
			return
		}
		p := "/opt/flink/lib/" + strings.ReplaceAll(name, "/", "_")
		s := IdentifyStock(&payload.JAR{Path: p, Manifest: &m})
		if s == nil {
			return
		}
		if !isLine(s.Line) || s.Path != p || s.Kind == "" || s.Artifact == "" || s.Name == "" {
			t.Fatalf("identity %+v of %q", s, p)
		}
		if s.Kind == StockModule && !strings.HasPrefix(s.Release, s.Line+".") {
			t.Fatalf("module %+v: release and line disagree", s)
		}
	})
}

// FuzzAttributeSyntax: the hand-written syntax checks accept exactly what
// the patterns they replace accept (the patterns are the oracle, here only).
func FuzzAttributeSyntax(f *testing.F) {
	for _, s := range []string{"streamfusion-kafka", "streamfusion-avro-confluent-registry", "streamfusion--x", "0.1.0-rc4", "1.2.3+b.1", "1.2.3-", "2.2", "linux-x86_64", "tech.streamfusion", "a_b-c.d", "17.0.15", "1.8.0_392", "21.0.1+12-LTS", "17-ea", "17.", "17.0_", "x"} {
		f.Add(s)
	}
	patterns := map[string]struct {
		re *regexp.Regexp
		fn func(string) bool
	}{
		"module":   {regexp.MustCompile(`^streamfusion-[a-z0-9]+(-[a-z0-9]+)*$`), isModule},
		"semver":   {regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?$`), isSemverShape},
		"line":     {regexp.MustCompile(`^[0-9]+\.[0-9]+$`), isLineAttr},
		"build":    {regexp.MustCompile(`^[0-9A-Za-z._-]+$`), isBuildID},
		"platform": {regexp.MustCompile(`^[a-z]+-[a-z0-9_]+$`), isPlatform},
	}
	coord := regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)
	java := regexp.MustCompile(`^([0-9]+)((?:\.[0-9]+)*)(?:_([0-9]+))?(?:[-+].*)?$`)
	f.Fuzz(func(t *testing.T, s string) {
		for name, p := range patterns {
			if want, got := p.re.MatchString(s), p.fn(s); want != got {
				t.Fatalf("%s %q: the pattern says %v, the check %v", name, s, want, got)
			}
		}
		if _, err := version.NewSemver(s); (err == nil && patterns["semver"].re.MatchString(s)) != isSemver(s) {
			t.Fatalf("isSemver(%q) = %v; the pattern and go-version's NewSemver say %v (%v)", s, isSemver(s), !isSemver(s), err)
		}
		g, a, ok := strings.Cut(s, ":")
		if want := ok && coord.MatchString(g) && coord.MatchString(a); want != isCoordinate(s) {
			t.Fatalf("coordinate %q: the pattern says %v", s, want)
		}
		v := strings.Trim(strings.TrimSpace(s), `"`)
		if _, err := ParseJava(s); err == nil && (!java.MatchString(v) || len(v) > 64) {
			t.Fatalf("ParseJava(%q) accepts what the pattern refuses", s)
		} else if err != nil && java.MatchString(v) && len(v) <= 64 && javaInRange(v) {
			// a match whose major is 1-999 (the 1.x scheme's second
			// number) is accepted
			t.Fatalf("ParseJava(%q) refuses what the pattern accepts: %v", s, err)
		}
	})
}

// javaInRange reports whether a version the Java pattern matches has a
// major of 1-999: its first number, or its second after a leading 1.
func javaInRange(v string) bool {
	// the numbers before any -tag or +build
	head := v
	if i := strings.IndexAny(v, "-+"); i >= 0 {
		head = v[:i]
	}
	nums := strings.FieldsFunc(head, func(r rune) bool { return r == '.' || r == '_' })
	for _, n := range nums {
		if len(strings.TrimLeft(n, "0")) > 9 {
			return false
		}
	}
	major, _ := strconv.Atoi(nums[0])
	if major == 1 {
		major = 0
		if len(nums) > 1 {
			major, _ = strconv.Atoi(nums[1])
		}
	}
	return major >= 1 && major <= 999
}
