//go:build imagesuite

// Package suite runs StreamFusion images in a real container engine: test
// images built from scratch with go-containerregistry (a busybox stand-in
// for speed, and real Flink on a Debian root: realflink_test.go), the
// StreamFusion layer from bake, loaded into the engine testcontainers-go
// finds (DOCKER_HOST, Docker contexts, ~/.testcontainers.properties;
// podman's API service in CI) and started with testcontainers-go as Flink
// containers are.
package suite

import (
	"context"
	"fmt"
	"io"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
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
	tclog "github.com/testcontainers/testcontainers-go/log"
	"github.com/testcontainers/testcontainers-go/wait"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

var (
	engine     *testcontainers.DockerClient
	entrypoint []byte
	busybox    v1.Layer
	bindir     string // entrypoint and streamfusion, built for the suite
)

func TestMain(m *testing.M) {
	os.Exit(setup(m))
}

func setup(m *testing.M) int {
	dir, err := os.MkdirTemp("", "image-suite-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	bindir = dir
	bin := filepath.Join(dir, "entrypoint")
	for _, cmd := range []string{"entrypoint", "streamfusion"} {
		build := osexec.Command("go", "build", "-trimpath", "-o", filepath.Join(dir, cmd), "../../cmd/"+cmd)
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
		if out, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build %s: %v\n%s", cmd, err, out)
			return 1
		}
	}
	if entrypoint, err = os.ReadFile(bin); err != nil {
		panic(err)
	}
	bb := os.Getenv("BUSYBOX")
	if bb == "" {
		bb = "/bin/busybox"
	}
	if busybox, err = imagekit.Busybox(bb); err != nil {
		fmt.Fprintln(os.Stderr, "image suite:", err)
		return 1
	}
	// Testcontainers' reaper (Ryuk) is an image that cannot be pulled here:
	// off unless the environment says otherwise (the Makefile sets it).
	if os.Getenv("TESTCONTAINERS_RYUK_DISABLED") == "" {
		os.Setenv("TESTCONTAINERS_RYUK_DISABLED", "true")
	}
	// The engine comes from testcontainers' usual configuration: DOCKER_HOST,
	// Docker contexts, ~/.testcontainers.properties; images are loaded with
	// the same client the containers are started with.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	engine, err = testcontainers.NewDockerClientWithOpts(ctx)
	if err == nil {
		_, err = engine.Ping(ctx, client.PingOptions{})
	}
	cancel()
	if err != nil {
		fmt.Fprintf(os.Stderr, "image suite: no container engine (DOCKER_HOST=%q): %v\n"+
			"start one, for example: podman system service --time=0 unix:///run/podman/podman.sock & export DOCKER_HOST=unix:///run/podman/podman.sock\n",
			os.Getenv("DOCKER_HOST"), err)
		return 1
	}
	return m.Run()
}

// line is one image definition of images/.
type line struct {
	line  string // StreamFusion line
	flink string // host Flink version
	user  string // the base image's user: 9999 for 2.2, root for 1.18
}

var hosts = []line{{"2.2", "2.2.0", "9999"}, {"2.2", "2.2.1", "9999"}, {"1.18", "1.18.1", ""}}

// test doubles the Flink-like image carries besides Flink's script.
var doubles = []imagekit.Entry{
	// Native Kubernetes runs `bash -c ...`; busybox has no bash applet.
	{Name: "bin/bash", Data: []byte("#!/bin/sh\nexec /bin/sh \"$@\"\n"), Mode: 0o755},
	{Name: "opt/flink/bin/kubernetes-jobmanager.sh", Data: []byte("#!/bin/sh\necho \"flink-double: started role=kubernetes-jobmanager pid=$$ uid=$(id -u) args=$*\"\n"), Mode: 0o755},
	{Name: "opt/flink/bin/kubernetes-taskmanager.sh", Data: []byte("#!/bin/sh\necho \"flink-double: started role=kubernetes-taskmanager pid=$$ uid=$(id -u) args=$*\"\n"), Mode: 0o755},
}

// baked returns the good StreamFusion image of a host: base, then bake.
func baked(t *testing.T, h line) v1.Image {
	t.Helper()
	d := testkit.Dist{Flink: h.flink}
	base, err := imagekit.Base{Dist: d, User: h.user, Busybox: busybox, Extra: doubles}.Image()
	require.NoError(t, err)
	var files []image.File
	for _, p := range testkit.StreamFusion(h.line, "0.1.0") {
		files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	img, _, err := image.Bake(context.Background(), base, image.BakeOptions{Entrypoint: entrypoint, Payloads: files, BaseName: "flink:" + h.flink})
	require.NoError(t, err)
	return img
}

// inject adds a layer with more or replaced JARs in lib: the conflicts bake
// would refuse to build.
func inject(t *testing.T, img v1.Image, jars map[string][]byte) v1.Image {
	t.Helper()
	var entries []imagekit.Entry
	for n, data := range jars {
		entries = append(entries, imagekit.Entry{Name: testkit.LibDir + "/" + n, Data: data, Mode: 0o644})
	}
	out, err := mutate.AppendLayers(img, imagekit.Layer(entries...))
	require.NoError(t, err)
	return out
}

// load loads images into the engine under tags.
func load(t testing.TB, imgs map[string]v1.Image) {
	t.Helper()
	refs := map[name.Reference]v1.Image{}
	for tag, img := range imgs {
		ref, err := name.ParseReference(tag)
		require.NoError(t, err)
		refs[ref] = img
	}
	pr, pw := io.Pipe()
	go func() { pw.CloseWithError(tarball.MultiRefWrite(refs, pw)) }()
	tags := make([]string, 0, len(imgs))
	for tag := range imgs {
		tags = append(tags, tag)
	}
	loadTarball(t, pr, tags...)
}

// loadTarball loads a `docker save` style tarball, as docker load and
// podman load do, and removes its tags when the test ends.
func loadTarball(t testing.TB, r io.Reader, tags ...string) {
	t.Helper()
	resp, err := engine.ImageLoad(context.Background(), r)
	require.NoError(t, err)
	out, _ := io.ReadAll(resp)
	resp.Close()
	require.NotContains(t, string(out), "errorDetail", string(out))
	t.Cleanup(func() {
		for _, tag := range tags {
			_, _ = engine.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true})
		}
	})
}

