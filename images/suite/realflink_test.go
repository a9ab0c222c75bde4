//go:build imagesuite

package suite

import (
	"archive/tar"
	"context"
	_ "embed"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tcexec "github.com/testcontainers/testcontainers-go/exec"
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// Real Flink in the image suite: a Debian bookworm root with OpenJDK 17
// (scripts/build-base-root, mmdebstrap from the machine's apt sources), a
// real Flink distribution at /opt/flink (scripts/fetch-flink-dist) and our
// stand-in for Flink's docker-entrypoint.sh (testdata/), baked with
// image.Bake, then started as Flink containers are.
//
// The containers are driven with testcontainers-go: the engine comes from
// its usual configuration (DOCKER_HOST, Docker contexts,
// ~/.testcontainers.properties). Its reaper (Ryuk) is a container image
// that cannot be pulled here, so it is off: TESTCONTAINERS_RYUK_DISABLED=true
// (the Makefile sets it; TestMain defaults it when unset) and every
// container is removed by the test that made it.

//go:embed testdata/flink-docker-entrypoint.sh
var standIn []byte

// realHosts are the real distributions, one per StreamFusion line. The
// 2.2 image runs as the flink user (USER flink); the 1.18 image starts as
// root and the stand-in drops to flink with gosu, as the official images do.
var realHosts = []line{{"2.2", "2.2.0", "flink"}, {"1.18", "1.18.1", ""}}

var realInputs struct {
	once   sync.Once
	err    error
	rootfs string
	homes  map[string]string // Flink version -> FLINK_HOME
	cache  string
}

// setupReal builds (or finds in the cache) the base root and the
// distributions, once for the suite.
func setupReal(t testing.TB) {
	t.Helper()
	realInputs.once.Do(func() {
		realInputs.err = func() error {
			cache, err := os.UserCacheDir()
			if err != nil {
				return err
			}
			realInputs.cache = filepath.Join(cache, "streamfusion", "images")
			start := time.Now()
			out, err := script("build-base-root", realInputs.cache)
			if err != nil {
				return err
			}
			realInputs.rootfs = out[len(out)-1]
			fmt.Fprintf(os.Stderr, "image suite: base root %s (%s)\n", realInputs.rootfs, time.Since(start).Round(time.Second))
			var versions []string
			for _, h := range realHosts {
				versions = append(versions, h.flink)
			}
			start = time.Now()
			out, err = script("fetch-flink-dist", versions...)
			if err != nil {
				return err
			}
			if len(out) < len(versions) {
				return fmt.Errorf("fetch-flink-dist printed %d homes for %d versions: %q", len(out), len(versions), out)
			}
			out = out[len(out)-len(versions):]
			realInputs.homes = map[string]string{}
			for i, v := range versions {
				realInputs.homes[v] = out[i]
			}
			fmt.Fprintf(os.Stderr, "image suite: Flink distributions %v (%s)\n", out, time.Since(start).Round(time.Second))
			return nil
		}()
	})
	require.NoError(t, realInputs.err, "the real Flink images need mmdebstrap and the Flink distributions (see .ci/run)")
}

// script runs one of the repository's scripts and returns its stdout lines.
func script(name string, args ...string) ([]string, error) {
	cmd := osexec.Command(filepath.Join("..", "..", "scripts", name), args...)
	cmd.Stderr = os.Stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("scripts/%s %s: %w", name, strings.Join(args, " "), err)
	}
	lines := strings.Fields(strings.TrimSpace(string(out)))
	if len(lines) == 0 {
		return nil, fmt.Errorf("scripts/%s printed nothing", name)
	}
	return lines, nil
}

