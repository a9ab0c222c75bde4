//go:build imagesuite

package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/moby/moby/api/pkg/stdcopy"
	"github.com/moby/moby/api/types/container"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// The end-to-end proof of issue 19's linkage check: the real 2.2.0 image
// with a Kafka connector built for Flink 1.18 runs a SQL job (a Kafka
// source to an unreachable broker, so nothing but the reader's creation at
// task start is exercised), and the TaskManager fails with the
// NoSuchMethodError that `streamfusion verify` predicted for the image
// (and the image's own `streamfusion check` in the container); the same
// image with the connector built for 2.2 runs the job.
// The JVM of the real TaskManager is the oracle.

// connectorsFile lists the real JARs by Maven coordinates.
const connectorsFile = "testdata/connectors.txt"

// The SQL job: a Kafka table on a port nothing listens on in the
// JobManager's network namespace (the TaskManager shares it), into a
// blackhole. The source's reader is created when the task starts, before
// any record is asked for.
const kafkaJob = `CREATE TABLE src (v STRING) WITH (
  'connector' = 'kafka',
  'topic' = 'streamfusion-e2e',
  'properties.bootstrap.servers' = '127.0.0.1:9',
  'properties.group.id' = 'streamfusion-e2e',
  'scan.startup.mode' = 'earliest-offset',
  'format' = 'json'
);
CREATE TABLE snk (v STRING) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT v FROM src;
`

// fetchConnectors fetches (or finds in the user cache) the JARs of
// connectorsFile and returns the directory holding them.
func fetchConnectors(t *testing.T) string {
	t.Helper()
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	dir := filepath.Join(cache, "streamfusion", "flink-jars")
	cmd := osexec.Command(filepath.Join("..", "..", "scripts", "fetch-flink-jars"), connectorsFile, dir)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Run(), "scripts/fetch-flink-jars %s %s (needs mvn; see .ci/run)", connectorsFile, dir)
	return dir
}

// withConnector adds a layer to img with the JARs (from dir) in lib, and
// the SQL gateway in opt as Flink's binary distribution has it.
func withConnector(t *testing.T, img v1.Image, dir string, jars ...string) v1.Image {
	t.Helper()
	read := func(name string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err)
		return b
	}
	entries := []imagekit.Entry{{Name: testkit.FlinkHome + "/opt/flink-sql-gateway-2.2.0.jar", Data: read("flink-sql-gateway-2.2.0.jar"), Mode: 0o644}}
	for _, j := range jars {
		entries = append(entries, imagekit.Entry{Name: testkit.LibDir + "/" + j, Data: read(j), Mode: 0o644})
	}
	out, err := mutate.AppendLayers(img, imagekit.Layer(entries...))
	require.NoError(t, err)
	return out
}

