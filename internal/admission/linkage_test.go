package admission

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// deepJAR is one JAR for the deep facts: its path and bytes.
type jarBytes struct {
	path string
	data []byte
}

func deepFacts(t *testing.T, lib, usrlib []jarBytes, parentFirst ...string) *Facts {
	t.Helper()
	f := &Facts{LibDir: "/opt/flink/lib", JDK: JDK{Version: "17.0.15"}, Deep: &Deep{ParentFirst: parentFirst}}
	read := func(j jarBytes) (*payload.JAR, *payload.Archive) {
		r := bytes.NewReader(j.data)
		a, err := payload.ReadArchive(r, int64(len(j.data)), j.path)
		if err != nil {
			t.Fatal(err)
		}
		return payload.Read(r, int64(len(j.data)), j.path, payload.Options{}), a
	}
	for _, j := range lib {
		pj, a := read(j)
		f.Classpath = append(f.Classpath, pj)
		f.Deep.Lib = append(f.Deep.Lib, a)
	}
	for _, j := range usrlib {
		pj, a := read(j)
		f.Usrlib = append(f.Usrlib, pj)
		f.Deep.Usrlib = append(f.Deep.Usrlib, a)
	}
	return f
}

func m(name, desc string) testkit.Member { return testkit.Member{Name: name, Descriptor: desc} }

// dist is a flink-dist of the host's own classes.
func dist(classes ...testkit.Class) jarBytes {
	base := []testkit.Class{
		{Name: "org/apache/flink/Root", Methods: []testkit.Member{m("inherited", "()V")}, Fields: []testkit.Member{m("ROOT", "I")}},
		{Name: "org/apache/flink/Api", Interface: true, Methods: []testkit.Member{m("fromInterface", "()V")}},
		{Name: "org/apache/flink/Base", Super: "org/apache/flink/Root", Interfaces: []string{"org/apache/flink/Api"},
			Methods: []testkit.Member{m("<init>", "(I)V"), m("present", "()V")}, Fields: []testkit.Member{m("count", "J")}},
	}
	return jarBytes{"/opt/flink/lib/flink-dist-2.2.0.jar", testkit.ClassJAR(testkit.Manifest("Implementation-Version", "2.2.0"), append(base, classes...), nil)}
}

func connector(path string, classes []testkit.Class, services map[string][]string) jarBytes {
	return jarBytes{path, testkit.ClassJAR(testkit.Manifest("Implementation-Title", "Flink : Connectors : X"), classes, services)}
}

func decideDeep(t *testing.T, f *Facts) []Finding {
	t.Helper()
	var out []Finding
	for _, fd := range Decide(f).Findings {
		if fd.Symbol != nil {
			out = append(out, fd)
		}
	}
	return out
}

func symbols(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		s := f.Symbol
		out = append(out, f.Rule+" "+string(f.Severity)+" "+s.Kind+" "+s.From+" -> "+s.Owner+"."+s.Name+s.Descriptor)
	}
	slices.Sort(out)
	return out
}

const factory = "org.apache.flink.table.factories.Factory"

