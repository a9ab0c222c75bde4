package admission_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// flinkJAR is one of Flink's own JARs as the real ones say who they are
// (flink-connector-kafka-3.2.0-1.18.jar, flink-json-2.2.0.jar: see
// internal/realflink/testdata/README.md).
func flinkJAR(t *testing.T, name, title, version string) *payload.JAR {
	t.Helper()
	return jar(t, name, "Implementation-Title", "Flink : "+title, "Implementation-Version", version,
		"Implementation-Vendor-Id", "org.apache.flink", "Implementation-Vendor", "The Apache Software Foundation")
}

func withLib(t *testing.T, jars ...*payload.JAR) *admission.Facts {
	t.Helper()
	f := goodFacts(t)
	n := len(f.Classpath)
	f.Classpath = append(append(append([]*payload.JAR(nil), f.Classpath[:n-1]...), jars...), f.Classpath[n-1])
	return f
}

func findings(d *admission.Decision, rule string) []admission.Finding {
	var out []admission.Finding
	for _, f := range d.Findings {
		if f.Rule == rule {
			out = append(out, f)
		}
	}
	return out
}

func TestConsistentStockJARsGiveNoFinding(t *testing.T) {
	t.Parallel()
	f := withLib(t,
		flinkJAR(t, "flink-cep-2.2.1.jar", "Libraries : CEP", "2.2.1"),
		flinkJAR(t, "flink-json-2.2.1.jar", "Formats : Json", "2.2.1"),
		flinkJAR(t, "flink-connector-kafka-5.0.0-2.2.jar", "Connectors : Kafka", "5.0.0-2.2"),
		flinkJAR(t, "flink-sql-connector-kafka-5.0.0-2.2.jar", "Connectors : SQL : Kafka", "5.0.0-2.2"),
		jar(t, "paimon-flink-2.2-1.3.0.jar", "Implementation-Title", "Paimon : Flink : 2.2", "Implementation-Version", "1.3.0"),
		jar(t, "iceberg-flink-runtime-2.2-1.11.0.jar"),
		// Not Flink's, or nothing said about a Flink: never judged.
		jar(t, "log4j-api-2.24.3.jar", "Implementation-Title", "Apache Log4j API", "Implementation-Version", "2.24.3"),
		jar(t, "log4j-core-2.17.1.jar", "Implementation-Vendor-Id", "org.apache.logging.log4j", "Implementation-Version", "2.17.1"),
		jar(t, "flink-faker-0.5.3.jar", "Implementation-Version", "0.5.3"),
		jar(t, "flink-shaded-jackson-2.15.3-19.0.jar", "Implementation-Vendor-Id", "org.apache.flink", "Implementation-Title", "flink-shaded-jackson-2", "Implementation-Version", "2.15.3-19.0"),
		flinkJAR(t, "flink-connector-kafka-3.3.0-SNAPSHOT.jar", "Connectors : Kafka Vendor Build", "3.3.0-1.19-SNAPSHOT"),
		jar(t, "paimon-flink-action-1.3.0.jar", "Implementation-Title", "Paimon : Flink : Action", "Implementation-Version", "1.3.0"),
	)
	d := admission.Decide(f)
	assert.Empty(t, d.Findings)
}