// run is one container start.
type run struct {
	image      string
	entrypoint []string // nil: the image's
	cmd        []string
	user       string
	readOnly   bool
	termLog    string // host file bound at /dev/termination-log
	env        []string
}

type outcome struct {
	code int
	logs string
}

func (r run) start(t *testing.T) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	env := map[string]string{}
	for _, kv := range r.env {
		k, v, _ := strings.Cut(kv, "=")
		env[k] = v
	}
	c, err := testcontainers.GenericContainer(ctx, testcontainers.GenericContainerRequest{
		ContainerRequest: testcontainers.ContainerRequest{
			Image: r.image, Entrypoint: r.entrypoint, Cmd: r.cmd, Env: env,
			ConfigModifier: func(c *container.Config) { c.User = r.user },
			HostConfigModifier: func(hc *container.HostConfig) {
				hc.ReadonlyRootfs = r.readOnly
				hc.NetworkMode = "none"
				if r.termLog != "" {
					hc.Binds = []string{r.termLog + ":/dev/termination-log"}
				}
			},
			WaitingFor: exited{time.Minute},
		},
		Started: true,
		Logger:  tclog.TestLogger(t),
	})
	testcontainers.CleanupContainer(t, c)
	require.NoError(t, err)
	// The status comes from inspect: podman's compat API is the reference here.
	st, err := stateOf(ctx, c)
	require.NoError(t, err)
	return outcome{code: st.ExitCode, logs: logsOf(t, c)}
}

// podman's compat API answers an inspect of a container that is being torn
// down with "read /proc/N/cgroup: no such process"; asked again, it answers.
func transient(err error) bool {
	return err != nil && strings.Contains(err.Error(), "no such process")
}

// exited waits for the container to exit, as wait.ForExit does, asking
// again when the engine's answer was transient.
type exited struct{ timeout time.Duration }

