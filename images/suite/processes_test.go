//go:build imagesuite

package suite

import (
	"context"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// processesFile names the SQL gateway of each line (Flink's binary
// distribution ships it in opt/; PyPI's apache-flink-libraries does not).
const processesFile = "testdata/processes.txt"

// oldTunable is what images carried up to issue 29 (docs/glibc-tunables.md).
const oldTunable = "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=131072"

// tinyJob is a DataStream job for `flink run`: ten numbers to stdout.
const tinyJob = `public class Tiny {
    public static void main(String[] args) throws Exception {
        org.apache.flink.streaming.api.environment.StreamExecutionEnvironment env =
            org.apache.flink.streaming.api.environment.StreamExecutionEnvironment.getExecutionEnvironment();
        env.fromSequence(1, 10).print();
        env.execute("tiny");
    }
}
`

// tinySQL is what the SQL client submits: a bounded datagen into a
// blackhole, both built into Flink.
const tinySQL = `CREATE TABLE src (v INT) WITH ('connector' = 'datagen', 'number-of-rows' = '10');
CREATE TABLE snk (v INT) WITH ('connector' = 'blackhole');
INSERT INTO snk SELECT v FROM src;
`

// tinyJobJAR compiles tinyJob against the line's flink-dist with the host's
// JDK and packs it with `jar`.
func tinyJobJAR(t *testing.T, flinkHome string) []byte {
	t.Helper()
	for _, tool := range []string{"javac", "jar"} {
		_, err := osexec.LookPath(tool)
		require.NoError(t, err, "%s: the image suite compiles the job `flink run` submits (a JDK, see .ci/run)", tool)
	}
	dists, err := filepath.Glob(filepath.Join(flinkHome, "lib", "flink-dist*.jar"))
	require.NoError(t, err)
	require.Len(t, dists, 1)
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "Tiny.java"), []byte(tinyJob), 0o644))
	for _, args := range [][]string{
		{"javac", "--release", "11", "-cp", dists[0], "-d", filepath.Join(dir, "classes"), filepath.Join(dir, "Tiny.java")},
		{"jar", "--create", "--file", filepath.Join(dir, "tiny.jar"), "--main-class", "Tiny", "-C", filepath.Join(dir, "classes"), "."},
	} {
		out, err := osexec.Command(args[0], args[1:]...).CombinedOutput()
		require.NoError(t, err, "%s: %s", strings.Join(args, " "), out)
	}
	b, err := os.ReadFile(filepath.Join(dir, "tiny.jar"))
	require.NoError(t, err)
	return b
}