func TestStockRulesOnFacts(t *testing.T) {
	t.Parallel()
	kafkaNeeds := func(prefix string) *payload.JAR {
		return sf(t, "streamfusion-kafka.jar", admission.KindExtension, "streamfusion-kafka", "2.2", "0.1.0", admission.AttrStock, prefix)
	}
	cases := []struct {
		name     string
		facts    func() *admission.Facts
		rule     string
		severity admission.Severity
		path     string
		found    string
		required string
		fix      string
	}{
		{"connector of line 1.18", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-connector-kafka-3.2.0-1.18.jar", "Connectors : Kafka", "3.2.0-1.18"))
		}, "stock-line", admission.Error, factsLib + "/flink-connector-kafka-3.2.0-1.18.jar",
			"line 1.18 (Implementation-Version 3.2.0-1.18 in its manifest)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.flink:flink-connector-kafka:5.0.0-2.2 in its place (the release this entrypoint knows for line 2.2)"},
		{"connector of line 2.0", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-connector-kafka-4.0.0-2.0.jar", "Connectors : Kafka", "4.0.0-2.0"))
		}, "stock-line", admission.Warning, factsLib + "/flink-connector-kafka-4.0.0-2.0.jar",
			"line 2.0 (Implementation-Version 4.0.0-2.0 in its manifest)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.flink:flink-connector-kafka:5.0.0-2.2 in its place (the release this entrypoint knows for line 2.2)"},
		{"connector of line 2.0 a payload needs", func() *admission.Facts {
			f := withLib(t, flinkJAR(t, "flink-connector-kafka-4.0.0-2.0.jar", "Connectors : Kafka", "4.0.0-2.0"))
			f.Classpath[3] = kafkaNeeds("flink-connector-kafka")
			return f
		}, "stock-line", admission.Error, factsLib + "/flink-connector-kafka-4.0.0-2.0.jar",
			"line 2.0 (Implementation-Version 4.0.0-2.0 in its manifest)",
			"line 2.2 (the host runs Flink 2.2.1), which streamfusion-kafka 0.1.0 needs (StreamFusion-Stock-Requires)",
			"install org.apache.flink:flink-connector-kafka:5.0.0-2.2 in its place (the release this entrypoint knows for line 2.2)"},
		{"the needed connector only of another line", func() *admission.Facts {
			f := withLib(t, flinkJAR(t, "flink-connector-kafka-4.0.0-2.0.jar", "Connectors : Kafka", "4.0.0-2.0"))
			f.Classpath[3] = kafkaNeeds("flink-connector-kafka")
			return f
		}, "stock-requires-missing", admission.Warning, factsLib + "/streamfusion-kafka.jar",
			"only " + factsLib + "/flink-connector-kafka-4.0.0-2.0.jar, built for line 2.0", "flink-connector-kafka*.jar built for line 2.2",
			"install the flink-connector-kafka JAR built for the host's Flink release into lib (org.apache.flink:flink-connector-kafka:5.0.0-2.2)"},
		{"the needed connector's line cannot be told", func() *admission.Facts {
			f := withLib(t, jar(t, "flink-connector-kafka-custom.jar"))
			f.Classpath[3] = kafkaNeeds("flink-connector-kafka")
			return f
		}, "stock-requires-missing", admission.Warning, factsLib + "/streamfusion-kafka.jar",
			"only " + factsLib + "/flink-connector-kafka-custom.jar, whose Flink line cannot be told", "flink-connector-kafka*.jar built for line 2.2",
			"install the flink-connector-kafka JAR built for the host's Flink release into lib (org.apache.flink:flink-connector-kafka:5.0.0-2.2)"},
		{"renamed connector: the manifest, not the name", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-connector-kafka-5.0.0-2.2.jar", "Connectors : Kafka", "3.2.0-1.18"))
		}, "stock-line", admission.Error, factsLib + "/flink-connector-kafka-5.0.0-2.2.jar",
			"line 1.18 (Implementation-Version 3.2.0-1.18 in its manifest)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.flink:flink-connector-kafka:5.0.0-2.2 in its place (the release this entrypoint knows for line 2.2)"},
		{"connector known by its file name only", func() *admission.Facts {
			return withLib(t, jar(t, "flink-connector-jdbc-3.2.0-1.18.jar"))
		}, "stock-line", admission.Error, factsLib + "/flink-connector-jdbc-3.2.0-1.18.jar",
			"line 1.18 (its file name)", "line 2.2 (the host runs Flink 2.2.1)",
			"install a release of org.apache.flink:flink-connector-jdbc built for Flink 2.2 (version <connector version>-2.2) in its place"},
		{"paimon of line 1.18", func() *admission.Facts {
			return withLib(t, jar(t, "paimon-flink-1.18-0.8.2.jar", "Implementation-Title", "Paimon : Flink : 1.18", "Implementation-Version", "0.8.2"))
		}, "stock-line", admission.Error, factsLib + "/paimon-flink-1.18-0.8.2.jar",
			"line 1.18 (Implementation-Title Paimon : Flink : 1.18 in its manifest)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.paimon:paimon-flink-2.2 (a release built for Flink 2.2) in its place"},
		{"renamed paimon", func() *admission.Facts {
			return withLib(t, jar(t, "paimon.jar", "Implementation-Title", "Paimon : Flink : 2.0", "Implementation-Version", "1.1.1"))
		}, "stock-line", admission.Warning, factsLib + "/paimon.jar",
			"line 2.0 (Implementation-Title Paimon : Flink : 2.0 in its manifest)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.paimon:paimon-flink-2.2 (a release built for Flink 2.2) in its place"},
		{"iceberg of line 1.18", func() *admission.Facts {
			return withLib(t, jar(t, "iceberg-flink-runtime-1.18-1.5.2.jar"))
		}, "stock-line", admission.Error, factsLib + "/iceberg-flink-runtime-1.18-1.5.2.jar",
			"line 1.18 (its file name)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.iceberg:iceberg-flink-runtime-2.2 (a release built for Flink 2.2) in its place"},
		{"doris of line 1.18", func() *admission.Facts {
			return withLib(t, jar(t, "flink-doris-connector-1.18-25.1.0.jar"))
		}, "stock-line", admission.Error, factsLib + "/flink-doris-connector-1.18-25.1.0.jar",
			"line 1.18 (its file name)", "line 2.2 (the host runs Flink 2.2.1)",
			"install org.apache.doris:flink-doris-connector-2.2 (a release built for Flink 2.2) in its place"},
		{"module of another minor", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-avro-1.18.1.jar", "Formats : Avro", "1.18.1"))
		}, "stock-release", admission.Error, factsLib + "/flink-avro-1.18.1.jar",
			"Flink 1.18.1 (Implementation-Version 1.18.1 in its manifest)", "Flink 2.2.1, the host's",
			"install org.apache.flink:flink-avro:2.2.1 in its place (the module of the host's release)"},
		{"module of another patch", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-avro-2.2.0.jar", "Formats : Avro", "2.2.0"))
		}, "stock-release", admission.Warning, factsLib + "/flink-avro-2.2.0.jar",
			"Flink 2.2.0 (Implementation-Version 2.2.0 in its manifest)", "Flink 2.2.1, the host's",
			"install org.apache.flink:flink-avro:2.2.1 in its place (the module of the host's release)"},
		{"renamed module", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "json.jar", "Formats : Json", "2.1.1"))
		}, "stock-release", admission.Error, factsLib + "/json.jar",
			"Flink 2.1.1 (Implementation-Version 2.1.1 in its manifest)", "Flink 2.2.1, the host's",
			"install org.apache.flink:flink-json:2.2.1 in its place (the module of the host's release)"},
		{"module twice", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-json-2.2.1.jar", "Formats : Json", "2.2.1"), flinkJAR(t, "json-copy.jar", "Formats : Json", "2.2.1"))
		}, "stock-duplicate", admission.Error, factsLib + "/json-copy.jar",
			"flink-json 2.2.1 at " + factsLib + "/flink-json-2.2.1.jar, flink-json 2.2.1 at " + factsLib + "/json-copy.jar", "each connector or module once",
			"keep " + factsLib + "/flink-json-2.2.1.jar and remove the others"},
		{"connector of two lines", func() *admission.Facts {
			return withLib(t, flinkJAR(t, "flink-connector-kafka-3.2.0-1.18.jar", "Connectors : Kafka", "3.2.0-1.18"),
				flinkJAR(t, "flink-connector-kafka-5.0.0-2.2.jar", "Connectors : Kafka", "5.0.0-2.2"))
		}, "stock-duplicate", admission.Error, factsLib + "/flink-connector-kafka-5.0.0-2.2.jar",
			"flink-connector-kafka 3.2.0-1.18 at " + factsLib + "/flink-connector-kafka-3.2.0-1.18.jar, flink-connector-kafka 5.0.0-2.2 at " + factsLib + "/flink-connector-kafka-5.0.0-2.2.jar",
			"each connector or module once", "keep " + factsLib + "/flink-connector-kafka-5.0.0-2.2.jar and remove the others"},
		{"paimon of two lines", func() *admission.Facts {
			return withLib(t, jar(t, "paimon-flink-2.0-1.1.1.jar", "Implementation-Title", "Paimon : Flink : 2.0"), jar(t, "paimon-flink-2.2-1.3.0.jar"))
		}, "stock-duplicate", admission.Error, factsLib + "/paimon-flink-2.2-1.3.0.jar",
			"paimon-flink-2.0  at " + factsLib + "/paimon-flink-2.0-1.1.1.jar, paimon-flink-2.2 1.3.0 at " + factsLib + "/paimon-flink-2.2-1.3.0.jar",
			"each connector or module once", "keep " + factsLib + "/paimon-flink-2.2-1.3.0.jar and remove the others"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := admission.Decide(c.facts())
			got := findings(d, c.rule)
			require.Len(t, got, 1, "one fact, one finding of %s: %v", c.rule, d.Findings)
			f := got[0]
			assert.Equal(t, c.severity, f.Severity)
			assert.Equal(t, c.path, f.Path)
			assert.Equal(t, c.found, f.Found)
			assert.Equal(t, c.required, f.Required)
			assert.Equal(t, c.fix, f.Fix)
			if c.severity == admission.Error {
				assert.False(t, d.Admitted())
			}
		})
	}
}