// s3Plugin is the real flink-s3-fs-hadoop of a release, fetched by Maven
// coordinates into STREAMFUSION_FLINK_JARS (make image-test fetches
// internal/realflink/testdata/coordinates.txt).
func s3Plugin(t testing.TB, version string) string {
	t.Helper()
	dir := os.Getenv("STREAMFUSION_FLINK_JARS")
	require.NotEmpty(t, dir, "STREAMFUSION_FLINK_JARS must name the JAR cache; run `make image-test`")
	p := filepath.Join(dir, "flink-s3-fs-hadoop-"+version+".jar")
	_, err := os.Stat(p)
	require.NoError(t, err, "the s3 plugin is not fetched: run `make image-test`")
	return p
}

// s3Config is the distribution's own config file (config.yaml on 2.x,
// flink-conf.yaml on 1.18) with an s3 checkpoint directory added, and its
// path in the image.
func s3Config(t testing.TB, h line) (string, []byte) {
	t.Helper()
	name := "config.yaml"
	if h.line == "1.18" {
		name = "flink-conf.yaml"
	}
	data, err := os.ReadFile(filepath.Join(realInputs.homes[h.flink], "conf", name))
	require.NoError(t, err)
	return "opt/flink/conf/" + name, append(data, "\nstate.checkpoints.dir: s3://bucket/checkpoints\n"...)
}

func realTag(h line, what string) string {
	return fmt.Sprintf("localhost/streamfusion-suite:real-%s-%s", h.flink, what)
}

// flinkContainer creates (without starting) a container of image with cmd.
func flinkContainer(t testing.TB, img string, cmd []string, waitFor wait.Strategy, hc func(*container.HostConfig), env ...string) testcontainers.Container {
	t.Helper()
	vars := map[string]string{}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		vars[k] = v
	}
	c, err := testcontainers.GenericContainer(context.Background(), testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: img, Cmd: cmd, ExposedPorts: []string{"8081/tcp"},
			WaitingFor: waitFor, HostConfigModifier: hc, Env: vars,
		},
		Logger: logger(t),
	})
	testcontainers.CleanupContainer(t, c)
	require.NoError(t, err)
	return c
}

// logger is testcontainers' log in tests; benchmarks keep only their figures.
func logger(t testing.TB) tclog.Logger {
	if _, ok := t.(*testing.B); ok {
		return tclog.NewNoopLogger()
	}
	return tclog.TestLogger(t)
}

func logsOf(t testing.TB, c testcontainers.Container) string {
	t.Helper()
	rc, err := c.Logs(context.Background())
	require.NoError(t, err)
	defer rc.Close()
	b, err := io.ReadAll(rc)
	require.NoError(t, err)
	return string(b)
}

// overview is Flink's REST /overview.
type overview struct {
	TaskManagers int    `json:"taskmanagers"`
	FlinkVersion string `json:"flink-version"`
}

func overviewMatches(want func(overview) bool) func(io.Reader) bool {
	return func(r io.Reader) bool {
		var o overview
		return json.NewDecoder(r).Decode(&o) == nil && want(o)
	}
}

func restOverview(t *testing.T, c testcontainers.Container) (overview, string) {
	t.Helper()
	ep, err := c.PortEndpoint(context.Background(), "8081/tcp", "http")
	require.NoError(t, err)
	resp, err := http.Get(ep + "/overview")
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(body))
	var o overview
	require.NoError(t, json.Unmarshal(body, &o), string(body))
	return o, string(body)
}

// stopped is how a JobManager ended on `stop` (SIGTERM).
type stopped struct {
	code int
	logs string
}

// Flink's line on SIGTERM, logged by its signal handler before the JVM
// runs its shutdown hooks. What the hooks log after it is cut off where the
// JVM ends, so it is not compared.
var gracefulLines = []string{
	"RECEIVED SIGNAL 15: SIGTERM. Shutting down as requested.",
}

