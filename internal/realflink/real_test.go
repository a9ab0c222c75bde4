//go:build realjars

package realflink

import (
	"archive/zip"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// cache is where scripts/fetch-flink-jars put the JARs. A missing cache or
// JAR is a failure, not a skip: `make test-real` fetches them first.
func cache(t *testing.T) string {
	t.Helper()
	dir := os.Getenv("STREAMFUSION_FLINK_JARS")
	require.NotEmpty(t, dir, "STREAMFUSION_FLINK_JARS must name the JAR cache; run `make test-real`")
	return dir
}

func jarPath(t *testing.T, artifact, version string) string {
	t.Helper()
	p := filepath.Join(cache(t), artifact+"-"+version+".jar")
	info, err := os.Stat(p)
	require.NoError(t, err, "real JAR missing from the cache: run `make test-real`")
	require.Positive(t, info.Size())
	return p
}

// layout is a lib made of real JARs (links into the cache, as images
// often link lib JARs from opt/) and StreamFusion payloads from the kit.
type layout struct {
	flink   string
	planner []string // "loader", "scala"
	dist    string   // the flink-runtime release standing in for flink-dist
	kafka   string   // a stock connector release, or ""
	sf      []testkit.Placed
}

func (l layout) build(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	lib := filepath.Join(root, "opt/flink/lib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	link := func(name, target string) { require.NoError(t, os.Symlink(target, filepath.Join(lib, name))) }
	for _, p := range l.planner {
		switch p {
		case "loader":
			link("flink-table-planner-loader-"+l.flink+".jar", jarPath(t, "flink-table-planner-loader", l.flink))
		case "scala":
			link("flink-table-planner_2.12-"+l.flink+".jar", jarPath(t, "flink-table-planner_2.12", l.flink))
		}
	}
	// flink-dist is not published as a JAR; flink-runtime carries the same
	// .flink-runtime.version.properties and stands in for it.
	link("flink-dist-"+l.flink+".jar", jarPath(t, "flink-runtime", or(l.dist, l.flink)))
	for _, a := range []string{"flink-table-runtime", "flink-json", "flink-csv"} {
		if _, err := os.Stat(filepath.Join(cache(t), a+"-"+l.flink+".jar")); err == nil {
			link(a+"-"+l.flink+".jar", jarPath(t, a, l.flink))
		}
	}
	if l.kafka != "" {
		link("flink-connector-kafka-"+l.kafka+".jar", jarPath(t, "flink-connector-kafka", l.kafka))
	}
	for _, p := range l.sf {
		require.NoError(t, os.WriteFile(filepath.Join(lib, p.Name), p.Payload.Bytes(), 0o644))
	}
	jdk := filepath.Join(root, testkit.JavaHome)
	require.NoError(t, os.MkdirAll(jdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(jdk, "release"), []byte("JAVA_VERSION=\"17.0.15\"\n"), 0o644))
	return root
}

func or(s, d string) string {
	if s == "" {
		return d
	}
	return s
}

func decide(t *testing.T, root string) *admission.Decision {
	t.Helper()
	facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
		LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64",
	}, nil)
	require.NoError(t, err)
	for _, j := range facts.Classpath {
		require.NoError(t, j.Err, j.Path)
	}
	return admission.Decide(facts)
}

func ruleIDs(fs []admission.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	return ids
}

func sfLine(flink string) string {
	if strings.HasPrefix(flink, "1.18") {
		return "1.18"
	}
	return "2.2"
}

func TestSupportedReleasesAdmitted(t *testing.T) {
	for _, v := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		for _, planner := range []string{"loader", "scala"} {
			t.Run(v+"/"+planner, func(t *testing.T) {
				d := decide(t, layout{flink: v, planner: []string{planner}, sf: testkit.StreamFusion(sfLine(v), "0.1.0")}.build(t))
				assert.True(t, d.Admitted(), "%v", d.Findings)
				assert.Equal(t, v, d.Flink, "planner ABI read from the real %s manifest", planner)
				if v == "1.18.1" {
					assert.Equal(t, []string{"line-experimental"}, ruleIDs(d.Findings))
					assert.Equal(t, admission.Experimental, d.Support)
				} else {
					assert.Empty(t, d.Findings)
					assert.Equal(t, admission.Supported, d.Support)
				}
			})
		}
	}
}