// TestEveryProcessRuns starts every Flink process of a deployment in a
// baked image of each line, with the environment the image has and nothing
// unset: JobManager, TaskManager, SQL client (`sql-client.sh -f`, embedded
// gateway, the job on the session cluster), `flink run` in session mode,
// HistoryServer and SQL Gateway. The image's Env has no GLIBC_TUNABLES; the
// SQL client with the value images carried up to issue 29 dies of SIGSEGV
// (exit 139) in the same container, the crash docs/glibc-tunables.md
// explains.
func TestEveryProcessRuns(t *testing.T) {
	setupReal(t)
	ctx := context.Background()
	cache, err := os.UserCacheDir()
	require.NoError(t, err)
	jars := filepath.Join(cache, "streamfusion", "flink-jars")
	cmd := osexec.Command(filepath.Join("..", "..", "scripts", "fetch-flink-jars"), processesFile, jars)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	require.NoError(t, cmd.Run(), "scripts/fetch-flink-jars %s %s (needs mvn; see .ci/run)", processesFile, jars)

	for _, h := range realHosts {
		t.Run(h.flink, func(t *testing.T) {
			begin := time.Now()
			baked := prepareReal(t, h)
			gateway, err := os.ReadFile(filepath.Join(jars, "flink-sql-gateway-"+h.flink+".jar"))
			require.NoError(t, err)
			img, err := mutate.AppendLayers(baked, imagekit.Layer(
				imagekit.Entry{Name: testkit.FlinkHome + "/opt/flink-sql-gateway-" + h.flink + ".jar", Data: gateway, Mode: 0o644},
				// Not under /tmp: a layer entry there would leave it 0755 in
				// podman's overlay, and Flink writes its JAAS file there.
				imagekit.Entry{Name: "opt/tiny", Dir: true, Mode: 0o755},
				imagekit.Entry{Name: "opt/tiny/tiny.jar", Data: tinyJobJAR(t, realInputs.homes[h.flink]), Mode: 0o644},
				imagekit.Entry{Name: "opt/tiny/tiny.sql", Data: []byte(tinySQL), Mode: 0o644},
			))
			require.NoError(t, err)
			cf, err := img.ConfigFile()
			require.NoError(t, err)
			for _, kv := range cf.Config.Env {
				assert.NotRegexp(t, `^(GLIBC_TUNABLES|ROCKSDB_MUSL_LIBC)=`, kv, "bake sets neither (docs/glibc-tunables.md)")
			}
			tag := realTag(h, "every-process")
			load(t, map[string]v1.Image{tag: img})

			jm, tm := flinkCluster(t, tag, nil)
			for _, c := range []testcontainers.Container{jm, tm} {
				logs := logsOf(t, c)
				assert.Contains(t, logs, "streamfusion: INFO admitted")
				assert.NotContains(t, logs, "[config-env]")
			}
			// exec: a process started in the container gets the image's Env
			// (and the container's, none here), as `kubectl exec` does.
			exec := func(argv ...string) (int, string) {
				code, r, err := jm.Exec(ctx, argv, tcexec.Multiplexed())
				require.NoError(t, err)
				out, _ := io.ReadAll(r)
				return code, string(out)
			}
			code, env := exec("env")
			require.Equal(t, 0, code, env)
			assert.NotContains(t, env, "GLIBC_TUNABLES=", "the JobManager's container has no GLIBC_TUNABLES")

			t.Run("sql client", func(t *testing.T) {
				start := time.Now()
				code, out := exec("/"+testkit.FlinkHome+"/bin/sql-client.sh", "-f", "/opt/tiny/tiny.sql")
				require.Equal(t, 0, code, out)
				assert.NotContains(t, out, "[ERROR]", "the SQL client exits 0 after a failed statement too")
				assert.Regexp(t, `Job ID: [0-9a-f]{32}`, out)
				t.Logf("sql-client.sh -f submitted its job (%s)", time.Since(start).Round(time.Millisecond))

				// The same client with the old tunable: the crash of issue 29.
				// The JVM dies of the SIGSEGV either at once (139, 128 +
				// SIGSEGV) or through its fatal error handler, which
				// reports the signal and then aborts (134, 128 + SIGABRT);
				// which one varies from run to run.
				code, out = exec("env", oldTunable, "/"+testkit.FlinkHome+"/bin/sql-client.sh", "-f", "/opt/tiny/tiny.sql")
				assert.Contains(t, []int{134, 139}, code, "with %s the SQL client's JVM dies of SIGSEGV: %s", oldTunable, out)
				if code == 134 {
					assert.Contains(t, out, "SIGSEGV", "the JVM's fatal error report names the signal")
				}
				assert.NotRegexp(t, `Job ID`, out)
			})

			t.Run("flink run", func(t *testing.T) {
				start := time.Now()
				code, out := exec("/"+testkit.FlinkHome+"/bin/flink", "run", "/opt/tiny/tiny.jar")
				require.Equal(t, 0, code, out)
				assert.Regexp(t, regexp.MustCompile(`Job has been submitted with JobID [0-9a-f]{32}`), out)
				assert.Contains(t, out, "Program execution finished")
				t.Logf("flink run: the job ran on the session cluster (%s)", time.Since(start).Round(time.Millisecond))
			})

			// Each server in a container of its own, through the image's
			// entrypoint, answering its REST API.
			for _, s := range []struct {
				name, port, path, ready string
				cmd                     []string
				env                     []string
			}{
				{name: "history server", port: "8082", path: "/config", ready: `"flink-version"`,
					cmd: []string{"history-server"},
					env: []string{"FLINK_PROPERTIES=historyserver.archive.fs.dir: file:///tmp\nhistoryserver.web.address: 0.0.0.0"}},
				{name: "sql gateway", port: "8083", path: "/v1/info", ready: `"productName"`,
					cmd: []string{"/" + testkit.FlinkHome + "/bin/sql-gateway.sh", "start-foreground",
						"-Dsql-gateway.endpoint.rest.address=0.0.0.0", "-Dsql-gateway.endpoint.rest.bind-address=0.0.0.0"}},
			} {
				t.Run(s.name, func(t *testing.T) {
					start := time.Now()
					vars := map[string]string{}
					for _, kv := range s.env {
						k, v, _ := strings.Cut(kv, "=")
						vars[k] = v
					}
					c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
						ContainerRequest: testcontainers.ContainerRequest{
							Image: tag, Cmd: s.cmd, Env: vars, ExposedPorts: []string{s.port + "/tcp"},
							WaitingFor: wait.ForHTTP(s.path).WithPort(s.port + "/tcp").WithStartupTimeout(3 * time.Minute).
								WithResponseMatcher(func(r io.Reader) bool {
									b, _ := io.ReadAll(r)
									return strings.Contains(string(b), s.ready)
								}),
						},
						Logger: logger(t),
					})
					testcontainers.CleanupContainer(t, c)
					require.NoError(t, err)
					if err := c.Start(ctx); err != nil {
						t.Fatalf("%s of %s did not answer %s: %v\n%s", s.name, tag, s.path, err, logsOf(t, c))
					}
					comm, cmdline, _ := pid1(t, c)
					assert.Equal(t, "java", comm, "PID 1 is the %s's JVM: %s", s.name, cmdline)
					t.Logf("%s answered GET %s (%s)", s.name, s.path, time.Since(start).Round(time.Millisecond))
				})
			}
			t.Logf("every process of Flink %s (%s)", h.flink, time.Since(begin).Round(time.Second))
		})
	}
}
