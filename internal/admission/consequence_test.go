package admission

import (
	"slices"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// A copy that hides flink-dist's is an error only where flink-dist's code
// then fails: a member its copy declares that the winning copy does not
// resolve. A copy that differs in bytes and keeps every member is one
// warning (Flink CDC's flink-shaded-guava over flink-dist's, issue 28).
func TestShadowSeverityFromConsequence(t *testing.T) {
	const lists = "org/apache/flink/shaded/guava31/com/google/common/collect/Lists"
	host := testkit.Class{Name: lists, Methods: []testkit.Member{m("newArrayList", "()Ljava/util/ArrayList;"), m("reverse", "(Ljava/util/List;)Ljava/util/List;")}}
	for _, c := range []struct {
		name    string
		methods []testkit.Member
		want    string
		why     string
	}{
		{"every member kept, one more", []testkit.Member{m("newArrayList", "()Ljava/util/ArrayList;"), m("reverse", "(Ljava/util/List;)Ljava/util/List;"), m("more", "()V")}, "warning", "every use of them on the classpath resolves"},
		// A library flink-dist bundles: which members its code calls is not
		// known, and the Hive connector's older slf4j over 1.20.3's runs.
		{"a member of a bundled library gone", []testkit.Member{m("newArrayList", "()Ljava/util/ArrayList;")}, "warning", "the winning copy lacks Lists.reverse(List), which flink-dist-2.2.0.jar's copy declares"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cdc := connector("/opt/flink/lib/flink-sql-connector-mysql-cdc-3.0.1.jar", []testkit.Class{{Name: lists, Methods: c.methods}}, nil)
			fs := decideDeep(t, deepFacts(t, []jarBytes{cdc, dist(host)}, nil))
			if len(fs) != 1 || fs[0].Rule != "classpath-shadowed" || string(fs[0].Severity) != c.want || !strings.Contains(fs[0].Found, c.why) {
				t.Fatalf("want one %s classpath-shadowed saying %q, got %v", c.want, c.why, fs)
			}
		})
	}
}

// Two non-host JARs: the losing JAR's code is judged against the winning
// copies by the linkage rules, so the pair itself is a warning, and what
// the loser's code then misses is a linkage finding of its own.
func TestShadowBetweenLibJARsLeavesUsesToLinkage(t *testing.T) {
	util := "com/acme/util/Util"
	user := testkit.Class{Name: "org/apache/flink/connector/b/BFactory", Calls: []testkit.Call{{Owner: util, Name: "gone", Descriptor: "()V"}}}
	a := connector("/opt/flink/lib/a.jar", []testkit.Class{{Name: util}}, nil)
	b := connector("/opt/flink/lib/b.jar", []testkit.Class{user, {Name: util, Methods: []testkit.Member{m("gone", "()V")}}}, map[string][]string{factory: {"org.apache.flink.connector.b.BFactory"}})
	got := symbols(decideDeep(t, deepFacts(t, []jarBytes{a, b, dist()}, nil)))
	want := []string{"classpath-shadowed warning shadow com/acme/util/Util -> com/acme/util/Util.",
		"linkage-method warning method org/apache/flink/connector/b/BFactory -> com/acme/util/Util.gone()V"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// A stock JAR a payload requires (StreamFusion-Stock-Requires) whose own
// classes are built on a library nothing provides cannot load its source:
// an error, not the warning an absent library is for any other JAR.
func TestRequiredStockJARMustLoad(t *testing.T) {
	src := testkit.Class{Name: "org/apache/flink/connector/kafka/source/KafkaSource", Interfaces: []string{"org/apache/kafka/clients/consumer/ConsumerRebalanceListener"}}
	thin := connector("/opt/flink/lib/flink-connector-kafka-5.0.0-2.2.jar", []testkit.Class{src}, map[string][]string{factory: {"org.apache.flink.connector.kafka.source.KafkaSource"}})
	payloadJAR := jarBytes{"/opt/flink/lib/streamfusion-kafka.jar", testkit.ClassJAR(testkit.Manifest(AttrPayload, KindExtension, AttrStock, "flink-connector-kafka"), nil, nil)}
	sev := func(lib ...jarBytes) string {
		fs := decideDeep(t, deepFacts(t, append(lib, dist()), nil))
		if len(fs) != 1 || fs[0].Rule != "linkage-class" {
			t.Fatalf("want one linkage-class finding, got %v", symbols(fs))
		}
		return string(fs[0].Severity)
	}
	if got := sev(thin); got != "warning" {
		t.Errorf("alone: %s, want warning", got)
	}
	if got := sev(payloadJAR, thin); got != "error" {
		t.Errorf("required by a payload: %s, want error", got)
	}
}

// Flink's own class hidden by a copy that lacks a member the host's
// declares: flink-dist's code is built against it, an error.
func TestShadowOfFlinksOwnClassMissingAMember(t *testing.T) {
	base := testkit.Class{Name: "org/apache/flink/Base", Super: "org/apache/flink/Root", Methods: []testkit.Member{m("<init>", "(I)V")}, Fields: []testkit.Member{m("count", "J")}}
	fs := decideDeep(t, deepFacts(t, []jarBytes{connector("/opt/flink/lib/acme-fat.jar", []testkit.Class{base}, nil), dist()}, nil))
	if len(fs) != 1 || fs[0].Severity != Error || !strings.Contains(fs[0].Found, "the winning copy has no Base.present()") {
		t.Fatalf("got %v", fs)
	}
	base.Methods = append(base.Methods, m("present", "()V"))
	fs = decideDeep(t, deepFacts(t, []jarBytes{connector("/opt/flink/lib/acme-fat.jar", []testkit.Class{base}, nil), dist()}, nil))
	if len(fs) != 1 || fs[0].Severity != Warning {
		t.Fatalf("every member kept: got %v", fs)
	}
}