func TestStockRenamedCopyStillSatisfiesStockRequires(t *testing.T) {
	t.Parallel()
	f := withLib(t, flinkJAR(t, "kafka.jar", "Connectors : Kafka", "5.0.0-2.2"))
	f.Classpath[3] = sf(t, "streamfusion-kafka.jar", admission.KindExtension, "streamfusion-kafka", "2.2", "0.1.0", admission.AttrStock, "flink-connector-kafka")
	assert.Empty(t, admission.Decide(f).Findings)
}

func TestStockWarningsAreErrorsWhenStrict(t *testing.T) {
	t.Parallel()
	f := withLib(t, flinkJAR(t, "flink-avro-2.2.0.jar", "Formats : Avro", "2.2.0"))
	f.Strict = true
	d := admission.Decide(f)
	require.Len(t, d.Errors(), 1)
	assert.Equal(t, "stock-release", d.Errors()[0].Rule)
	assert.True(t, d.Errors()[0].Strict)
}

func TestStockOfTheHostsOwnJARsIsLeftToTheHostRules(t *testing.T) {
	t.Parallel()
	f := goodFacts(t)
	n := len(f.Classpath)
	f.Classpath[n-1] = flinkJAR(t, "flink-dist-2.2.1.jar", "Dist", "2.2.1")
	f.Classpath[1] = flinkJAR(t, "flink-table-planner-loader-2.2.1.jar", "Table : Planner Loader", "2.2.1")
	f.Classpath = append(f.Classpath, flinkJAR(t, "flink-dist-2.2.0.jar", "Dist", "2.2.0"))
	d := admission.Decide(f)
	assert.Equal(t, []string{"host-dist-duplicate"}, rules(d.Findings))
}

