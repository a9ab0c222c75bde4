//go:build realjars

package realflink

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// Stock identity (issue 19, layer 1) on the real distributions and the real
// connectors, formats and integrations, by Maven coordinates
// (testdata/coordinates.txt).

// mvnJAR is a real JAR of the cache linked into lib under its Maven name.
func mvnJAR(t *testing.T, artifact, version string) [2]string {
	t.Helper()
	return [2]string{artifact + "-" + version + ".jar", jarPath(t, artifact, version)}
}

// renamed is a real JAR linked into lib under another name.
func renamed(t *testing.T, name, artifact, version string) [2]string {
	t.Helper()
	return [2]string{name, jarPath(t, artifact, version)}
}

// stockFindings are the findings of the stock rules.
func stockFindings(d *admission.Decision) []admission.Finding {
	var out []admission.Finding
	for _, f := range d.Findings {
		if strings.HasPrefix(f.Rule, "stock-") {
			out = append(out, f)
		}
	}
	return out
}

// Every JAR Flink's real distributions put in lib identifies: Flink's own
// as in-tree modules of the release, log4j as nothing; and the lib as it
// ships gives no finding.
func TestRealLibsIdentifyAndGiveNoStockFinding(t *testing.T) {
	for _, v := range []string{"2.2.0", "2.2.1", "1.18.1", "1.20.3", "2.1.1", "2.3.0"} {
		t.Run(v, func(t *testing.T) {
			modules := 0
			for name, p := range realLib(t, v) {
				j := payload.Open(os.DirFS("/"), strings.TrimPrefix(p, "/"), payload.Options{})
				require.NoError(t, j.Err, p)
				s := admission.IdentifyStock(j)
				if strings.HasPrefix(name, "log4j-") {
					assert.Nil(t, s, name)
					continue
				}
				require.NotNil(t, s, name)
				assert.Equal(t, admission.StockModule, s.Kind, name)
				assert.Equal(t, v, s.Release, name)
				assert.Equal(t, strings.TrimSuffix(name, "-"+v+".jar"), s.Artifact, "artifactId from the Maven file name")
				modules++
			}
			assert.GreaterOrEqual(t, modules, 8, "flink-dist, the planner loader, cep, files, csv, json, scala, table-api, table-runtime")
			d := decide(t, layout{flink: v, planner: []string{"loader"}, sf: testkit.StreamFusion(sfLine(v), "0.1.0")}.build(t))
			assert.Empty(t, stockFindings(d))
		})
	}
}

// Each connector, format and integration on the Flink line it is built
// for: no stock finding, and the set is admitted.
func TestRealConsistentStockSets(t *testing.T) {
	for _, c := range []struct {
		flink string
		extra func(t *testing.T) [][2]string
	}{
		{"2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "5.0.0-2.2"), mvnJAR(t, "flink-avro", "2.2.0")}
		}},
		{"2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-sql-connector-kafka", "5.0.0-2.2")}
		}},
		{"2.2.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "5.0.0-2.2")}
		}},
		{"1.18.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "3.2.0-1.18"), mvnJAR(t, "flink-connector-jdbc", "3.2.0-1.18"),
				mvnJAR(t, "flink-avro", "1.18.1"), mvnJAR(t, "paimon-flink-1.18", "0.8.2"), mvnJAR(t, "iceberg-flink-runtime-1.18", "1.5.2")}
		}},
	} {
		extra := c.extra(t)
		var names []string
		for _, e := range extra {
			names = append(names, e[0])
		}
		t.Run(c.flink+"/"+strings.Join(names, "+"), func(t *testing.T) {
			kafka := testkit.Extension("kafka", sfLine(c.flink), "0.1.0")
			kafka.Stock = "flink-connector-kafka"
			if strings.Contains(names[0], "sql-connector") {
				kafka.Stock = "flink-sql-connector-kafka"
			}
			sf := withExtension(sfLine(c.flink), kafka)
			if !strings.Contains(strings.Join(names, " "), "kafka") {
				sf = testkit.StreamFusion(sfLine(c.flink), "0.1.0")
			}
			d := decide(t, layout{flink: c.flink, planner: []string{"loader"}, extra: extra, sf: sf}.build(t))
			assert.Empty(t, stockFindings(d))
			assert.True(t, d.Admitted(), "%v", d.Findings)
		})
	}
}

