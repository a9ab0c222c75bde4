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

// distMarker is what scripts/fetch-flink-dist writes last into a layout it
// verified; a layout without it is never used.
const distMarker = ".fetch-flink-dist.ok"

// flinkHome is the real distribution of a release, as scripts/fetch-flink-dist
// laid it out under STREAMFUSION_FLINK_DIST. A missing layout is a failure,
// not a skip: `make test-real` fetches them first.
func flinkHome(t testing.TB, version string) string {
	t.Helper()
	root := os.Getenv("STREAMFUSION_FLINK_DIST")
	require.NotEmpty(t, root, "STREAMFUSION_FLINK_DIST must name the distribution cache; run `make test-real`")
	home := filepath.Join(root, version)
	_, err := os.Stat(filepath.Join(home, distMarker))
	require.NoError(t, err, "Flink %s is not fetched (or was half unpacked): run `make test-real`", version)
	return home
}

// jarPath is a JAR the distributions lack, fetched by Maven coordinates
// into STREAMFUSION_FLINK_JARS (testdata/coordinates.txt).
func jarPath(t testing.TB, artifact, version string) string {
	t.Helper()
	dir := os.Getenv("STREAMFUSION_FLINK_JARS")
	require.NotEmpty(t, dir, "STREAMFUSION_FLINK_JARS must name the JAR cache; run `make test-real`")
	p := filepath.Join(dir, artifact+"-"+version+".jar")
	info, err := os.Stat(p)
	require.NoError(t, err, "real JAR missing from the cache: run `make test-real`")
	require.Positive(t, info.Size())
	return p
}

// realLib returns the JARs of a real distribution's lib, by file name.
func realLib(t testing.TB, version string) map[string]string {
	t.Helper()
	lib := filepath.Join(flinkHome(t, version), "lib")
	entries, err := os.ReadDir(lib)
	require.NoError(t, err)
	jars := map[string]string{}
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".jar") {
			jars[e.Name()] = filepath.Join(lib, e.Name())
		}
	}
	require.Contains(t, jars, "flink-dist-"+version+".jar")
	return jars
}

// layout is a real distribution's lib (links into the cache, as images
// often link lib JARs from opt/) plus StreamFusion payloads from the kit.
type layout struct {
	flink   string
	planner []string    // "loader" (the distribution's own), "scala" (Maven: the PyPI distribution lacks it)
	dist    string      // take flink-dist from this other real release ("" = the same)
	kafka   string      // a stock connector release (Maven: no distribution ships it), or ""
	extra   [][2]string // more JARs for lib: the name to link and the real file
	sf      []testkit.Placed
}

func (l layout) build(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	lib := filepath.Join(root, "opt/flink/lib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	link := func(name, target string) { require.NoError(t, os.Symlink(target, filepath.Join(lib, name))) }
	for name, p := range realLib(t, l.flink) {
		switch {
		case admission.IsDist(name) && l.dist != "":
			continue
		case strings.HasPrefix(name, "flink-table-planner-loader-"):
			continue // placed below, when asked for
		}
		link(name, p)
	}
	if l.dist != "" {
		name := "flink-dist-" + l.dist + ".jar"
		link(name, realLib(t, l.dist)[name])
	}
	for _, p := range l.planner {
		switch p {
		case "loader":
			name := "flink-table-planner-loader-" + l.flink + ".jar"
			link(name, realLib(t, l.flink)[name])
		case "scala":
			link("flink-table-planner_2.12-"+l.flink+".jar", jarPath(t, "flink-table-planner_2.12", l.flink))
		}
	}
	if l.kafka != "" {
		link("flink-connector-kafka-"+l.kafka+".jar", jarPath(t, "flink-connector-kafka", l.kafka))
	}
	for _, e := range l.extra {
		link(e[0], e[1])
	}
	for _, p := range l.sf {
		require.NoError(t, os.WriteFile(filepath.Join(lib, p.Name), p.Payload.Bytes(), 0o644))
	}
	jdk := filepath.Join(root, testkit.JavaHome)
	require.NoError(t, os.MkdirAll(jdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(jdk, "release"), []byte("JAVA_VERSION=\"17.0.15\"\n"), 0o644))
	return root
}

// decide gathers and decides, and says which flink-dist it read.
func decide(t *testing.T, root string) *admission.Decision {
	t.Helper()
	facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
		LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64",
	}, nil)
	require.NoError(t, err)
	dists := 0
	for _, j := range facts.Classpath {
		require.NoError(t, j.Err, j.Path)
		if admission.IsDist(filepath.Base(j.Path)) {
			dists++
			target, err := filepath.EvalSymlinks(j.Path)
			require.NoError(t, err)
			t.Logf("flink-dist read: %s -> %s (project.version=%s)", filepath.Base(j.Path), target, j.Properties["project.version"])
		}
	}
	require.Equal(t, 1, dists, "exactly one flink-dist on the classpath")
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
			assert.Contains(t, d.Errors()[0].Text(), "Flink "+v)
		})
	}
}