func TestStockConnectorLinkage(t *testing.T) {
	setupReal(t)
	h := realHosts[0]
	require.Equal(t, "2.2.0", h.flink, "the connectors of connectors.txt are chosen for Flink 2.2.0")
	dir := fetchConnectors(t)
	baked := prepareReal(t, h)
	mismatched, right := realTag(h, "kafka-3.2.0-1.18"), realTag(h, "kafka-5.0.0-2.2")
	start := time.Now()
	load(t, map[string]v1.Image{
		mismatched: withConnector(t, baked, dir, "flink-connector-kafka-3.2.0-1.18.jar", "kafka-clients-3.4.0.jar"),
		right:      withConnector(t, baked, dir, "flink-connector-kafka-5.0.0-2.2.jar", "kafka-clients-4.2.0.jar", "zstd-jni-1.5.6-10.jar"),
	})
	t.Logf("loaded 2 images (%s)", time.Since(start).Round(time.Millisecond))

	t.Run("connector built for 1.18", func(t *testing.T) {
		// Our entrypoint refuses the image: that is the product working.
		o := run{image: mismatched, cmd: []string{"jobmanager"}}.start(t)
		require.Equal(t, 78, o.code, o.logs)
		assert.Contains(t, o.logs, "[stock-line]")
		assert.Contains(t, o.logs, "/"+testkit.LibDir+"/flink-connector-kafka-3.2.0-1.18.jar")

		// The prediction: `streamfusion verify` on the image, from the host
		// through the engine's API, before any container of it runs.
		predicted := linkageMethods(t, verify(t, mismatched))
		require.NotEmpty(t, predicted, "streamfusion verify predicts linkage-method findings for the image")
		t.Logf("predicted by streamfusion verify: %d methods missing on the host:", len(predicted))
		for _, m := range predicted {
			t.Logf("  %s, in %s", m.method, m.from)
		}

		// What would have happened: the same image started with Flink's
		// own script as the entrypoint (kept by bake at image.OriginalPath),
		// as a user who overrides the entrypoint to get past the check does.
		// The project has no setting that starts a refused image.
		jm, tm := flinkCluster(t, mismatched, []string{image.OriginalPath})
		assert.ElementsMatch(t, predicted, linkageMethods(t, check(t, jm)),
			"the image's own `streamfusion check` in the container predicts what verify does")

		id := submitSQL(t, jm)
		var logs string
		deadline := time.Now().Add(3 * time.Minute)
		for {
			logs = logsOf(t, tm)
			if strings.Contains(logs, "java.lang.NoSuchMethodError") || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		failed := noSuchMethods(logs)
		require.NotEmpty(t, failed, "the TaskManager logged no NoSuchMethodError within 3 min; job %s: %s\n%s", id, jobState(t, jm, id), logs)
		for _, m := range failed {
			t.Logf("the TaskManager's JVM: java.lang.NoSuchMethodError: '%s', in %s", m.method, m.from)
			assert.Contains(t, predicted, m, "the JVM's failure is a method, called from a class, that streamfusion verify predicted")
		}
	})

	t.Run("connector built for 2.2", func(t *testing.T) {
		// Admitted by our entrypoint, with the deep check on the start path
		// too (STREAMFUSION_LINKAGE=true).
		jm, tm := flinkCluster(t, right, nil, "STREAMFUSION_LINKAGE=true")
		for _, c := range []testcontainers.Container{jm, tm} {
			assert.Contains(t, logsOf(t, c), "streamfusion: INFO admitted")
		}
		for what, r := range map[string]report.Report{"verify": verify(t, right), "check in the container": check(t, jm)} {
			for _, f := range r.Findings {
				assert.False(t, strings.HasPrefix(f.Rule, "linkage-") || strings.HasPrefix(f.Rule, "stock-") || f.Rule == "classpath-shadowed",
					"%s: a consistent set has no finding of the JARs around ours: [%s] %s", what, f.Rule, f.Text())
			}
		}

		id := submitSQL(t, jm)
		var st jobStatus
		deadline := time.Now().Add(3 * time.Minute)
		for {
			st = jobState(t, jm, id)
			if st.running() || st.State == "FAILED" || time.Now().After(deadline) {
				break
			}
			time.Sleep(time.Second)
		}
		require.True(t, st.running(), "job %s did not run every task within 3 min: %s\n%s", id, st, logsOf(t, tm))
		t.Logf("job %s: %s", id, st)
		assert.NotContains(t, logsOf(t, tm), "java.lang.NoSuchMethodError")
	})
}

// flinkCluster starts a JobManager of img and a TaskManager in its network
// namespace (entrypoint nil: the image's), and waits for REST /overview to
// count the TaskManager.
func flinkCluster(t *testing.T, img string, entrypoint []string, env ...string) (jm, tm testcontainers.Container) {
	t.Helper()
	ctx := context.Background()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	node := func(role string, waitFor wait.Strategy, hc func(*container.HostConfig)) testcontainers.Container {
		c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
			ContainerRequest: testcontainers.ContainerRequest{
				Image: img, Entrypoint: entrypoint, Cmd: []string{role}, Env: vars, ExposedPorts: []string{"8081/tcp"},
				WaitingFor: waitFor, HostConfigModifier: hc,
			},
			Logger: logger(t),
		})
		testcontainers.CleanupContainer(t, c)
		require.NoError(t, err)
		if err := c.Start(ctx); err != nil {
			t.Fatalf("%s of %s did not start: %v\n%s", role, img, err, logsOf(t, c))
		}
		return c
	}
	jm = node("jobmanager", wait.ForHTTP("/overview").WithPort("8081/tcp").WithStartupTimeout(4*time.Minute).
		WithResponseMatcher(overviewMatches(func(o overview) bool { return o.FlinkVersion != "" })), nil)
	tm = node("taskmanager", wait.ForLog("Successful registration at resource manager").WithStartupTimeout(4*time.Minute),
		func(hc *container.HostConfig) {
			hc.NetworkMode = container.NetworkMode("container:" + jm.GetContainerID())
		})
	registered := wait.ForHTTP("/overview").WithPort("8081/tcp").WithStartupTimeout(time.Minute).
		WithResponseMatcher(overviewMatches(func(o overview) bool { return o.TaskManagers >= 1 }))
	require.NoError(t, registered.WaitUntilReady(ctx, jm))
	return jm, tm
}