// withExtension is the StreamFusion set of a line with its kafka
// extension replaced.
func withExtension(line string, ext testkit.Payload) []testkit.Placed {
	sf := testkit.StreamFusion(line, "0.1.0")
	for i := range sf {
		if sf[i].Payload.Module == ext.Module {
			sf[i].Payload = ext
		}
	}
	return sf
}

// Each mismatch is found, with its severity, on the real JAR.
func TestRealStockMismatches(t *testing.T) {
	type want struct {
		rule     string
		severity admission.Severity
		jar      string // the finding's file name
		found    string // in the finding's Found
		fix      string // in the finding's Fix
	}
	for _, c := range []struct {
		name  string
		flink string
		extra func(t *testing.T) [][2]string
		stock string // the kafka extension's StreamFusion-Stock-Requires
		want  []want
	}{
		{"kafka 3.2.0-1.18 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "3.2.0-1.18")}
		}, "", []want{{"stock-line", admission.Error, "flink-connector-kafka-3.2.0-1.18.jar", "line 1.18 (Implementation-Version 3.2.0-1.18 in its manifest)", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"}}},
		{"kafka 4.0.0-2.0 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "4.0.0-2.0")}
		}, "", []want{{"stock-line", admission.Warning, "flink-connector-kafka-4.0.0-2.0.jar", "line 2.0", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"}}},
		{"kafka 4.0.0-2.0 on 2.2.0, needed by streamfusion-kafka", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "4.0.0-2.0")}
		}, "flink-connector-kafka", []want{
			{"stock-line", admission.Error, "flink-connector-kafka-4.0.0-2.0.jar", "line 2.0", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"},
			{"stock-requires-missing", admission.Warning, "streamfusion-kafka-0.1.0.jar", "flink-connector-kafka-4.0.0-2.0.jar, built for line 2.0", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"},
		}},
		{"kafka 5.0.0-2.2 on 1.18.1", "1.18.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-kafka", "5.0.0-2.2")}
		}, "", []want{{"stock-line", admission.Error, "flink-connector-kafka-5.0.0-2.2.jar", "line 2.2", "org.apache.flink:flink-connector-kafka:3.2.0-1.18"}}},
		{"sql kafka 5.0.0-2.2 on 1.18.1", "1.18.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-sql-connector-kafka", "5.0.0-2.2")}
		}, "", []want{{"stock-line", admission.Error, "flink-sql-connector-kafka-5.0.0-2.2.jar", "line 2.2", "org.apache.flink:flink-sql-connector-kafka built for Flink 1.18"}}},
		{"jdbc 3.2.0-1.18 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-connector-jdbc", "3.2.0-1.18")}
		}, "", []want{{"stock-line", admission.Error, "flink-connector-jdbc-3.2.0-1.18.jar", "line 1.18", "org.apache.flink:flink-connector-jdbc built for Flink 2.2"}}},
		{"flink-json 1.18.1 next to 2.2.0's", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-json", "1.18.1")}
		}, "", []want{
			{"stock-release", admission.Error, "flink-json-1.18.1.jar", "Flink 1.18.1 (Implementation-Version 1.18.1 in its manifest)", "org.apache.flink:flink-json:2.2.0"},
			{"stock-duplicate", admission.Error, "flink-json-2.2.0.jar", "flink-json 1.18.1 at ", "flink-json-2.2.0.jar and remove the others"},
		}},
		{"flink-json 2.2.0 on 2.2.1, renamed", "2.2.1", func(t *testing.T) [][2]string {
			return [][2]string{renamed(t, "zz-json.jar", "flink-json", "2.2.0")}
		}, "", []want{
			{"stock-release", admission.Warning, "zz-json.jar", "Flink 2.2.0", "org.apache.flink:flink-json:2.2.1"},
			{"stock-duplicate", admission.Error, "zz-json.jar", "flink-json 2.2.1 at ", "flink-json-2.2.1.jar and remove the others"},
		}},
		{"avro 1.18.1 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-avro", "1.18.1")}
		}, "", []want{{"stock-release", admission.Error, "flink-avro-1.18.1.jar", "Flink 1.18.1", "org.apache.flink:flink-avro:2.2.0"}}},
		{"avro 2.2.0 on 2.2.1", "2.2.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "flink-avro", "2.2.0")}
		}, "", []want{{"stock-release", admission.Warning, "flink-avro-2.2.0.jar", "Flink 2.2.0", "org.apache.flink:flink-avro:2.2.1"}}},
		{"paimon for 1.18 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "paimon-flink-1.18", "0.8.2")}
		}, "", []want{{"stock-line", admission.Error, "paimon-flink-1.18-0.8.2.jar", "line 1.18 (Implementation-Title Paimon : Flink : 1.18 in its manifest)", "org.apache.paimon:paimon-flink-2.2"}}},
		{"paimon for 2.0, renamed, on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{renamed(t, "paimon.jar", "paimon-flink-2.0", "1.1.1")}
		}, "", []want{{"stock-line", admission.Warning, "paimon.jar", "line 2.0 (Implementation-Title Paimon : Flink : 2.0 in its manifest)", "org.apache.paimon:paimon-flink-2.2"}}},
		{"paimon for two lines", "1.18.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "paimon-flink-1.18", "0.8.2"), mvnJAR(t, "paimon-flink-2.0", "1.1.1")}
		}, "", []want{
			{"stock-line", admission.Error, "paimon-flink-2.0-1.1.1.jar", "line 2.0", "org.apache.paimon:paimon-flink-1.18"},
			{"stock-duplicate", admission.Error, "paimon-flink-2.0-1.1.1.jar", "paimon-flink-1.18 0.8.2 at ", "paimon-flink-1.18-0.8.2.jar and remove the others"},
		}},
		{"iceberg for 1.18 on 2.2.0", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "iceberg-flink-runtime-1.18", "1.5.2")}
		}, "", []want{{"stock-line", admission.Error, "iceberg-flink-runtime-1.18-1.5.2.jar", "line 1.18 (its file name)", "org.apache.iceberg:iceberg-flink-runtime-2.2"}}},
		{"iceberg for 2.0 on 2.2.1", "2.2.1", func(t *testing.T) [][2]string {
			return [][2]string{mvnJAR(t, "iceberg-flink-runtime-2.0", "1.10.0")}
		}, "", []want{{"stock-line", admission.Warning, "iceberg-flink-runtime-2.0-1.10.0.jar", "line 2.0 (its file name)", "org.apache.iceberg:iceberg-flink-runtime-2.2"}}},
		{"kafka 3.2.0-1.18 renamed as 5.0.0-2.2", "2.2.0", func(t *testing.T) [][2]string {
			return [][2]string{renamed(t, "flink-connector-kafka-5.0.0-2.2.jar", "flink-connector-kafka", "3.2.0-1.18")}
		}, "flink-connector-kafka", []want{
			{"stock-line", admission.Error, "flink-connector-kafka-5.0.0-2.2.jar", "line 1.18 (Implementation-Version 3.2.0-1.18 in its manifest)", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"},
			{"stock-requires-missing", admission.Warning, "streamfusion-kafka-0.1.0.jar", "built for line 1.18", "org.apache.flink:flink-connector-kafka:5.0.0-2.2"},
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			sf := testkit.StreamFusion(sfLine(c.flink), "0.1.0")
			if c.stock != "" {
				ext := testkit.Extension("kafka", sfLine(c.flink), "0.1.0")
				ext.Stock = c.stock
				sf = withExtension(sfLine(c.flink), ext)
			}
			d := decide(t, layout{flink: c.flink, planner: []string{"loader"}, extra: c.extra(t), sf: sf}.build(t))
			got := stockFindings(d)
			require.Len(t, got, len(c.want), "%v", got)
			for _, w := range c.want {
				var f admission.Finding
				for _, g := range got {
					if g.Rule == w.rule && filepath.Base(g.Path) == w.jar {
						f = g
					}
				}
				require.NotEmpty(t, f.Rule, "no %s finding at %s: %v", w.rule, w.jar, got)
				t.Log(f.Text())
				assert.Equal(t, w.rule, f.Rule)
				assert.Equal(t, w.severity, f.Severity, f.Text())
				assert.Equal(t, w.jar, filepath.Base(f.Path), f.Text())
				assert.Contains(t, f.Found, w.found)
				assert.Contains(t, f.Fix, w.fix)
			}
			errs := false
			for _, w := range c.want {
				errs = errs || w.severity == admission.Error
			}
			assert.Equal(t, !errs, d.Admitted(), "%v", d.Findings)
		})
	}
}