func TestBothRealPlannersRefused(t *testing.T) {
	d := decide(t, layout{flink: "2.2.1", planner: []string{"loader", "scala"}, sf: testkit.StreamFusion("2.2", "0.1.0")}.build(t))
	assert.Equal(t, []string{"host-planner-both"}, ruleIDs(d.Errors()))
}

// TestMixedRealDistribution builds libs from two real releases: the
// flink-dist of one, the planner (and every other JAR) of the other.
func TestMixedRealDistribution(t *testing.T) {
	for _, c := range []struct{ planner, dist string }{
		{"2.2.1", "2.2.0"},
		{"2.2.0", "2.2.1"},
		{"2.2.1", "2.3.0"},
		{"1.18.1", "2.2.0"},
	} {
		t.Run("dist "+c.dist+" planner "+c.planner, func(t *testing.T) {
			d := decide(t, layout{flink: c.planner, planner: []string{"loader"}, dist: c.dist, sf: testkit.StreamFusion(sfLine(c.planner), "0.1.0")}.build(t))
			require.Equal(t, []string{"host-dist-mixed"}, ruleIDs(d.Errors()))
			assert.Contains(t, d.Errors()[0].Text(), "flink-dist "+c.dist+" with planner "+c.planner)
		})
	}
}

func TestStockConnectorSatisfiesStockRequires(t *testing.T) {
	for v, kafka := range map[string]string{"2.2.1": "5.0.0-2.2", "1.18.1": "3.2.0-1.18"} {
		t.Run(v, func(t *testing.T) {
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
		})
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
		t.Run(v, func(t *testing.T) {
			lib := realLib(t, v)
			open := func(p string, props bool) *payload.JAR {
				j := payload.Open(os.DirFS("/"), strings.TrimPrefix(p, "/"), payload.Options{Properties: props})
				require.NoError(t, j.Err, p)
				return j
			}
			loaderPath := lib["flink-table-planner-loader-"+v+".jar"]
			require.NotEmpty(t, loaderPath, "the distribution's lib has the planner loader")
			loader := open(loaderPath, false)
			iv, _ := loader.Manifest.Get("Implementation-Version")
			assert.Equal(t, v, iv, "planner loader %s: Implementation-Version", v)
			assert.Nil(t, loader.Nested, "the planner loader has no StreamFusion-Embedded-Core")

			z, err := zip.OpenReader(loaderPath)
			require.NoError(t, err)
			var nested *zip.File
			for _, f := range z.File {
				if f.Name == "flink-table-planner.jar" {
					nested = f
				}
			}
			require.NotNil(t, nested, "the loader %s nests flink-table-planner.jar at its root", v)
			assert.Equal(t, zip.Deflate, nested.Method, "the nested planner of %s is deflated", v)
			require.NoError(t, z.Close())

			distPath := lib["flink-dist-"+v+".jar"]
			t.Logf("flink-dist read: %s", distPath)
			dist := open(distPath, true)
			assert.Equal(t, v, dist.Properties["project.version"], "flink-dist %s: .flink-runtime.version.properties", v)
			div, _ := dist.Manifest.Get("Implementation-Version")
			assert.Equal(t, v, div, "flink-dist %s: manifest Implementation-Version", v)

			for name, p := range lib {
				assert.Nil(t, admission.Identify(open(p, false)), "%s of Flink %s is not StreamFusion content", name, v)
			}
		})
	}
}