func TestParseStockVersion(t *testing.T) {
	t.Parallel()
	for s, want := range map[string]*admission.StockVersion{
		"3.2.0-1.18":          {Connector: true, Own: "3.2.0", Line: "1.18"},
		"5.0.0-2.2":           {Connector: true, Own: "5.0.0", Line: "2.2"},
		"2.2.0":               {Own: "2.2.0", Line: "2.2"},
		"1.18.1":              {Own: "1.18.1", Line: "1.18"},
		"1.17-vvr-8":          nil,
		"3.3.0-1.19-SNAPSHOT": nil,
		"2.2":                 nil,
		"2.2.0.1":             nil,
		"2.2.0-":              nil,
		"-1.18":               nil,
		"2.2.0-1.18.1":        nil,
		"1.1.0-1":             nil,
		"x.y.z":               nil,
		"":                    nil,
		"1234567890.0.0":      nil,
		"+2.2.0":              nil,
		"2.2.0 ":              nil,
	} {
		got, ok := admission.ParseStockVersion(s)
		if want == nil {
			assert.False(t, ok, "%q: %+v", s, got)
			continue
		}
		assert.True(t, ok, s)
		assert.Equal(t, *want, got, s)
	}
}

// The ecosystem's naming schemes (issue 28), from names and manifests only:
// what a start reads. The manifests are the real JARs' (see
// internal/realflink/testdata/ecosystem-coordinates.txt).
func TestIdentifyEcosystemNames(t *testing.T) {
	t.Parallel()
	cdc := func(name, vendor, title, version string) *payload.JAR {
		return jar(t, name, "Implementation-Vendor-Id", vendor, "Implementation-Title", title, "Implementation-Version", version)
	}
	for _, c := range []struct {
		jar                              *payload.JAR
		kind, group, artifact, ver, line string
	}{
		{cdc("flink-sql-connector-mysql-cdc-3.0.1.jar", "com.ververica", "flink-sql-connector-mysql-cdc", "3.0.1"), admission.StockCDC, "com.ververica", "flink-sql-connector-mysql-cdc", "3.0.1", "1.18"},
		{cdc("cdc.jar", "org.apache.flink", "flink-sql-connector-postgres-cdc", "3.1.1"), admission.StockCDC, "org.apache.flink", "flink-sql-connector-postgres-cdc", "3.1.1", "1.18"},
		{cdc("flink-sql-connector-mysql-cdc-3.5.0.jar", "org.apache.flink", "flink-sql-connector-mysql-cdc", "3.5.0"), admission.StockCDC, "org.apache.flink", "flink-sql-connector-mysql-cdc", "3.5.0", "1.20"},
		{cdc("flink-sql-connector-mysql-cdc-3.3.0.jar", "org.apache.flink", "flink-sql-connector-mysql-cdc", "3.3.0"), admission.StockCDC, "org.apache.flink", "flink-sql-connector-mysql-cdc", "3.3.0", "1.19"},
		{jar(t, "flink-connector-starrocks-1.2.10_flink-1.18.jar"), admission.StockIntegration, "com.starrocks", "flink-connector-starrocks", "1.2.10", "1.18"},
		{jar(t, "hudi-flink1.20-bundle-1.0.2.jar"), admission.StockIntegration, "org.apache.hudi", "hudi-flink1.20-bundle", "1.0.2", "1.20"},
		{jar(t, "flink-doris-connector-1.18-24.0.1.jar"), admission.StockIntegration, "org.apache.doris", "flink-doris-connector-1.18", "24.0.1", "1.18"},
		{jar(t, "fluss-flink-1.20-0.7.0.jar"), admission.StockIntegration, "org.apache.fluss", "fluss-flink-1.20", "0.7.0", "1.20"},
		{jar(t, "iceberg-flink-runtime-2.0-1.10.0.jar"), admission.StockIntegration, "org.apache.iceberg", "iceberg-flink-runtime-2.0", "1.10.0", "2.0"},
	} {
		s := admission.IdentifyStock(c.jar)
		require.NotNil(t, s, c.jar.Path)
		assert.Equal(t, []string{c.kind, c.group, c.artifact, c.ver, c.line}, []string{s.Kind, s.Group, s.Artifact, s.Version, s.Line}, c.jar.Path)
	}
	// Not these schemes: nothing said of a Flink line.
	for _, j := range []*payload.JAR{
		cdc("flink-sql-connector-mysql-cdc-2.4.2.jar", "com.ververica", "flink-sql-connector-mysql-cdc", "2.4.2"), // a CDC line not in the table
		cdc("acme-cdc.jar", "com.acme", "flink-sql-connector-mysql-cdc", "3.0.1"),
		jar(t, "flink-connector-starrocks-1.2.10_flink-x.jar"),
		jar(t, "flink-connector-starrocks-_flink-1.18.jar"),
		jar(t, "hudi-flink-bundle-1.0.2.jar"),
		jar(t, "hudi-flink1.20-bundle-.jar"),
	} {
		assert.Nil(t, admission.IdentifyStock(j), j.Path)
	}
}

// CDC 3.0.1 on a 2.2 host: another major, an error whose fix says no
// Flink CDC release is built for it; StarRocks for 1.18 on 2.2 likewise,
// with the fix in StarRocks' own version scheme.
func TestEcosystemStockLine(t *testing.T) {
	t.Parallel()
	d := admission.Decide(withLib(t,
		jar(t, "flink-sql-connector-mysql-cdc-3.0.1.jar", "Implementation-Vendor-Id", "com.ververica", "Implementation-Title", "flink-sql-connector-mysql-cdc", "Implementation-Version", "3.0.1"),
		jar(t, "flink-connector-starrocks-1.2.10_flink-1.18.jar")))
	fs := findings(d, "stock-line")
	require.Len(t, fs, 2)
	assert.Equal(t, admission.Error, fs[0].Severity)
	assert.Contains(t, fs[0].Found, "Flink CDC 3.0 is built against Flink 1.18.0")
	assert.Contains(t, fs[0].Fix, "no Flink CDC release this entrypoint knows is built against Flink 2.2")
	assert.Equal(t, admission.Error, fs[1].Severity)
	assert.Contains(t, fs[1].Fix, "com.starrocks:flink-connector-starrocks:<version>_flink-2.2")
}