// jobManager starts a JobManager of img, waits (testcontainers' HTTP
// strategy) for REST /overview to answer with the release, and returns the
// container and the time from start to that answer.
func jobManager(t testing.TB, img, version string) (testcontainers.Container, time.Duration) {
	t.Helper()
	rest := wait.ForHTTP("/overview").WithPort("8081/tcp").WithStartupTimeout(4 * time.Minute).
		WithPollInterval(50 * time.Millisecond).
		WithResponseMatcher(overviewMatches(func(o overview) bool { return o.FlinkVersion == version }))
	jm := flinkContainer(t, img, []string{"jobmanager"}, rest, nil)
	start := time.Now()
	err := jm.Start(context.Background())
	took := time.Since(start)
	if err != nil {
		t.Fatalf("JobManager of %s did not answer REST: %v\n%s", img, err, logsOf(t, jm))
	}
	return jm, took
}

// stop stops a JobManager the way `docker stop` does (SIGTERM) and reads
// its exit status from inspect.
func stop(t testing.TB, c testcontainers.Container) stopped {
	t.Helper()
	timeout := time.Minute
	require.NoError(t, c.Stop(context.Background(), &timeout))
	st, err := c.State(context.Background())
	require.NoError(t, err)
	return stopped{code: st.ExitCode, logs: logsOf(t, c)}
}

// pid1 is the command name, command line and status of the container's PID 1.
func pid1(t *testing.T, c testcontainers.Container) (comm, cmdline, status string) {
	t.Helper()
	read := func(file string) string {
		code, r, err := c.Exec(context.Background(), []string{"cat", file}, tcexec.Multiplexed())
		require.NoError(t, err)
		out, _ := io.ReadAll(r)
		require.Equal(t, 0, code, string(out))
		return strings.TrimSpace(strings.ReplaceAll(string(out), "\x00", " "))
	}
	return read("/proc/1/comm"), read("/proc/1/cmdline"), read("/proc/1/status")
}

// logFiles lists the files a Flink process wrote to /opt/flink/log of a
// (stopped) container: Flink's console logging writes a file there too.
func logFiles(t *testing.T, c testcontainers.Container) []string {
	t.Helper()
	res, err := engine.CopyFromContainer(context.Background(), c.GetContainerID(), client.CopyFromContainerOptions{SourcePath: "/opt/flink/log"})
	require.NoError(t, err)
	rc := res.Content
	defer rc.Close()
	var files []string
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		if h.Typeflag == tar.TypeReg {
			files = append(files, h.Name)
		}
	}
	return files
}

// loadBase loads the base image unless the engine holds it already, and
// leaves it there: the baked images share its layers, so a rerun against
// the same engine loads only the small layers on top.
func loadBase(t testing.TB, tag string, img v1.Image) {
	t.Helper()
	id, err := img.ConfigName()
	require.NoError(t, err)
	if have, err := engine.ImageInspect(context.Background(), tag); err == nil && have.ID == id.String() {
		return
	}
	ref, err := name.ParseReference(tag)
	require.NoError(t, err)
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.Write(ref, img, pw)) }()
	resp, err := engine.ImageLoad(context.Background(), pr)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp)
	resp.Close()
	require.NotContains(t, string(out), "errorDetail", string(out))
}

func TestRealFlink(t *testing.T) {
	setupReal(t)
	for _, h := range realHosts {
		t.Run(h.flink, func(t *testing.T) {
			testRealLine(t, h)
		})
	}
}