func (e exited) WaitUntilReady(ctx context.Context, target wait.StrategyTarget) error {
	deadline := time.Now().Add(e.timeout)
	for {
		err := wait.ForExit().WithExitTimeout(time.Until(deadline)).WaitUntilReady(ctx, target)
		if !transient(err) || time.Now().After(deadline) {
			return err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// stateOf is the container's state, asked again when the engine's answer
// was transient.
func stateOf(ctx context.Context, c testcontainers.Container) (*container.State, error) {
	for i := 0; ; i++ {
		st, err := c.State(ctx)
		if !transient(err) || i == 20 {
			return st, err
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func tagOf(h line, what string) string {
	return fmt.Sprintf("localhost/streamfusion-suite:%s-%s", h.flink, what)
}

func TestGoodImagesReachFlink(t *testing.T) {
	imgs := map[string]v1.Image{}
	for _, h := range hosts {
		imgs[tagOf(h, "good")] = baked(t, h)
	}
	load(t, imgs)
	for _, h := range hosts {
		tag := tagOf(h, "good")
		for _, c := range []struct {
			name string
			r    run
			want string
		}{
			{"jobmanager", run{cmd: []string{"jobmanager"}}, "role=jobmanager pid=1"},
			{"taskmanager", run{cmd: []string{"taskmanager", "-Dtaskmanager.numberOfTaskSlots=2"}}, "role=taskmanager pid=1"},
			{"standalone-job", run{cmd: []string{"standalone-job", "--job-classname", "com.example.Job"}}, "role=standalone-job pid=1"},
			{"history-server", run{cmd: []string{"history-server"}}, "role=history-server pid=1"},
			{"native kubernetes", run{entrypoint: []string{"/docker-entrypoint.sh"}, cmd: []string{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session"}}, "role=kubernetes-jobmanager pid=1"},
			{"native kubernetes taskmanager", run{entrypoint: []string{"/docker-entrypoint.sh"}, cmd: []string{"bash", "-c", "kubernetes-taskmanager.sh -Dtaskmanager.resource-id=tm-1"}}, "role=kubernetes-taskmanager pid=1"},
		} {
			t.Run(h.flink+"/"+c.name, func(t *testing.T) {
				c.r.image = tag
				o := c.r.start(t)
				require.Equal(t, 0, o.code, o.logs)
				assert.Contains(t, o.logs, "flink-double: started "+c.want, "handed off, and the started process is PID 1: no wrapper left")
				assert.Contains(t, o.logs, "streamfusion: INFO admitted")
				if c.r.cmd[0] == "taskmanager" {
					assert.Contains(t, o.logs, "args=-Dtaskmanager.numberOfTaskSlots=2")
				}
				if h.user == "9999" {
					assert.Contains(t, o.logs, "uid=9999", "2.2 images run as the flink user")
				} else {
					assert.Contains(t, o.logs, "uid=0", "1.18 images start as root")
				}
				if h.line == "1.18" {
					assert.Contains(t, o.logs, "[line-experimental]")
				}
			})
		}
		t.Run(h.flink+"/read-only root, arbitrary uid", func(t *testing.T) {
			o := run{image: tag, cmd: []string{"jobmanager"}, user: "12345:12345", readOnly: true}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "role=jobmanager pid=1 uid=12345")
		})
		t.Run(h.flink+"/pass-through", func(t *testing.T) {
			o := run{image: tag, cmd: []string{"sh", "-c", "echo debug-shell-works"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "debug-shell-works")
			assert.NotContains(t, o.logs, "streamfusion:")
		})
		t.Run(h.flink+"/check", func(t *testing.T) {
			o := run{image: tag, cmd: []string{"streamfusion", "check"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "StreamFusion admission: ADMITTED")
			assert.Contains(t, o.logs, "en_US.UTF-8 collation", "the image's locale orders the classpath")
		})
	}
}

func other(l string) string {
	if l == "2.2" {
		return "1.18"
	}
	return "2.2"
}

// conflict is a JAR set injected into a good image: what bake would refuse.
type conflict struct {
	name string
	jars func(h line) map[string][]byte
	want []string // in the logs, besides the paths
	// hostLine: the host's line is named too (a version conflict within
	// one line, or a JAR without a marker, does not need it)
	hostLine bool
}

var conflictCases = []conflict{
	{"loader of the other line", func(h line) map[string][]byte {
		p := testkit.Loader(other(h.line), "0.1.0")
		return map[string][]byte{testkit.Loader(h.line, "0.1.0").FileName(): p.Bytes()}
	}, []string{"[payload-line]", "line " + "%other%"}, true},
	{"embedded core of another release", func(h line) map[string][]byte {
		l := testkit.Loader(h.line, "0.1.0")
		c := testkit.Core(h.line, "0.0.9")
		l.Embedded = &c
		return map[string][]byte{l.FileName(): l.Bytes()}
	}, []string{"[loader-embedded-mismatch]", "found streamfusion-core 0.0.9", "required streamfusion-core 0.1.0"}, true},
	{"runtime core of another release", func(h line) map[string][]byte {
		c := testkit.Core(h.line, "0.2.0")
		return map[string][]byte{testkit.Core(h.line, "0.1.0").FileName(): c.Bytes()}
	}, []string{"[core-mismatch]", "streamfusion-core 0.2.0"}, true},
	{"renamed extension of the other line", func(h line) map[string][]byte {
		return map[string][]byte{"kafka-connector.jar": testkit.Extension("avro", other(h.line), "0.1.0").Bytes()}
	}, []string{"[payload-line]", "line %other%", "kafka-connector.jar"}, true},
	{"renamed extension without marker", func(h line) map[string][]byte {
		e := testkit.Extension("avro", h.line, "0.1.0")
		e.NoMarker = true
		return map[string][]byte{"udfs.jar": e.Bytes()}
	}, []string{"[payload-unversioned]", "udfs.jar"}, false},
	{"renamed extension of another release", func(h line) map[string][]byte {
		return map[string][]byte{"zz-avro.jar": testkit.Extension("avro", h.line, "0.2.0").Bytes()}
	}, []string{"[payload-version]", "found version 0.2.0", "required version 0.1.0", "zz-avro.jar"}, false},
}

func TestConflictsStopFlinkAtTheDoor(t *testing.T) {
	imgs := map[string]v1.Image{}
	for _, h := range hosts {
		good := baked(t, h)
		for i, c := range conflictCases {
			imgs[tagOf(h, fmt.Sprintf("conflict%d", i))] = inject(t, good, c.jars(h))
		}
	}
	load(t, imgs)
	for _, h := range hosts {
		for i, c := range conflictCases {
			t.Run(h.flink+"/"+c.name, func(t *testing.T) {
				termLog := filepath.Join(t.TempDir(), "termination-log")
				require.NoError(t, os.WriteFile(termLog, nil, 0o666))
				require.NoError(t, os.Chmod(termLog, 0o666)) // writable by the image's user, as Kubernetes makes it
				o := run{image: tagOf(h, fmt.Sprintf("conflict%d", i)), cmd: []string{"jobmanager"}, termLog: termLog}.start(t)
				assert.Equal(t, 78, o.code, o.logs)
				assert.NotContains(t, o.logs, "flink-double: started", "refused before the JobManager started")
				assert.Contains(t, o.logs, "/opt/flink/lib/")
				for _, w := range c.want {
					assert.Contains(t, o.logs, strings.ReplaceAll(w, "%other%", other(h.line)))
				}
				if c.hostLine {
					assert.Contains(t, o.logs, "line "+h.line, "the host's line is named too")
				}
				msg, err := os.ReadFile(termLog)
				require.NoError(t, err)
				assert.True(t, strings.HasPrefix(string(msg), "StreamFusion refused to start jobmanager"), "termination message: %q", msg)
			})
		}
	}
}

// The tarball `streamfusion bake --output` writes is what the engine
// loads (docker load / podman load), and the image it holds starts Flink.
func TestBakeOutputLoadsAndStarts(t *testing.T) {
	h := hosts[1]
	base, err := imagekit.Base{Dist: testkit.Dist{Flink: h.flink}, User: h.user, Busybox: busybox, Extra: doubles}.Image()
	require.NoError(t, err)
	dir := t.TempDir()
	baseTar := filepath.Join(dir, "base.tar")
	require.NoError(t, tarball.WriteToFile(baseTar, name.MustParseReference("localhost/flink:base").(name.Tag), base))
	args := []string{"bake", "--base", baseTar, "--output", filepath.Join(dir, "baked.tar"), "--name", "localhost/streamfusion-suite:cli-baked"}
	for _, p := range testkit.StreamFusion(h.line, "0.1.0") {
		f := filepath.Join(dir, p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		args = append(args, "--payload", f)
	}
	out, err := osexec.Command(filepath.Join(bindir, "streamfusion"), args...).CombinedOutput()
	require.NoError(t, err, string(out))

	f, err := os.Open(filepath.Join(dir, "baked.tar"))
	require.NoError(t, err)
	defer f.Close()
	loadTarball(t, f, "localhost/streamfusion-suite:cli-baked")
	o := run{image: "localhost/streamfusion-suite:cli-baked", cmd: []string{"jobmanager"}}.start(t)
	require.Equal(t, 0, o.code, o.logs)
	assert.Contains(t, o.logs, "flink-double: started role=jobmanager pid=1 uid=9999")
}

// TestImagesOfTheEngine: an image in the engine's storage is read through
// the engine's API (docker-daemon:REF), without a registry or a saved
// tarball, and decided as the image itself is; a bake from it keeps its
// layers.
func TestImagesOfTheEngine(t *testing.T) {
	img := baked(t, hosts[1])
	tag := "localhost/streamfusion-suite:engine-source"
	load(t, map[string]v1.Image{tag: img})
	want, err := image.Verify(context.Background(), img)
	require.NoError(t, err)

	src, err := source.Open(context.Background(), source.DaemonPrefix+tag)
	require.NoError(t, err)
	defer src.Close()
	got, err := image.Verify(context.Background(), src.Image)
	require.NoError(t, err)
	assert.True(t, got.Decision.Admitted())
	assert.Equal(t, report.New(want.Facts, want.Decision), report.New(got.Facts, got.Decision))

	wantIDs, err := img.ConfigFile()
	require.NoError(t, err)
	gotLayers, err := src.Image.Layers()
	require.NoError(t, err)
	require.Len(t, gotLayers, len(wantIDs.RootFS.DiffIDs))
	for i, l := range gotLayers {
		d, err := l.DiffID()
		require.NoError(t, err)
		assert.Equal(t, wantIDs.RootFS.DiffIDs[i], d, "layer %d", i)
	}

	out, err := osexec.Command(filepath.Join(bindir, "streamfusion"), "verify", source.DaemonPrefix+tag).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "== "+source.DaemonPrefix+tag)
}