// verify runs `streamfusion verify --json` (the host CLI, deep check by
// default) on the image tag of the engine and returns its one report,
// whatever its verdict.
func verify(t *testing.T, tag string) report.Report {
	t.Helper()
	cmd := osexec.Command(filepath.Join(bindir, "streamfusion"), "verify", "--json", source.DaemonPrefix+tag)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+engine.DaemonHost())
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if err != nil {
		var exit *osexec.ExitError
		require.ErrorAs(t, err, &exit, stderr.String())
		require.Equal(t, 78, exit.ExitCode(), stderr.String())
	}
	var reports []struct {
		Platform string        `json:"platform"`
		Report   report.Report `json:"report"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &reports), stdout.String())
	require.Len(t, reports, 1, stdout.String())
	return reports[0].Report
}

// check runs the image's own `streamfusion check --json` in c (the
// entrypoint binary at /docker-entrypoint.sh on the container's lib) and
// returns its report, whatever its verdict.
func check(t *testing.T, c testcontainers.Container) report.Report {
	t.Helper()
	code, r, err := c.Exec(context.Background(), []string{"/docker-entrypoint.sh", "streamfusion", "check", "--json"})
	require.NoError(t, err)
	var stdout, stderr bytes.Buffer
	_, err = stdcopy.StdCopy(&stdout, &stderr, r)
	require.NoError(t, err)
	require.Contains(t, []int{0, 78}, code, "streamfusion check: %s", stderr.String())
	var rep report.Report
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), stdout.String())
	return rep
}

// missingMethod is a method the JVM does not find: as HotSpot names it in
// a NoSuchMethodError, and the class whose code calls it (a finding's
// symbol.from; the top frame of the JVM's stack trace).
type missingMethod struct {
	method string
	from   string // binary name, dots
}

// linkageMethods are the methods of the report's linkage-method findings.
func linkageMethods(t *testing.T, r report.Report) []missingMethod {
	t.Helper()
	var out []missingMethod
	for _, f := range r.Findings {
		if f.Rule != "linkage-method" {
			continue
		}
		require.NotNil(t, f.Symbol, "[%s] %s has no symbol", f.Rule, f.Text())
		m, err := jvmMethod(f.Symbol)
		require.NoError(t, err)
		mm := missingMethod{method: m, from: strings.ReplaceAll(f.Symbol.From, "/", ".")}
		if !slices.Contains(out, mm) {
			out = append(out, mm)
		}
	}
	return out
}

// jvmMethod writes a method symbol as HotSpot's NoSuchMethodError message
// does: 'RETURN OWNER.NAME(PARAM, PARAM)', binary names with dots, arrays
// as T[].
func jvmMethod(s *admission.Symbol) (string, error) {
	d := s.Descriptor
	if s.Kind != admission.SymMethod || !strings.HasPrefix(d, "(") {
		return "", fmt.Errorf("symbol %+v: not a method", s)
	}
	d = d[1:]
	var params []string
	for !strings.HasPrefix(d, ")") {
		p, rest, err := fieldType(d)
		if err != nil {
			return "", fmt.Errorf("descriptor %q: %w", s.Descriptor, err)
		}
		params, d = append(params, p), rest
	}
	ret, rest, err := fieldType(d[1:])
	if err != nil || rest != "" {
		return "", fmt.Errorf("descriptor %q: bad return type (%v)", s.Descriptor, err)
	}
	return fmt.Sprintf("%s %s.%s(%s)", ret, strings.ReplaceAll(s.Owner, "/", "."), s.Name, strings.Join(params, ", ")), nil
}

var primitives = map[byte]string{'B': "byte", 'C': "char", 'D': "double", 'F': "float", 'I': "int", 'J': "long", 'S': "short", 'Z': "boolean", 'V': "void"}

// fieldType reads one type of a descriptor and returns it in Java syntax.
func fieldType(d string) (string, string, error) {
	switch {
	case d == "":
		return "", "", fmt.Errorf("descriptor ends early")
	case d[0] == '[':
		t, rest, err := fieldType(d[1:])
		return t + "[]", rest, err
	case d[0] == 'L':
		name, rest, ok := strings.Cut(d[1:], ";")
		if !ok {
			return "", "", fmt.Errorf("class type without ';'")
		}
		return strings.ReplaceAll(name, "/", "."), rest, nil
	case primitives[d[0]] != "":
		return primitives[d[0]], d[1:], nil
	}
	return "", "", fmt.Errorf("unknown type %q", d[0])
}

func TestJVMMethod(t *testing.T) {
	for _, c := range []struct {
		sym  admission.Symbol
		want string
	}{
		{admission.Symbol{Kind: admission.SymMethod, Owner: "a/B$C", Name: "<init>", Descriptor: "(Ljava/util/function/Supplier;[[IJ)V"},
			"void a.B$C.<init>(java.util.function.Supplier, int[][], long)"},
		{admission.Symbol{Kind: admission.SymMethod, Owner: "x/Y", Name: "f", Descriptor: "()[Ljava/lang/String;"}, "java.lang.String[] x.Y.f()"},
	} {
		got, err := jvmMethod(&c.sym)
		require.NoError(t, err)
		assert.Equal(t, c.want, got)
	}
	for _, bad := range []string{"", "V", "(", "(L;", "(Q)V", "()", "()VV"} {
		_, err := jvmMethod(&admission.Symbol{Kind: admission.SymMethod, Owner: "a/B", Name: "f", Descriptor: bad})
		assert.Error(t, err, "%q", bad)
	}
}

// noSuchMethod is a NoSuchMethodError in a log and the first frame of its
// stack trace (the calling method: CLASS.METHOD(SOURCE:LINE)).
var noSuchMethod = regexp.MustCompile(`java\.lang\.NoSuchMethodError: '([^'\n]*)'\r?\n\s+at ([\w.$]+)\.[\w<>$]+\(`)