func TestOtherReleasesRefusedAsUnknownABI(t *testing.T) {
	for _, v := range []string{"1.20.3", "2.1.1", "2.3.0"} {
		t.Run(v, func(t *testing.T) {
			d := decide(t, layout{flink: v, planner: []string{"loader"}, sf: testkit.StreamFusion("2.2", "0.1.0")}.build(t))
			require.False(t, d.Admitted())
			assert.Equal(t, []string{"host-planner-abi"}, ruleIDs(d.Errors()), "flink-dist agrees with the planner; only the ABI is unknown")
			assert.Contains(t, d.Errors()[0].Message, "Flink "+v)
		})
	}
}

func TestBothRealPlannersRefused(t *testing.T) {
	d := decide(t, layout{flink: "2.2.1", planner: []string{"loader", "scala"}, sf: testkit.StreamFusion("2.2", "0.1.0")}.build(t))
	assert.Equal(t, []string{"host-planner-both"}, ruleIDs(d.Errors()))
}

func TestMixedRealDistribution(t *testing.T) {
	d := decide(t, layout{flink: "2.2.1", planner: []string{"loader"}, dist: "2.2.0", sf: testkit.StreamFusion("2.2", "0.1.0")}.build(t))
	require.Equal(t, []string{"host-dist-mixed"}, ruleIDs(d.Errors()))
	assert.Contains(t, d.Errors()[0].Message, "flink-dist 2.2.0 with planner 2.2.1")
}

func TestStockConnectorSatisfiesStockRequires(t *testing.T) {
	for v, kafka := range map[string]string{"2.2.1": "5.0.0-2.2", "1.18.1": "3.2.0-1.18"} {
		line := sfLine(v)
		ext := testkit.Extension("kafka", line, "0.1.0")
		ext.Stock = "flink-connector-kafka"
		sf := testkit.StreamFusion(line, "0.1.0")
		for i := range sf {
			if sf[i].Payload.Module == "streamfusion-kafka" {
				sf[i].Payload = ext
			}
		}
		d := decide(t, layout{flink: v, planner: []string{"loader"}, kafka: kafka, sf: sf}.build(t))
		assert.True(t, d.Admitted(), "%v", d.Findings)
		assert.NotContains(t, ruleIDs(d.Findings), "stock-requires-missing", v)

		d = decide(t, layout{flink: v, planner: []string{"loader"}, sf: sf}.build(t))
		assert.Contains(t, ruleIDs(d.Warnings()), "stock-requires-missing", v)
	}
}

func TestRealHostRefusesOtherLinePayload(t *testing.T) {
	sf := append(testkit.StreamFusion("2.2", "0.1.0"), testkit.Placed{Name: "connector.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")})
	d := decide(t, layout{flink: "2.2.1", planner: []string{"loader"}, sf: sf}.build(t))
	assert.Equal(t, []string{"payload-line"}, ruleIDs(d.Errors()))
}

// TestWhatRealJARsCarry holds the facts testdata/README.md records.
func TestWhatRealJARsCarry(t *testing.T) {
	for _, v := range []string{"1.18.1", "1.20.3", "2.1.1", "2.2.0", "2.2.1", "2.3.0"} {
		loader := payload.Open(os.DirFS("/"), strings.TrimPrefix(jarPath(t, "flink-table-planner-loader", v), "/"), payload.Options{})
		require.NoError(t, loader.Err)
		iv, _ := loader.Manifest.Get("Implementation-Version")
		assert.Equal(t, v, iv, "planner loader %s: Implementation-Version", v)
		assert.Nil(t, loader.Nested, "the planner loader has no StreamFusion-Embedded-Core")

		z, err := zip.OpenReader(jarPath(t, "flink-table-planner-loader", v))
		require.NoError(t, err)
		var nested *zip.File
		for _, f := range z.File {
			if f.Name == "flink-table-planner.jar" {
				nested = f
			}
		}
		require.NotNil(t, nested, "the loader %s nests flink-table-planner.jar at its root", v)
		assert.Equal(t, zip.Deflate, nested.Method, "the nested planner of %s is deflated", v)
		z.Close()

		rt := payload.Open(os.DirFS("/"), strings.TrimPrefix(jarPath(t, "flink-runtime", v), "/"), payload.Options{Properties: true})
		require.NoError(t, rt.Err)
		assert.Equal(t, v, rt.Properties["project.version"], "flink-runtime %s: .flink-runtime.version.properties", v)
		assert.Nil(t, admission.Identify(rt), "Flink's JARs are not StreamFusion content")
	}
}