func TestLinkageResolvesAsTheJVM(t *testing.T) {
	entry := testkit.Class{Name: "org/apache/flink/connector/x/XFactory",
		News: []string{"org/apache/flink/Base", "org/apache/flink/connector/x/Helper"},
		Calls: []testkit.Call{
			{Owner: "org/apache/flink/Base", Name: "<init>", Descriptor: "(I)V"},                                   // declared
			{Owner: "org/apache/flink/Base", Name: "<init>", Descriptor: "(J)V"},                                   // missing constructor
			{Owner: "org/apache/flink/Base", Name: "inherited", Descriptor: "()V"},                                 // in the superclass
			{Owner: "org/apache/flink/Base", Name: "fromInterface", Descriptor: "()V"},                             // in a superinterface
			{Owner: "org/apache/flink/Base", Name: "hashCode", Descriptor: "()I"},                                  // Object's
			{Owner: "org/apache/flink/Base", Name: "gone", Descriptor: "(Ljava/lang/String;[I)V"},                  // missing method
			{Owner: "org/apache/flink/Api", Interface: true, Name: "fromInterface", Descriptor: "()V"},             // interface method
			{Owner: "org/apache/flink/Api", Interface: true, Name: "toString", Descriptor: "()Ljava/lang/String;"}, // Object's, through an interface
			{Field: true, Owner: "org/apache/flink/Base", Name: "count", Descriptor: "J"},                          // declared field
			{Field: true, Owner: "org/apache/flink/Base", Name: "ROOT", Descriptor: "I"},                           // inherited field
			{Field: true, Owner: "org/apache/flink/Base", Name: "count", Descriptor: "I"},                          // wrong type: missing
			{Owner: "java/util/ArrayList", Name: "anything", Descriptor: "()V"},                                    // the JDK: not modelled
		},
		Unused: []string{"org/apache/flink/NotThere"}, // in the pool only
	}
	helper := testkit.Class{Name: "org/apache/flink/connector/x/Helper",
		News: []string{"org/apache/flink/Missing"}, // package org/apache/flink exists: a missing class
	}
	unreachable := testkit.Class{Name: "org/apache/flink/connector/x/Unused", News: []string{"org/apache/flink/AlsoMissing"}}
	f := deepFacts(t, []jarBytes{
		connector("/opt/flink/lib/flink-connector-x-1.0-1.18.jar", []testkit.Class{entry, helper, unreachable}, map[string][]string{factory: {"org.apache.flink.connector.x.XFactory"}}),
		dist(),
	}, nil)
	got := symbols(decideDeep(t, f))
	want := []string{
		"linkage-class error class org/apache/flink/connector/x/Helper -> org/apache/flink/Missing.",
		"linkage-field error field org/apache/flink/connector/x/XFactory -> org/apache/flink/Base.countI",
		"linkage-method error method org/apache/flink/connector/x/XFactory -> org/apache/flink/Base.<init>(J)V",
		"linkage-method error method org/apache/flink/connector/x/XFactory -> org/apache/flink/Base.gone(Ljava/lang/String;[I)V",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, fd := range decideDeep(t, f) {
		if fd.Symbol.Name == "gone" && !strings.Contains(fd.Message, "Base.gone(String, int[])") {
			t.Errorf("message not in Java syntax: %s", fd.Text())
		}
		if fd.Symbol.JAR != "/opt/flink/lib/flink-connector-x-1.0-1.18.jar" {
			t.Errorf("symbol's JAR %q", fd.Symbol.JAR)
		}
	}
}

// A class that does not link is reported once, at the edge the JVM's
// NoClassDefFoundError names: the class with no class file and the class
// whose superclass or interface names it. The classes that fail to load
// because of it (XSink's users) are no findings of their own.
func TestLinkageSupertypeMissing(t *testing.T) {
	entry := testkit.Class{Name: "org/apache/flink/connector/x/XSink", Super: "org/apache/flink/api/TwoPhaseSink",
		Interfaces: []string{"org/apache/flink/api/Sink", "org/apache/flink/api/StatefulSink"}}
	user := testkit.Class{Name: "org/apache/flink/connector/x/XFactory", News: []string{"org/apache/flink/connector/x/XSink"}}
	builder := testkit.Class{Name: "org/apache/flink/connector/x/XBuilder", News: []string{"org/apache/flink/connector/x/XSink"}}
	f := deepFacts(t, []jarBytes{
		connector("/opt/flink/lib/x.jar", []testkit.Class{entry, user, builder}, map[string][]string{factory: {"org.apache.flink.connector.x.XFactory", "org.apache.flink.connector.x.XBuilder"}}),
		dist(testkit.Class{Name: "org/apache/flink/api/Sink"}),
	}, nil)
	got := symbols(decideDeep(t, f))
	want := []string{
		"linkage-class error class org/apache/flink/connector/x/XSink -> org/apache/flink/api/StatefulSink.",
		"linkage-class error class org/apache/flink/connector/x/XSink -> org/apache/flink/api/TwoPhaseSink.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	for _, fd := range decideDeep(t, f) {
		if fd.Symbol.JAR != "/opt/flink/lib/x.jar" || fd.Path != "/opt/flink/lib/x.jar" ||
			!strings.Contains(fd.Found, javaName(fd.Symbol.Owner)) || !strings.Contains(fd.Message, "XSink does not load") {
			t.Errorf("finding %s (symbol %+v)", fd.Text(), *fd.Symbol)
		}
	}
}

// A library nothing on the classpath provides: reported when the JAR's own
// classes are built on it (a thin connector without its client library:
// a class of its own implements one of the library's interfaces), quiet
// for another absent library its own code only calls (an optional path),
// and quiet from code it bundles (a library shaded into a fat connector).
func TestLinkageMissingDependency(t *testing.T) {
	own := testkit.Class{Name: "org/apache/flink/connector/x/XSource",
		News: []string{"org/apache/kafka/clients/Consumer", "org/joda/time/DateTime", "org/apache/flink/connector/x/XCallback", "org/apache/flink/kafka/shaded/org/apache/kafka/Oauth"}}
	callback := testkit.Class{Name: "org/apache/flink/connector/x/XCallback", Interfaces: []string{"org/apache/kafka/clients/Callback"}}
	bundled := testkit.Class{Name: "org/apache/flink/kafka/shaded/org/apache/kafka/Oauth", Super: "com/github/luben/zstd/BufferPool", News: []string{"com/fasterxml/jackson/databind/ObjectMapper"}}
	jar := func(classes ...testkit.Class) []jarBytes {
		return []jarBytes{connector("/opt/flink/lib/x.jar", classes, map[string][]string{factory: {"org.apache.flink.connector.x.XSource"}}), dist()}
	}
	d := decideDeep(t, deepFacts(t, jar(own, callback, bundled), nil))
	got := symbols(d)
	want := []string{
		"linkage-class warning class org/apache/flink/connector/x/XCallback -> org/apache/kafka/clients/Callback.",
		"linkage-class warning class org/apache/flink/connector/x/XSource -> org/apache/kafka/clients/Consumer.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The fix names the library to add, not another build of the JAR:
	// the JAR is the right one, its dependency is missing.
	for _, f := range d {
		if f.Rule == "linkage-class" && f.Fix != "add the JAR that provides org.apache.kafka.clients to lib beside x.jar, which is built against it (a dependency it declares)" {
			t.Errorf("fix: %q", f.Fix)
		}
	}
	// Without a class of its own built on Kafka, the absent library is an optional one.
	own.News = slices.DeleteFunc(own.News, func(n string) bool { return n == "org/apache/flink/connector/x/XCallback" })
	if got := symbols(decideDeep(t, deepFacts(t, jar(own, bundled), nil))); len(got) != 0 {
		t.Fatalf("optional paths reported: %v", got)
	}
}

// A JAR that embeds its own POM says which libraries it needs at run time:
// an absent library its POM declares with compile scope is reported, one it
// declares provided or not at all (Paimon's Kafka and CDC actions, which
// the user adds) stays quiet, as does code relocated under a "shade"
// package (Paimon's Netty naming BlockHound).
func TestLinkageMissingDependencyPOM(t *testing.T) {
	own := testkit.Class{Name: "org/apache/paimon/flink/kafka/KafkaSinkFunction", Super: "org/apache/flink/streaming/connectors/kafka/FlinkKafkaProducer",
		News: []string{"org/apache/paimon/flink/cdc/Sync", "org/apache/paimon/shade/netty4/io/netty/Hidden"}}
	sync := testkit.Class{Name: "org/apache/paimon/flink/cdc/Sync", Interfaces: []string{"com/ververica/cdc/debezium/Schema"}, News: []string{"com/acme/client/Client"}}
	relocated := testkit.Class{Name: "org/apache/paimon/shade/netty4/io/netty/Hidden", Interfaces: []string{"reactor/blockhound/integration/BlockHoundIntegration"}}
	pomXML := func(deps string) []byte {
		return []byte(`<?xml version="1.0"?><project><groupId>org.apache.paimon</groupId><artifactId>paimon-flink-1.18</artifactId><dependencies>` + deps + `</dependencies></project>`)
	}
	facts := func(deps string) *Facts {
		services := map[string][]string{factory: {"org.apache.paimon.flink.kafka.KafkaSinkFunction"}, "reactor.blockhound.integration.BlockHoundIntegration": {"org.apache.paimon.shade.netty4.io.netty.Hidden"}}
		jar := testkit.ClassJAR("", []testkit.Class{own, sync, relocated}, services,
			testkit.Entry{Name: "META-INF/maven/org.apache.paimon/paimon-flink-1.18/pom.xml", Data: pomXML(deps)},
			testkit.Entry{Name: "META-INF/maven/com.acme/other/pom.xml", Data: pomXML(`<dependency><groupId>com.ververica</groupId></dependency>`)})
		return deepFacts(t, []jarBytes{{"/opt/flink/lib/paimon-flink-1.18-0.8.2.jar", jar}, dist()}, nil)
	}
	quiet := `<dependency><groupId>org.apache.flink</groupId><artifactId>flink-connector-kafka</artifactId><scope>provided</scope></dependency>` +
		`<dependency><groupId>com.ververica</groupId><artifactId>cdc</artifactId><optional>true</optional></dependency>` +
		`<dependency><groupId>${project.groupId}</groupId><artifactId>paimon-flink-common</artifactId></dependency>`
	if got := symbols(decideDeep(t, facts(quiet))); len(got) != 0 {
		t.Fatalf("libraries the POM leaves to the user reported: %v", got)
	}
	got := symbols(decideDeep(t, facts(quiet+`<dependency><groupId>com.ververica</groupId><artifactId>cdc-debezium</artifactId><scope>compile</scope></dependency>`)))
	want := []string{"linkage-class warning class org/apache/paimon/flink/cdc/Sync -> com/ververica/cdc/debezium/Schema."}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A package of Flink's own API that the host no longer has at all (Flink 2
// dropped org.apache.flink.table.api.constraints) is the host's API
// changing, reported whether or not the JAR's classes are built on it; a
// connector's package that nothing provides is a library left out.
func TestLinkageHostPackageGone(t *testing.T) {
	entry := testkit.Class{Name: "org/apache/iceberg/flink/FlinkCatalog",
		News: []string{"org/apache/flink/table/api/constraints/UniqueConstraint", "org/apache/flink/streaming/connectors/kafka/FlinkKafkaProducer"}}
	f := deepFacts(t, []jarBytes{
		connector("/opt/flink/lib/iceberg-flink-runtime-1.18-1.5.2.jar", []testkit.Class{entry}, map[string][]string{factory: {"org.apache.iceberg.flink.FlinkCatalog"}}),
		dist(),
	}, nil)
	got := symbols(decideDeep(t, f))
	want := []string{"linkage-class error class org/apache/iceberg/flink/FlinkCatalog -> org/apache/flink/table/api/constraints/UniqueConstraint."}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A JAR's own code is its entry points' project: a thin connector whose
// factory lies in org.apache.flink.streaming reaches its metrics code in
// org.apache.flink.connector, which uses the absent client library its
// sink is built on. Bundled code (under a "shaded" package) calling a
// member of bundled code of the same JAR that is not there is the JAR's own
// disagreement, quiet.
func TestLinkageOwnProject(t *testing.T) {
	factoryClass := testkit.Class{Name: "org/apache/flink/streaming/connectors/x/table/XFactory",
		News: []string{"org/apache/flink/connector/x/MetricUtil", "org/apache/flink/connector/x/XHeader", "org/apache/flink/x/shaded/lib/A"}}
	metrics := testkit.Class{Name: "org/apache/flink/connector/x/MetricUtil", News: []string{"org/apache/kafka/common/Metric"}}
	header := testkit.Class{Name: "org/apache/flink/connector/x/XHeader", Interfaces: []string{"org/apache/kafka/common/header/Header"}}
	a := testkit.Class{Name: "org/apache/flink/x/shaded/lib/A", Calls: []testkit.Call{{Owner: "org/apache/flink/x/shaded/lib/B", Name: "gone", Descriptor: "()V"}}}
	b := testkit.Class{Name: "org/apache/flink/x/shaded/lib/B"}
	f := deepFacts(t, []jarBytes{
		connector("/opt/flink/lib/x.jar", []testkit.Class{factoryClass, metrics, header, a, b}, map[string][]string{factory: {"org.apache.flink.streaming.connectors.x.table.XFactory"}}),
		dist(),
	}, nil)
	got := symbols(decideDeep(t, f))
	want := []string{
		"linkage-class warning class org/apache/flink/connector/x/MetricUtil -> org/apache/kafka/common/Metric.",
		"linkage-class warning class org/apache/flink/connector/x/XHeader -> org/apache/kafka/common/header/Header.",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestShadowing(t *testing.T) {
	same := testkit.Class{Name: "org/apache/flink/connector/base/Shared"}
	differs := testkit.Class{Name: "org/apache/flink/Base", Methods: []testkit.Member{m("other", "()V")}}
	fat := jarBytes{"/opt/flink/lib/a-fat.jar", testkit.ClassJAR("", []testkit.Class{same, differs}, nil,
		testkit.Entry{Name: "module-info.class", Data: []byte("another module")})}
	f := deepFacts(t, []jarBytes{fat, dist(same)}, nil)
	got := decideDeep(t, f)
	if len(got) != 1 || got[0].Rule != "classpath-shadowed" || got[0].Severity != Error ||
		got[0].Symbol.Owner != "org/apache/flink/Base" || got[0].Symbol.Kind != SymShadow || got[0].Path != "/opt/flink/lib/a-fat.jar" {
		t.Fatalf("got %+v", got)
	}
}

func TestUsrlibChildFirst(t *testing.T) {
	main := testkit.Class{Name: "com/acme/job/Main", Calls: []testkit.Call{{Owner: "com/acme/lib/Util", Name: "help", Descriptor: "()V"}}}
	// usrlib's copy of a lib class is loaded first (child-first), but
	// org.apache.flink. is parent-first: lib's Base answers, and the job's
	// own copy is hidden (a warning: the host's copy is the one loaded).
	util := testkit.Class{Name: "com/acme/lib/Util", Methods: []testkit.Member{m("help", "()V")}}
	oldBase := testkit.Class{Name: "org/apache/flink/Base"}
	job := jarBytes{"/opt/flink/usrlib/job.jar", testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.job.Main"), []testkit.Class{main, util, oldBase}, nil)}
	libUtil := testkit.Class{Name: "com/acme/lib/Util"}
	f := deepFacts(t, []jarBytes{connector("/opt/flink/lib/util.jar", []testkit.Class{libUtil}, nil), dist()}, []jarBytes{job}, "java.", "org.apache.flink.")
	fs := decideDeep(t, f)
	got := symbols(fs)
	want := []string{"classpath-shadowed warning shadow com/acme/lib/Util -> com/acme/lib/Util.",
		"classpath-shadowed warning shadow org/apache/flink/Base -> org/apache/flink/Base."}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	for _, fd := range fs {
		if fd.Symbol.Owner == "org/apache/flink/Base" && (fd.Path != "/opt/flink/usrlib/job.jar" || fd.Symbol.JAR != "/opt/flink/lib/flink-dist-2.2.0.jar" ||
			!strings.Contains(fd.Message, "loaded parent-first from lib")) {
			t.Errorf("the job's copy hidden by lib's: %+v", fd)
		}
	}
	// Without the parent-first pattern, the job's Base hides flink-dist's.
	f = deepFacts(t, []jarBytes{connector("/opt/flink/lib/util.jar", []testkit.Class{libUtil}, nil), dist()}, []jarBytes{job}, "java.")
	if got := symbols(decideDeep(t, f)); len(got) != 2 || !strings.HasPrefix(got[0], "classpath-shadowed error shadow org/apache/flink/Base") {
		t.Fatalf("got %v", got)
	}
}

func TestLinkageSeverityAndVersion(t *testing.T) {
	main := testkit.Class{Name: "com/acme/job/Main", Major: 65, Calls: []testkit.Call{{Owner: "org/apache/flink/Base", Name: "gone", Descriptor: "()V"}}}
	job := jarBytes{"/opt/flink/usrlib/job.jar", testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.job.Main"), []testkit.Class{main}, nil)}
	f := deepFacts(t, []jarBytes{dist()}, []jarBytes{job}, "java.", "org.apache.flink.")
	got := symbols(decideDeep(t, f))
	want := []string{
		"bytecode-version error version com/acme/job/Main -> com/acme/job/Main.",
		"linkage-method error method com/acme/job/Main -> org/apache/flink/Base.gone()V",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// A lib JAR's code that does not link against the host's own Flink is
	// an error whatever the JAR (issue 28); its class file too new for the
	// JDK a warning, raised by STREAMFUSION_STRICT.
	lib := connector("/opt/flink/lib/x.jar", []testkit.Class{main}, nil)
	lib.data = testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.job.Main"), []testkit.Class{main}, nil)
	f = deepFacts(t, []jarBytes{lib, dist()}, nil)
	got = symbols(decideDeep(t, f))
	want = []string{
		"bytecode-version warning version com/acme/job/Main -> com/acme/job/Main.",
		"linkage-method error method com/acme/job/Main -> org/apache/flink/Base.gone()V",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("lib: got %v, want %v", got, want)
	}
	f.Strict = true
	for _, fd := range decideDeep(t, f) {
		if fd.Rule == "bytecode-version" && (fd.Severity != Error || !fd.Strict) {
			t.Errorf("strict: %s %s strict=%v", fd.Rule, fd.Severity, fd.Strict)
		}
	}
}

func TestNoDeepFactsNoDeepFindings(t *testing.T) {
	f := deepFacts(t, []jarBytes{connector("/opt/flink/lib/x.jar", []testkit.Class{{Name: "a/B", Super: "a/Gone"}}, map[string][]string{factory: {"a.B"}}), dist()}, nil)
	if len(decideDeep(t, f)) == 0 {
		t.Fatal("the deep facts find nothing: the test cannot fail")
	}
	f.Deep = nil
	if got := decideDeep(t, f); len(got) != 0 {
		t.Fatalf("without deep facts: %v", got)
	}
}

func TestDescriptorParams(t *testing.T) {
	got, ok := descriptorParams("(Lorg/apache/flink/FutureCompletingBlockingQueue;Ljava/util/function/Supplier;[[IJZ)V")
	if !ok || strings.Join(got, ", ") != "FutureCompletingBlockingQueue, Supplier, int[][], long, boolean" {
		t.Fatalf("%v %v", got, ok)
	}
}

const samplePOM = `<?xml version="1.0"?>
<project>
  <groupId>org.apache.paimon</groupId>
  <dependencyManagement><dependencies>
    <dependency><groupId>com.managed</groupId><artifactId>m</artifactId></dependency>
  </dependencies></dependencyManagement>
  <dependencies>
    <!-- <dependency><groupId>com.commented</groupId></dependency> -->
    <dependency>
      <groupId>${project.groupId}</groupId><artifactId>paimon-flink-common</artifactId>
      <exclusions><exclusion><groupId>*</groupId><artifactId>*</artifactId></exclusion></exclusions>
    </dependency>
    <dependency><artifactId>kafka-clients</artifactId><groupId> org.apache.kafka </groupId><scope>runtime</scope></dependency>
    <dependency><groupId>org.apache.flink</groupId><scope>provided</scope></dependency>
    <dependency><groupId>com.ververica</groupId><optional>true</optional></dependency>
    <dependency><groupId>org.junit</groupId><scope>test</scope></dependency>
  </dependencies>
  <build><plugins><plugin><dependencies>
    <dependency><groupId>com.plugin</groupId></dependency>
  </dependencies></plugin></plugins></build>
</project>`

func TestPOMRuntimeGroups(t *testing.T) {
	got := pomRuntimeGroups(samplePOM, "org.apache.paimon")
	want := []string{"org/apache/paimon/", "org/apache/kafka/"}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
}

// FuzzPOMRuntimeGroups: any bytes give at most one group per <dependency>,
// each a package path, and never a panic or a hang.
func FuzzPOMRuntimeGroups(f *testing.F) {
	f.Add(samplePOM)
	f.Add("<dependency><groupId>a</groupId>")
	f.Add("<!--<dependency>")
	f.Fuzz(func(t *testing.T, pom string) {
		got := pomRuntimeGroups(pom, "own.group")
		if len(got) > strings.Count(pom, "<dependency>") {
			t.Fatalf("%d groups from %d <dependency> elements", len(got), strings.Count(pom, "<dependency>"))
		}
		for _, g := range got {
			if !strings.HasSuffix(g, "/") || strings.Contains(g, ".") || g == "/" {
				t.Fatalf("group %q", g)
			}
		}
	})
}

// One finding per pair of JARs, every hidden class in the symbol; usrlib's
// JARs shadow each other in their order too.
func TestShadowingOneFindingPerPair(t *testing.T) {
	base := testkit.Class{Name: "org/apache/flink/Base", Methods: []testkit.Member{m("other", "()V")}}
	api := testkit.Class{Name: "org/apache/flink/Api", Methods: []testkit.Member{m("other", "()V")}}
	fat := jarBytes{"/opt/flink/lib/a-fat.jar", testkit.ClassJAR("", []testkit.Class{base, api}, nil)}
	one := testkit.Class{Name: "com/acme/X"}
	two := testkit.Class{Name: "com/acme/X", Methods: []testkit.Member{m("other", "()V")}}
	j1 := jarBytes{"/opt/flink/usrlib/a.jar", testkit.ClassJAR("", []testkit.Class{one}, nil)}
	j2 := jarBytes{"/opt/flink/usrlib/b.jar", testkit.ClassJAR("", []testkit.Class{two}, nil)}
	f := deepFacts(t, []jarBytes{fat, dist()}, []jarBytes{j1, j2}, "java.")
	got := decideDeep(t, f)
	if len(got) != 2 {
		t.Fatalf("want 2 findings (lib pair, usrlib pair), got %+v", got)
	}
	lib, usr := got[0], got[1]
	if lib.Symbol.JAR != "/opt/flink/lib/a-fat.jar" || !slices.Equal(lib.Symbol.Classes, []string{"org/apache/flink/Api", "org/apache/flink/Base"}) ||
		!strings.HasPrefix(lib.Message, "2 classes (org.apache.flink.Api, org.apache.flink.Base) come first in lib") {
		t.Errorf("lib pair: %+v %+v", lib, lib.Symbol)
	}
	if usr.Symbol.JAR != "/opt/flink/usrlib/a.jar" || !slices.Equal(usr.Symbol.Classes, []string{"com/acme/X"}) ||
		!strings.Contains(usr.Message, "hides a different copy in /opt/flink/usrlib/b.jar") {
		t.Errorf("usrlib pair: %+v %+v", usr, usr.Symbol)
	}
}

// Reachability crosses into the other JARs that are not the host's (a
// connector's calls into its client library), and a library the flink-dist
// of the connector's own line carries unrelocated (Jackson in 2.0) that
// nothing on the host provides is reported where it is used; on its own
// line the same path is an optional one and stays quiet.
func TestLinkageAcrossJARsAndTheLinesFlinkDist(t *testing.T) {
	if !slices.Contains(DistPackages("2.0"), "com/fasterxml/jackson/databind") || slices.Contains(DistPackages("2.2"), "com/fasterxml/jackson/databind") {
		t.Fatalf("flinkdist tables: 2.0 must carry Jackson, 2.2 not")
	}
	entry := testkit.Class{Name: "org/apache/flink/connector/x/XFactory", News: []string{"com/acme/clients/Client"}}
	client := testkit.Class{Name: "com/acme/clients/Client", News: []string{"com/fasterxml/jackson/databind/JsonNode"}}
	clients := jarBytes{"/opt/flink/lib/x-clients-1.0.jar", testkit.ClassJAR("", []testkit.Class{client}, nil)}
	for _, c := range []struct {
		line string
		want []string
	}{
		{"2.0", []string{"linkage-class warning class com/acme/clients/Client -> com/fasterxml/jackson/databind/JsonNode."}},
		{"2.2", nil},
	} {
		conn := connector("/opt/flink/lib/flink-connector-x-1.0.0-"+c.line+".jar", []testkit.Class{entry}, map[string][]string{factory: {"org.apache.flink.connector.x.XFactory"}})
		planner := jarBytes{"/opt/flink/lib/flink-table-planner-loader-2.2.0.jar", testkit.ClassJAR(testkit.Manifest("Implementation-Version", "2.2.0"), nil, nil)}
		f := deepFacts(t, []jarBytes{conn, clients, planner, dist()}, nil)
		fs := decideDeep(t, f)
		if got := symbols(fs); !slices.Equal(got, c.want) {
			t.Fatalf("connector for %s: got %v, want %v", c.line, got, c.want)
		}
		if len(fs) == 1 && (fs[0].Symbol.JAR != "/opt/flink/lib/x-clients-1.0.jar" || !strings.Contains(fs[0].Found, "flink-dist of Flink 2.0 carries com.fasterxml.jackson.databind")) {
			t.Errorf("finding: %s (symbol %+v)", fs[0].Text(), fs[0].Symbol)
		}
	}
}

func TestNamespace(t *testing.T) {
	for class, want := range map[string]string{
		"org/apache/flink/connector/kafka/KafkaSink": "org/apache/flink",
		"com/acme/Job": "com/acme", "Top": "", "a/b/c/D": "a/b/c",
		"org/apache/paimon/shade/guava/X": "-", "org/apache/flink/kafka/shaded/org/apache/kafka/X": "-", "shaded/X": "-",
	} {
		got, ok := namespace(class)
		if !ok {
			got = "-"
		}
		if got != want {
			t.Errorf("namespace(%s) = %q, want %q", class, got, want)
		}
	}
}