// noSuchMethods are the methods the JVM named in NoSuchMethodErrors in
// logs, with the classes that called them.
func noSuchMethods(logs string) []missingMethod {
	var out []missingMethod
	for _, m := range noSuchMethod.FindAllStringSubmatch(logs, -1) {
		mm := missingMethod{method: m[1], from: m[2]}
		if !slices.Contains(out, mm) {
			out = append(out, mm)
		}
	}
	return out
}

// submitSQL copies kafkaJob into jm and submits it with Flink's SQL client
// (bin/sql-client.sh -f, embedded gateway, REST on localhost); it returns
// the job ID the client printed.
func submitSQL(t *testing.T, jm testcontainers.Container) string {
	t.Helper()
	ctx := context.Background()
	const file = "/tmp/kafka-to-blackhole.sql"
	require.NoError(t, jm.CopyToContainer(ctx, []byte(kafkaJob), file, 0o644))
	start := time.Now()
	// With the image's environment as it is: bake sets no GLIBC_TUNABLES
	// (docs/glibc-tunables.md).
	cmd := []string{"/" + testkit.FlinkHome + "/bin/sql-client.sh", "-f", file}
	code, r, err := jm.Exec(ctx, cmd, tcexec.Multiplexed())
	require.NoError(t, err)
	out, _ := io.ReadAll(r)
	require.Equal(t, 0, code, string(out))
	require.NotContains(t, string(out), "[ERROR]", "the SQL client exits 0 after a failed statement too")
	m := regexp.MustCompile(`Job ID: ([0-9a-f]{32})`).FindSubmatch(out)
	require.NotNil(t, m, "the SQL client printed no job ID:\n%s", out)
	t.Logf("SQL client submitted job %s (%s)", m[1], time.Since(start).Round(time.Millisecond))
	return string(m[1])
}

// jobStatus is what REST /jobs/:id says of a job and its vertices.
type jobStatus struct {
	State    string `json:"state"`
	Vertices []struct {
		Name   string `json:"name"`
		Status string `json:"status"`
	} `json:"vertices"`
}

// running: the job and every vertex are RUNNING, so every task opened its
// operators (a source opens its reader before the task runs).
func (s jobStatus) running() bool {
	if s.State != "RUNNING" || len(s.Vertices) == 0 {
		return false
	}
	for _, v := range s.Vertices {
		if v.Status != "RUNNING" {
			return false
		}
	}
	return true
}

func (s jobStatus) String() string {
	var vs []string
	for _, v := range s.Vertices {
		vs = append(vs, v.Name+": "+v.Status)
	}
	return s.State + " [" + strings.Join(vs, "; ") + "]"
}

func jobState(t *testing.T, jm testcontainers.Container, id string) jobStatus {
	t.Helper()
	ep, err := jm.PortEndpoint(context.Background(), "8081/tcp", "http")
	require.NoError(t, err)
	resp, err := http.Get(ep + "/jobs/" + id)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var s jobStatus
	require.NoError(t, json.Unmarshal(body, &s), string(body))
	return s
}