// prepareReal builds (or takes from the cache) the base image of h, loads
// it, and bakes it.
func prepareReal(t testing.TB, h line) v1.Image {
	t.Helper()
	ctx := context.Background()
	start := time.Now()
	base, file, err := imagekit.RealBase{RootFS: realInputs.rootfs, FlinkHome: realInputs.homes[h.flink], Entrypoint: standIn, User: h.user}.
		Cached(realInputs.cache, realTag(h, "base"))
	require.NoError(t, err)
	t.Logf("base image %s (%s)", file, time.Since(start).Round(time.Millisecond))

	start = time.Now()
	var files []image.File
	for _, p := range testkit.StreamFusion(h.line, "0.1.0") {
		files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	baked, res, err := image.Bake(ctx, base, image.BakeOptions{Entrypoint: entrypoint, Payloads: files, BaseName: "flink:" + h.flink})
	require.NoError(t, err)
	t.Logf("baked, JDK %s (%s)", res.Facts.JDK.Version, time.Since(start).Round(time.Millisecond))
	start = time.Now()
	loadBase(t, realTag(h, "base"), base)
	t.Logf("base image in the engine (%s)", time.Since(start).Round(time.Millisecond))
	return baked
}

func testRealLine(t *testing.T, h line) {
	ctx := context.Background()
	baked := prepareReal(t, h)
	imgs := map[string]v1.Image{realTag(h, "baked"): baked}
	start := time.Now()
	for i, c := range conflictCases {
		imgs[realTag(h, fmt.Sprintf("conflict%d", i))] = inject(t, baked, c.jars(h))
	}
	// The same image with the real s3 file system plugin in a folder of
	// its own (issue 38's end-to-end case).
	s3, err := os.ReadFile(s3Plugin(t, h.flink))
	require.NoError(t, err)
	withS3, err := mutate.AppendLayers(baked, imagekit.Layer(imagekit.Entry{Name: "opt/flink/plugins/s3-fs-hadoop/flink-s3-fs-hadoop-" + h.flink + ".jar", Data: s3, Mode: 0o644}))
	require.NoError(t, err)
	imgs[realTag(h, "s3")] = withS3
	// Both with an s3 checkpoint directory in the image's own config file
	// (flink:flink, writable: the stand-in rewrites it in place).
	conf, data := s3Config(t, h)
	for _, tag := range []string{"baked", "s3"} {
		img, err := mutate.AppendLayers(imgs[realTag(h, tag)], imagekit.Layer(imagekit.Entry{Name: conf, Data: data, Mode: 0o664, UID: 9999, GID: 9999}))
		require.NoError(t, err)
		imgs[realTag(h, tag+"-cp")] = img
	}
	load(t, imgs)
	t.Logf("loaded %d images (%s)", len(imgs), time.Since(start).Round(time.Millisecond))

	// The same image without our entrypoint: Flink's script (the stand-in)
	// is the entrypoint, as in the base image.
	var without stopped
	t.Run("without our entrypoint", func(t *testing.T) {
		jm, took := jobManager(t, realTag(h, "base"), h.flink)
		t.Logf("time-to-REST without our entrypoint: %s", took.Round(time.Millisecond))
		without = stop(t, jm)
		assert.Equal(t, 143, without.code, without.logs)
		assert.NotEmpty(t, logFiles(t, jm), "a JVM that ran leaves its log file in /opt/flink/log")
		for _, l := range gracefulLines {
			assert.Contains(t, without.logs, l)
		}
	})

	t.Run("jobmanager", func(t *testing.T) {
		jm, took := jobManager(t, realTag(h, "baked"), h.flink)
		t.Logf("time-to-REST with our entrypoint: %s", took.Round(time.Millisecond))
		o, body := restOverview(t, jm)
		t.Logf("GET /overview: %s", body)
		assert.Equal(t, h.flink, o.FlinkVersion)

		comm, cmdline, status := pid1(t, jm)
		assert.Equal(t, "java", comm, "PID 1 is the JVM: our entrypoint and the stand-in exec'd: %s", cmdline)
		assert.Regexp(t, `(?m)^Uid:\s+9999\s`, status, "Flink runs as the flink user (USER flink on 2.2, gosu on 1.18)")
		assert.Contains(t, cmdline, "org.apache.flink.runtime.entrypoint.StandaloneSessionClusterEntrypoint")

		// What admission costs in this container, on the real lib: the same
		// work as before the hand-off, timed by bash inside the container.
		code, r, err := jm.Exec(ctx, []string{"bash", "-c", "TIMEFORMAT=%R; time /docker-entrypoint.sh streamfusion check >/dev/null"}, tcexec.Multiplexed())
		require.NoError(t, err)
		out, _ := io.ReadAll(r)
		require.Equal(t, 0, code, string(out))
		t.Logf("admission on the real lib (streamfusion check, wall seconds): %s", strings.TrimSpace(string(out)))

		t.Run("taskmanager registers", func(t *testing.T) {
			// The TaskManager shares the JobManager's network namespace and
			// finds it on loopback (jobmanager.rpc.address: localhost).
			tm := flinkContainer(t, realTag(h, "baked"), []string{"taskmanager"},
				wait.ForLog("Successful registration at resource manager").WithStartupTimeout(4*time.Minute),
				func(hc *container.HostConfig) {
					hc.NetworkMode = container.NetworkMode("container:" + jm.GetContainerID())
				})
			if err := tm.Start(ctx); err != nil {
				t.Fatalf("TaskManager did not register: %v\n%s", err, logsOf(t, tm))
			}
			registered := wait.ForHTTP("/overview").WithPort("8081/tcp").WithStartupTimeout(time.Minute).
				WithResponseMatcher(overviewMatches(func(o overview) bool { return o.TaskManagers >= 1 }))
			require.NoError(t, registered.WaitUntilReady(ctx, jm))
			o, body := restOverview(t, jm)
			t.Logf("GET /overview with a TaskManager: %s", body)
			assert.GreaterOrEqual(t, o.TaskManagers, 1)
			tmLogs := logsOf(t, tm)
			assert.Contains(t, tmLogs, "streamfusion: INFO admitted")
			// Without the Arrow options the TaskManager is warned, and
			// still starts.
			assert.Contains(t, tmLogs, "[config-taskmanager-flags]")
			assert.NotContains(t, tmLogs, "[config-env]", "the baked image sets no GLIBC_TUNABLES")
			comm, _, _ := pid1(t, tm)
			assert.Equal(t, "java", comm)
			require.NoError(t, tm.Terminate(ctx))
		})

		t.Run("taskmanager with the Arrow options", func(t *testing.T) {
			tm := flinkContainer(t, realTag(h, "baked"), []string{"taskmanager"},
				wait.ForLog("Successful registration at resource manager").WithStartupTimeout(4*time.Minute),
				func(hc *container.HostConfig) {
					hc.NetworkMode = container.NetworkMode("container:" + jm.GetContainerID())
				}, "FLINK_ENV_JAVA_OPTS_TM="+admission.ArrowOptions())
			if err := tm.Start(ctx); err != nil {
				t.Fatalf("TaskManager did not register: %v\n%s", err, logsOf(t, tm))
			}
			tmLogs := logsOf(t, tm)
			assert.Contains(t, tmLogs, "streamfusion: INFO admitted")
			assert.NotContains(t, tmLogs, "[config-taskmanager-flags]")
			_, cmdline, _ := pid1(t, tm)
			assert.Contains(t, cmdline, "-Darrow.enable_unsafe_memory_access=true", "the JVM runs with what the rule asked for")
			require.NoError(t, tm.Terminate(ctx))
		})

		with := stop(t, jm)
		assert.Contains(t, with.logs, "streamfusion: INFO admitted")
		assert.NotContains(t, with.logs, "[config-taskmanager-flags]", "a JobManager is not asked for the TaskManager's options")
		if h.line == "1.18" {
			assert.Contains(t, with.logs, "[line-experimental]")
		}
		assert.Equal(t, 143, with.code, with.logs)
		assert.Equal(t, without.code, with.code, "stop ends the JobManager as it ends without our entrypoint")
		for _, l := range gracefulLines {
			assert.Contains(t, with.logs, l)
		}
	})

	// What Flink resolves at run time, end to end: an s3 checkpoint
	// directory in the image's config file with no file system for s3 is
	// refused before any JVM; the same image with the plugin in plugins/
	// starts, its JobManager answering REST. (Not FLINK_PROPERTIES: the
	// official 2.x image's script loses a value written "key: value", as
	// internal/host models it, where this suite's stand-in keeps it.)
	t.Run("refused: an s3 checkpoint directory without a file system for s3", func(t *testing.T) {
		jm := flinkContainer(t, realTag(h, "baked-cp"), []string{"jobmanager"}, exited{time.Minute}, nil)
		require.NoError(t, jm.Start(ctx))
		st, err := stateOf(ctx, jm)
		require.NoError(t, err)
		logs := logsOf(t, jm)
		assert.Equal(t, 78, st.ExitCode, logs)
		assert.Contains(t, logs, "[fs-scheme-unserved]")
		assert.Contains(t, logs, "s3://bucket/checkpoints")
		assert.Contains(t, logs, "org.apache.flink:flink-s3-fs-hadoop:"+h.flink, "the fix names the plugin")
		assert.NotContains(t, logs, "stand-in entrypoint:")
		assert.Empty(t, logFiles(t, jm))
	})
	t.Run("admitted: the same with the s3 plugin in plugins/", func(t *testing.T) {
		jm, took := jobManager(t, realTag(h, "s3-cp"), h.flink)
		t.Logf("time-to-REST with the s3 plugin: %s", took.Round(time.Millisecond))
		logs := logsOf(t, jm)
		assert.Contains(t, logs, "streamfusion: INFO admitted")
		assert.NotContains(t, logs, "[fs-scheme-unserved]")
		require.NoError(t, jm.Terminate(ctx))
	})

	for i, c := range conflictCases {
		t.Run("refused: "+c.name, func(t *testing.T) {
			jm := flinkContainer(t, realTag(h, fmt.Sprintf("conflict%d", i)), []string{"jobmanager"},
				exited{time.Minute}, nil)
			require.NoError(t, jm.Start(ctx))
			st, err := stateOf(ctx, jm)
			require.NoError(t, err)
			logs := logsOf(t, jm)
			assert.Equal(t, 78, st.ExitCode, logs)
			for _, w := range c.want {
				assert.Contains(t, logs, strings.ReplaceAll(w, "%other%", other(h.line)))
			}
			if c.hostLine {
				assert.Contains(t, logs, "line "+h.line, "the host's line is named too")
			}
			// No JVM ever ran: Flink's script (the only way to one) never
			// started, and no Flink process wrote a log file.
			assert.NotContains(t, logs, "stand-in entrypoint:")
			assert.NotContains(t, logs, "org.apache.flink")
			assert.Empty(t, logFiles(t, jm))
		})
	}
}

// BenchmarkTimeToREST alternates cold starts of a JobManager from the same
// image without and with our entrypoint, and reports each one's median time
// from container start to REST /overview answering.
//
//	go test -tags imagesuite -run '^$' -bench TimeToREST -benchtime 5x ./images/suite/
func BenchmarkTimeToREST(b *testing.B) {
	setupReal(b)
	for _, h := range realHosts {
		b.Run(h.flink, func(b *testing.B) {
			baked := prepareReal(b, h)
			load(b, map[string]v1.Image{realTag(h, "baked"): baked})
			var without, with []time.Duration
			for b.Loop() {
				for _, v := range []struct {
					tag  string
					into *[]time.Duration
				}{{realTag(h, "base"), &without}, {realTag(h, "baked"), &with}} {
					jm, took := jobManager(b, v.tag, h.flink)
					*v.into = append(*v.into, took)
					require.NoError(b, jm.Terminate(context.Background()))
				}
			}
			b.ReportMetric(median(without).Seconds(), "s-without")
			b.ReportMetric(median(with).Seconds(), "s-with")
			b.Logf("time-to-REST without our entrypoint %v, with %v", without, with)
		})
	}
}

func median(d []time.Duration) time.Duration {
	s := append([]time.Duration(nil), d...)
	slices.Sort(s)
	return s[len(s)/2]
}
