package main

// End-to-end tests: the built binary, started as a container runtime
// starts it, against image roots laid out by the test kit, with this test
// binary re-run as the original entrypoint (helper mode) to report what it
// received.

import (
	"bytes"
	"debug/elf"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const helperEnv = "SF_TEST_HELPER"

var binary string // the entrypoint under test

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "original" {
		helper()
		return
	}
	dir, err := os.MkdirTemp("", "entrypoint-e2e-")
	if err != nil {
		panic(err)
	}
	binary = filepath.Join(dir, "entrypoint")
	build := osexec.Command("go", "build", "-trimpath", "-o", binary, ".")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build entrypoint: %v\n%s", err, out)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// received is what the helper, standing in for Flink's script, reports.
type received struct {
	Args   []string `json:"args"`
	Env    []string `json:"env"`
	Raw    [][]byte `json:"raw"` // argv then env, as bytes (JSON strings would mend invalid UTF-8)
	Cwd    string   `json:"cwd"`
	FDs    []string `json:"fds"`
	SigIgn string   `json:"sigIgn"`
	SigBlk string   `json:"sigBlk"`
	PID    int      `json:"pid"`
	// Read is rchar of /proc/self/io at the helper's start: the counters
	// survive exec, so it is what the entrypoint read before the hand-off.
	Read int64 `json:"read"`
}

// helperExit is the helper's exit status: the entrypoint must pass it on.
const helperExit = 3

func helper() {
	r := received{Args: os.Args, Env: os.Environ(), PID: os.Getpid()}
	if io, err := os.ReadFile("/proc/self/io"); err == nil {
		for _, line := range strings.Split(string(io), "\n") {
			if v, ok := strings.CutPrefix(line, "rchar: "); ok {
				r.Read, _ = strconv.ParseInt(v, 10, 64)
			}
		}
	}
	for _, s := range os.Args {
		r.Raw = append(r.Raw, []byte(s))
	}
	block, _ := os.ReadFile("/proc/self/environ") // os.Environ drops repeated variables
	r.Raw = append(r.Raw, bytes.Split(bytes.TrimSuffix(block, []byte{0}), []byte{0})...)
	r.Cwd, _ = os.Getwd()
	self, _ := filepath.EvalSymlinks("/proc/self/fd")
	entries, _ := os.ReadDir("/proc/self/fd")
	for _, e := range entries {
		target, _ := os.Readlink("/proc/self/fd/" + e.Name())
		if target == self || strings.HasPrefix(target, "anon_inode:") {
			continue // the listing's own descriptor; Go runtime's epoll/pidfd
		}
		r.FDs = append(r.FDs, e.Name())
	}
	status, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "SigIgn:\t"); ok {
			r.SigIgn = v
		}
		if v, ok := strings.CutPrefix(line, "SigBlk:\t"); ok {
			r.SigBlk = v
		}
	}
	json.NewEncoder(os.Stdout).Encode(r)
	os.Exit(helperExit)
}

// image is an image root on disk and the environment a container of it
// would run with.
type image struct {
	root, termLog string
	env           []string
}

func newImage(t *testing.T, d testkit.Dist) *image {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, d.Write(root))
	self, err := os.Executable()
	require.NoError(t, err)
	im := &image{root: root, termLog: filepath.Join(root, "termination-log")}
	require.NoError(t, os.WriteFile(im.termLog, nil, 0o644))
	im.env = []string{
		"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"FLINK_HOME=" + filepath.Join(root, testkit.FlinkHome),
		"JAVA_HOME=" + filepath.Join(root, testkit.JavaHome),
		"STREAMFUSION_ORIGINAL_ENTRYPOINT=" + self,
		"STREAMFUSION_TERMINATION_LOG=" + im.termLog,
		helperEnv + "=original",
	}
	return im
}

func (im *image) lib(name string) string { return filepath.Join(im.root, testkit.LibDir, name) }

type result struct {
	code           int
	stdout, stderr string
	got            *received // set when the helper ran
}

// start runs the entrypoint as /docker-entrypoint.sh with args.
func (im *image) start(t *testing.T, env []string, args ...string) result {
	t.Helper()
	cmd := im.command(env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return finish(t, err, stdout.String(), stderr.String())
}

func (im *image) command(env []string, args ...string) *osexec.Cmd {
	cmd := osexec.Command(binary, args...)
	cmd.Args[0] = "/docker-entrypoint.sh"
	cmd.Env = append(append([]string(nil), im.env...), env...)
	cmd.Dir = im.root
	return cmd
}

func finish(t *testing.T, err error, stdout, stderr string) result {
	t.Helper()
	r := result{stdout: stdout, stderr: stderr}
	var exit *osexec.ExitError
	switch {
	case errors.As(err, &exit):
		r.code = exit.ExitCode()
		if ws, ok := exit.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			r.code = 128 + int(ws.Signal())
		}
	case err != nil:
		t.Fatalf("run entrypoint: %v", err)
	}
	if strings.HasPrefix(stdout, "{") {
		r.got = &received{}
		require.NoError(t, json.Unmarshal([]byte(stdout), r.got), stdout)
	}
	return r
}

func TestAdmittedHandsOffByteExact(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	args := []string{"jobmanager", "-Drest.port=8081", "two words", "", "tab\there", "non-utf8-\xff\xfe"}
	extra := []string{"WEIRD=a=b=c", "EMPTY=", "UNICODE=ünïcødé", "DUP=first", "DUP=second", "NOEQUALS"}
	argv := append([]string{"/docker-entrypoint.sh"}, args...)
	env := append(append([]string(nil), im.env...), extra...)
	r := startRaw(t, im.root, argv, env)
	require.Equal(t, helperExit, r.code, "the original's exit status is the container's: stderr %s", r.stderr)
	require.NotNil(t, r.got, "the original entrypoint ran")
	var want [][]byte
	for _, s := range append(append([]string(nil), argv...), env...) {
		want = append(want, []byte(s))
	}
	assert.Equal(t, want, r.got.Raw, "argv (argv[0] too) and environment byte-exact: order, duplicates, entries without '=', invalid UTF-8")
	assert.Equal(t, im.root, r.got.Cwd)
	assert.Contains(t, r.stderr, "admitted jobmanager: Flink 2.2.1 (line 2.2, supported)")
	assert.NotContains(t, r.stdout, "streamfusion:", "stdout belongs to Flink")
	term, _ := os.ReadFile(im.termLog)
	assert.Empty(t, term, "no termination message on success")

	// What the original would have inherited started directly.
	base := direct(t, im, args...)
	assert.Equal(t, base.FDs, r.got.FDs, "no descriptors beyond what the runtime passed")
	assert.Equal(t, base.SigIgn, r.got.SigIgn, "no ignored signals added")
	assert.Equal(t, base.SigBlk, r.got.SigBlk, "no signals left blocked")
}

// startRaw starts the entrypoint with exactly argv and env: os/exec would
// drop duplicate variables before the entrypoint saw them.
func startRaw(t *testing.T, dir string, argv, env []string) result {
	t.Helper()
	out, err := os.CreateTemp(t.TempDir(), "stdout")
	require.NoError(t, err)
	errf, err := os.CreateTemp(t.TempDir(), "stderr")
	require.NoError(t, err)
	p, err := os.StartProcess(binary, argv, &os.ProcAttr{Dir: dir, Env: env, Files: []*os.File{nil, out, errf}})
	require.NoError(t, err)
	st, err := p.Wait()
	require.NoError(t, err)
	stdout, _ := os.ReadFile(out.Name())
	stderr, _ := os.ReadFile(errf.Name())
	r := finish(t, nil, string(stdout), string(stderr))
	r.code = st.ExitCode()
	return r
}

// direct starts the helper directly, without the entrypoint.
func direct(t *testing.T, im *image, args ...string) *received {
	t.Helper()
	self, err := os.Executable()
	require.NoError(t, err)
	cmd := osexec.Command(self, args...)
	cmd.Env = im.env
	out, _ := cmd.Output()
	var r received
	require.NoError(t, json.Unmarshal(out, &r), string(out))
	return &r
}

func TestRefusedRenamedExtensionOfOtherLine(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1").With(testkit.Placed{Name: "kafka-connector.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")}))
	r := im.start(t, nil, "taskmanager")
	assert.Equal(t, 78, r.code)
	assert.Nil(t, r.got, "nothing was started")
	assert.Empty(t, r.stdout)
	for _, want := range []string{im.lib("kafka-connector.jar"), "line 1.18", "line 2.2", "Flink 2.2.1", "[payload-line]"} {
		assert.Contains(t, r.stderr, want)
	}
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	last := lines[len(lines)-1]
	assert.True(t, strings.HasPrefix(last, "StreamFusion refused to start taskmanager: 1 error. "+im.lib("kafka-connector.jar")+": "), last)
	for _, line := range lines {
		assert.LessOrEqual(t, strings.Count(line, "line 1.18"), 1, "each fact once: %s", line)
	}
	term, err := os.ReadFile(im.termLog)
	require.NoError(t, err)
	assert.Equal(t, last, string(term), "the summary is the termination message")
}

// A config.yaml that would expand without bound (the mapping alias bomb
// Flink's own loader refuses; a bomb within Flink's 50 aliases that its
// flattening would expand to 2^25 values) is refused at once, naming the
// file, well inside the admission deadline (which would exit 75).
func TestRefusedHostileConfig(t *testing.T) {
	t.Parallel()
	doubling := "m0: &m0 {}\n"
	for i := 1; i <= 25; i++ {
		doubling += fmt.Sprintf("m%d: &m%d {a: *m%d, b: *m%d}\n", i, i, i-1, i-1)
	}
	for name, c := range map[string]struct{ conf, found string }{
		"past Flink's 50 aliases": {testkit.AliasBomb(), "81 aliases to collections"},
		"within 50 aliases":       {doubling, "expand to more than"},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			im := newImage(t, testkit.Good("2.2.1"))
			conf := filepath.Join(im.root, testkit.FlinkHome, "conf", "config.yaml")
			require.NoError(t, os.WriteFile(conf, []byte(c.conf), 0o644))
			r := im.start(t, []string{"FLINK_CONF_DIR=" + filepath.Dir(conf)}, "taskmanager")
			assert.Equal(t, 78, r.code, r.stderr)
			assert.Nil(t, r.got, "nothing was started")
			for _, want := range []string{"[config-file-line]", conf, c.found} {
				assert.Contains(t, r.stderr, want)
			}
			term, err := os.ReadFile(im.termLog)
			require.NoError(t, err)
			assert.Contains(t, string(term), conf)
		})
	}
}

// A lib whose install did not finish (its journal is there) is refused at
// start, naming the command that recovers it; the start only looks, and
// changes nothing.
func TestRefusedUnfinishedInstall(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	journal := im.lib(".streamfusion-install.journal")
	require.NoError(t, os.WriteFile(journal, []byte("streamfusion-install-journal 1\n"), 0o644))
	r := im.start(t, nil, "jobmanager")
	assert.Equal(t, 78, r.code)
	assert.Nil(t, r.got, "nothing was started")
	assert.Contains(t, r.stderr, "[install-interrupted] "+journal)
	assert.Contains(t, r.stderr, "streamfusion install --recover --flink-home "+filepath.Join(im.root, testkit.FlinkHome))
	data, err := os.ReadFile(journal)
	require.NoError(t, err)
	assert.Equal(t, "streamfusion-install-journal 1\n", string(data), "read only")
}

func TestTerminationMessageIsBoundedAndNeverCreated(t *testing.T) {
	t.Parallel()
	d := testkit.Good("2.2.1")
	for i := range 60 {
		d = d.With(testkit.Placed{Name: fmt.Sprintf("renamed-extension-with-a-rather-long-file-name-%02d.jar", i), Payload: testkit.Extension(fmt.Sprintf("x%02d", i), "1.18", "0.1.0")})
	}
	im := newImage(t, d)
	r := im.start(t, nil, "jobmanager")
	require.Equal(t, 78, r.code)
	term, err := os.ReadFile(im.termLog)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(term), 4096)
	assert.True(t, strings.HasSuffix(string(term), "streamfusion check' in the image for the full report."), "said less, not cut: %s", term)
	assert.Contains(t, string(term), "payload-line: 60 in "+im.lib("{renamed-extension-with-a-rather-long-file-name-00.jar, "))
	assert.Regexp(t, `, and \d+ more\}\.`, string(term))
	assert.Contains(t, r.stderr, "renamed-extension-with-a-rather-long-file-name-59.jar", "stderr has every finding")

	missing := filepath.Join(t.TempDir(), "termination-log")
	r = im.start(t, []string{"STREAMFUSION_TERMINATION_LOG=" + missing}, "jobmanager")
	require.Equal(t, 78, r.code)
	assert.NoFileExists(t, missing, "the termination-message file is written, never created")
}

func TestJSONLogs(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1").Replace("streamfusion-json", testkit.Extension("json", "2.2", "0.2.0")))
	r := im.start(t, []string{"STREAMFUSION_LOG_FORMAT=json"}, "jobmanager")
	require.Equal(t, 78, r.code)
	lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
	require.GreaterOrEqual(t, len(lines), 2)
	for _, line := range lines[:len(lines)-1] {
		var ev map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &ev), line)
		assert.Equal(t, "error", ev["level"])
		assert.Equal(t, "payload-version", ev["rule"])
		assert.Equal(t, im.lib("streamfusion-json-0.1.0.jar"), ev["path"])
		assert.Equal(t, "version 0.2.0", ev["found"])
		assert.Equal(t, "version 0.1.0", ev["required"])
	}
	assert.True(t, strings.HasPrefix(lines[len(lines)-1], "StreamFusion refused"), "a plain summary ends the output")
}

func TestRoles(t *testing.T) {
	t.Parallel()
	good := newImage(t, testkit.Good("2.2.1"))
	bad := newImage(t, testkit.Good("2.2.1").With(testkit.Placed{Name: "x.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")}))
	broken := []string{"FLINK_HOME=/nonexistent", "JAVA_HOME=/nonexistent", "STREAMFUSION_STRICT=not-a-bool"}
	admitted := [][]string{
		{"jobmanager"},
		{"standalone-job", "--job-classname", "com.example.Job"},
		{"taskmanager"},
		{"history-server"},
		{"bash", "-c", "kubernetes-jobmanager.sh kubernetes-session"},
		{"bash", "-c", "kubernetes-taskmanager.sh -Dtaskmanager.resource-id=tm-1"},
		{"flink", "run", "job.jar"},
		{"bin/sql-client.sh"},
		{"sql-gateway.sh", "start-foreground"},
	}
	for _, args := range admitted {
		r := good.start(t, nil, args...)
		require.Equal(t, helperExit, r.code, "%q: %s", args, r.stderr)
		assert.Equal(t, args, r.got.Args[1:])
		assert.Contains(t, r.stderr, "admitted", "%q", args)
		r = bad.start(t, nil, args...)
		assert.Equal(t, 78, r.code, "%q is checked", args)
		assert.Nil(t, r.got)
	}
	for _, args := range [][]string{{"help"}, {"bash"}, {"sh", "-c", "ls /opt/flink/lib"}, {"ls", "-l"}, {}} {
		// Pass-through reads nothing: it works with a broken image and broken settings.
		r := bad.start(t, broken, args...)
		require.Equal(t, helperExit, r.code, "%q: %s", args, r.stderr)
		assert.Equal(t, args, r.got.Args[1:])
		assert.Empty(t, r.stderr, "%q", args)
	}
}

func TestOriginalEntrypointFailures(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	dir := t.TempDir()
	plain := filepath.Join(dir, "not-executable.sh")
	require.NoError(t, os.WriteFile(plain, []byte("#!/bin/sh\n"), 0o644))
	for _, c := range []struct {
		original string
		code     int
	}{
		{filepath.Join(dir, "missing.sh"), 127},
		{plain, 126},
		{dir, 126},
		{"docker-entrypoint.sh", 64},
	} {
		for _, args := range [][]string{{"jobmanager"}, {"help"}} {
			r := im.start(t, []string{"STREAMFUSION_ORIGINAL_ENTRYPOINT=" + c.original}, args...)
			assert.Equal(t, c.code, r.code, "%s %q: %s", c.original, args, r.stderr)
			assert.Contains(t, r.stderr, c.original)
		}
	}
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	for _, kv := range []string{"STREAMFUSION_STRICT=maybe", "STREAMFUSION_LOG_FORMAT=xml", "STREAMFUSION_ADMISSION_TIMEOUT=never"} {
		r := im.start(t, []string{kv}, "jobmanager")
		assert.Equal(t, 64, r.code, kv)
		assert.Contains(t, r.stderr, strings.SplitN(kv, "=", 2)[0])
		assert.Nil(t, r.got)
	}
	r := im.start(t, []string{"STREAMFUSION_LOG_LEVEL=loud"}, "jobmanager")
	assert.Equal(t, helperExit, r.code)
	assert.Contains(t, r.stderr, "STREAMFUSION_LOG_LEVEL=\"loud\"")
	assert.Contains(t, r.stderr, "admitted", "an invalid level means info")
}

func TestStrictRefusesExperimental(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("1.18.1"))
	r := im.start(t, nil, "jobmanager")
	require.Equal(t, helperExit, r.code, r.stderr)
	assert.Contains(t, r.stderr, "WARN [line-experimental]")
	r = im.start(t, []string{"STREAMFUSION_STRICT=true"}, "jobmanager")
	assert.Equal(t, 78, r.code)
	assert.Contains(t, r.stderr, "STREAMFUSION_STRICT=true")
}

// bigImage is a good image with one more JAR whose central directory is
// long enough that admission is still reading it when the test acts.
func bigImage(t *testing.T) (*image, string) {
	t.Helper()
	im := newImage(t, testkit.Good("2.2.1"))
	big := im.lib("zz-big-job-dependencies.jar")
	require.NoError(t, os.WriteFile(big, testkit.ManyEntries(400_000, testkit.Manifest("Implementation-Title", "big")), 0o644))
	return im, big
}

// stopped is an entrypoint stopped (SIGSTOP) during admission.
type stopped struct {
	cmd            *osexec.Cmd
	stdout, stderr bytes.Buffer
}

// stopWhileReading starts the entrypoint and stops it while it holds file
// open, still in admission. On a loaded machine the poll may miss the
// window; then it lets that run finish and tries again.
func stopWhileReading(t *testing.T, im *image, env []string, file string) *stopped {
	t.Helper()
	for attempt := 0; attempt < 5; attempt++ {
		s := &stopped{cmd: im.command(env, "jobmanager")}
		s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
		require.NoError(t, s.cmd.Start())
		pid := s.cmd.Process.Pid
		for {
			exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid))
			if err != nil || exe != binary {
				break // handed off or gone: missed
			}
			if holds(pid, file) {
				require.NoError(t, s.cmd.Process.Signal(syscall.SIGSTOP))
				// Stopped; make sure it was still reading.
				if exe, _ := os.Readlink(fmt.Sprintf("/proc/%d/exe", pid)); exe == binary && holds(pid, file) {
					return s
				}
				_ = s.cmd.Process.Signal(syscall.SIGCONT)
				break
			}
		}
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
	t.Fatal("could not catch the entrypoint while it read " + file)
	return nil
}

func holds(pid int, file string) bool {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if target, _ := os.Readlink(dir + "/" + e.Name()); target == file {
			return true
		}
	}
	return false
}

func TestSignalDuringAdmission(t *testing.T) {
	t.Parallel()
	im, big := bigImage(t)
	for _, sig := range []syscall.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP} {
		s := stopWhileReading(t, im, nil, big)
		require.NoError(t, s.cmd.Process.Signal(sig))
		require.NoError(t, s.cmd.Process.Signal(syscall.SIGCONT))
		r := finish(t, s.cmd.Wait(), s.stdout.String(), s.stderr.String())
		assert.Equal(t, 128+int(sig), r.code, "%s: %s", sig, r.stderr)
		assert.Nil(t, r.got, "nothing handed off")
		assert.Contains(t, r.stderr, "during admission")
	}
}

func TestAdmissionDeadline(t *testing.T) {
	t.Parallel()
	im, big := bigImage(t)
	s := stopWhileReading(t, im, []string{"STREAMFUSION_ADMISSION_TIMEOUT=300ms"}, big)
	time.Sleep(600 * time.Millisecond) // stopped past the deadline
	require.NoError(t, s.cmd.Process.Signal(syscall.SIGCONT))
	r := finish(t, s.cmd.Wait(), s.stdout.String(), s.stderr.String())
	assert.Equal(t, 75, r.code, r.stderr)
	assert.Nil(t, r.got)
	assert.Contains(t, r.stderr, "did not finish within 300ms")
	assert.Contains(t, r.stderr, big, "names the file it was reading")
	term, _ := os.ReadFile(im.termLog)
	assert.Contains(t, string(term), "did not finish")
}

func TestOwnCommands(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	r := im.start(t, nil, "streamfusion", "check")
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "StreamFusion admission: ADMITTED")
	assert.Nil(t, r.got, "own commands never hand off")

	r = im.start(t, nil, "streamfusion", "check", "--json")
	assert.Equal(t, 0, r.code)
	var rep struct {
		Admitted  bool     `json:"admitted"`
		Flink     string   `json:"flink"`
		Classpath []string `json:"classpath"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.True(t, rep.Admitted)
	assert.Equal(t, "2.2.1", rep.Flink)
	assert.True(t, strings.HasSuffix(rep.Classpath[len(rep.Classpath)-1], "flink-dist-2.2.1.jar"), "flink-dist last")

	bad := newImage(t, testkit.Good("2.2.1").Without("streamfusion-core"))
	r = bad.start(t, nil, "streamfusion", "check")
	assert.Equal(t, 78, r.code)
	assert.Contains(t, r.stdout, "[core-missing]")
	term, _ := os.ReadFile(bad.termLog)
	assert.Empty(t, term, "check is not a container start")

	r = im.start(t, nil, "streamfusion", "inspect", im.lib("streamfusion-kafka-0.1.0.jar"), im.lib("flink-json-2.2.1.jar"))
	assert.Equal(t, 0, r.code, r.stderr)
	assert.Contains(t, r.stdout, "extension streamfusion-kafka 0.1.0 (line 2.2), artifact tech.streamfusion:streamfusion-kafka")
	assert.Contains(t, r.stdout, "flink-json-2.2.1.jar: not StreamFusion content")
	r = im.start(t, nil, "streamfusion", "inspect", "--json", im.lib("streamfusion-loader-0.1.0.jar"))
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, `"embeddedCore"`)
	r = im.start(t, nil, "streamfusion", "inspect", filepath.Join(im.root, "missing.jar"))
	assert.Equal(t, 78, r.code)
	assert.Contains(t, r.stdout, "cannot read")

	r = im.start(t, nil, "streamfusion", "rules")
	assert.Equal(t, 0, r.code)
	assert.Contains(t, r.stdout, "payload-line")
	r = im.start(t, nil, "streamfusion", "version")
	assert.Equal(t, 0, r.code)
	assert.True(t, strings.HasPrefix(r.stdout, "streamfusion-entrypoint "))
	for _, args := range [][]string{{"streamfusion"}, {"streamfusion", "bogus"}, {"streamfusion", "inspect"}, {"streamfusion", "check", "--bogus"}} {
		r = im.start(t, nil, args...)
		assert.Equal(t, 64, r.code, "%q", args)
		assert.NotEmpty(t, r.stderr, "%q: says what is wrong", args)
	}
	for _, args := range [][]string{{"streamfusion", "--help"}, {"streamfusion", "check", "--help"}, {"streamfusion", "inspect", "-h"}} {
		r = im.start(t, nil, args...)
		assert.Equal(t, 0, r.code, "%q", args)
		assert.Contains(t, r.stdout, "Commands:", "%q", args)
	}
}

// The README's "What a refused start looks like" is the binary's own
// output, the image root stripped from its paths.
func TestReadmeRefusalIsCurrent(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	im := newImage(t, testkit.Good("2.2.1").With(testkit.Placed{Name: "kafka-connector.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")}))
	r := im.start(t, nil, "jobmanager")
	require.Equal(t, 78, r.code)
	block := "```text\n" + strings.ReplaceAll(r.stderr, im.root, "") + "```\n"
	assert.True(t, strings.Contains(string(readme), block), "README's refused start is stale: replace its block with\n%s", block)
}

func TestBinaryIsStaticAndLinksNoNetworkCode(t *testing.T) {
	t.Parallel()
	out, err := osexec.Command("go", "list", "-deps", ".").Output()
	require.NoError(t, err)
	deps := strings.Fields(string(out))
	sort.Strings(deps)
	// The host CLI's registry, engine, HTTP, TLS, XML, Kubernetes and
	// command-line code stays out of the entrypoint, and so do test helpers.
	for _, forbidden := range []string{"net/http", "crypto/tls", "crypto/x509", "encoding/xml", "testing", "testing/fstest",
		"github.com/google/go-containerregistry", "github.com/docker", "github.com/moby", "github.com/spf13/cobra",
		"github.com/testcontainers", "k8s.io", "sigs.k8s.io"} {
		for _, d := range deps {
			assert.False(t, d == forbidden || strings.HasPrefix(d, forbidden+"/"), "the entrypoint links %s", d)
		}
	}
	f, err := elf.Open(binary)
	require.NoError(t, err)
	defer f.Close()
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "static binary: no ELF interpreter")
		assert.NotEqual(t, elf.PT_DYNAMIC, p.Type, "static binary: no dynamic section")
	}
}

// Every start pays for every package init of the binary, whether or not
// the start needs what it prepares (docs/history/performance.md, issue 19): the
// project's own packages prepare nothing heavy at init (a regular
// expression compiled at package level costs 5-20 KB and a few dozen
// allocations; compile it on first use, or match by hand). The runtime
// reports each init's allocations (GODEBUG=inittrace=1).
func TestOwnPackageInitsAreLight(t *testing.T) {
	t.Parallel()
	c := osexec.Command(binary, "streamfusion", "version")
	c.Env = []string{"GODEBUG=inittrace=1"}
	out, err := c.CombinedOutput()
	require.NoError(t, err, "%s", out)
	seen := 0
	for _, line := range strings.Split(string(out), "\n") {
		// init PACKAGE @T ms, T ms clock, N bytes, M allocs
		f := strings.Fields(line)
		if len(f) != 11 || f[0] != "init" {
			continue
		}
		seen++
		if !strings.HasPrefix(f[1], "github.com/streamfusion/") {
			continue
		}
		bytes, err := strconv.Atoi(f[7])
		require.NoError(t, err, line)
		assert.LessOrEqual(t, bytes, 4096, "package init allocates: %s", line)
	}
	require.Greater(t, seen, 10, "the runtime traced the inits:\n%s", out)
}

func TestFaultsInLib(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	lib := filepath.Join(im.root, testkit.LibDir)
	require.NoError(t, os.Symlink("loop-b.jar", filepath.Join(lib, "loop-a.jar")))
	require.NoError(t, os.Symlink("loop-a.jar", filepath.Join(lib, "loop-b.jar")))
	require.NoError(t, os.Symlink("gone.jar", filepath.Join(lib, "dangling.jar")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(lib, "fifo.jar"), 0o644))
	require.NoError(t, os.Symlink("/dev/zero", filepath.Join(lib, "device.jar")))
	require.NoError(t, os.Mkdir(filepath.Join(lib, "directory.jar"), 0o755))
	r := im.start(t, nil, "jobmanager")
	require.Equal(t, 78, r.code, r.stderr)
	for _, name := range []string{"loop-a.jar", "loop-b.jar", "dangling.jar", "fifo.jar"} {
		assert.Contains(t, r.stderr, im.lib(name), "named: %s", name)
	}
	assert.Contains(t, r.stderr, "too many levels of symbolic links")
	assert.Contains(t, r.stderr, "named pipe")
	assert.NotContains(t, r.stderr, "directory.jar", "a directory named *.jar is skipped, as Flink skips it")
	// /dev/zero resolves inside the image root, where it does not exist.
	assert.Contains(t, r.stderr, im.lib("device.jar"))
}

func TestLibMissing(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	r := im.start(t, []string{"FLINK_LIB_DIR=" + filepath.Join(im.root, "nowhere")}, "jobmanager")
	assert.Equal(t, 78, r.code)
	assert.Contains(t, r.stderr, "[host-lib]")
	assert.Contains(t, r.stderr, filepath.Join(im.root, "nowhere"))
}

// As an arbitrary uid with no passwd entry and no HOME: the image's JARs
// are readable, except one the image build left at mode 0000.
func TestArbitraryUIDWithoutHome(t *testing.T) {
	t.Parallel()
	if os.Geteuid() != 0 {
		msg := "this test starts the entrypoint as another uid and needs root, as CI has"
		if os.Getenv("CI") != "" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	im := newImage(t, testkit.Good("2.2.1"))
	require.NoError(t, os.Chmod(filepath.Dir(im.root), 0o755)) // t.TempDir's parent is private
	// Copies the uid can execute: the entrypoint, and the helper as the original.
	install := func(src, name string) string {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		dst := filepath.Join(im.root, name)
		// No process forks while the file is open for writing: a child of
		// a parallel test forked then holds the descriptor until it execs,
		// and running the file meanwhile fails with ETXTBSY ("text file
		// busy", golang/go#22315; seen once in make test).
		syscall.ForkLock.RLock()
		err = os.WriteFile(dst, data, 0o755)
		syscall.ForkLock.RUnlock()
		require.NoError(t, err)
		return dst
	}
	self, err := os.Executable()
	require.NoError(t, err)
	orig := install(self, "original")
	bin := install(binary, "entrypoint")
	var env []string
	for _, kv := range im.env {
		switch {
		case strings.HasPrefix(kv, "HOME="):
		case strings.HasPrefix(kv, "STREAMFUSION_ORIGINAL_ENTRYPOINT="):
			env = append(env, "STREAMFUSION_ORIGINAL_ENTRYPOINT="+orig)
		default:
			env = append(env, kv)
		}
	}
	start := func() result {
		c := osexec.Command(bin, "jobmanager")
		c.Args[0] = "/docker-entrypoint.sh"
		c.Env, c.Dir = env, im.root
		c.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 54321, Gid: 54321}}
		var stdout, stderr bytes.Buffer
		c.Stdout, c.Stderr = &stdout, &stderr
		return finish(t, c.Run(), stdout.String(), stderr.String())
	}
	r := start()
	require.Equal(t, helperExit, r.code, r.stderr)
	assert.Contains(t, r.stderr, "admitted")

	secret := im.lib("streamfusion-json-0.1.0.jar")
	require.NoError(t, os.Chmod(secret, 0))
	hidden := im.lib("private")
	require.NoError(t, os.Mkdir(hidden, 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(hidden, "x.jar"), nil, 0o644))
	r = start()
	assert.Equal(t, 78, r.code)
	assert.Contains(t, r.stderr, secret)
	assert.Contains(t, r.stderr, "permission denied")
	assert.Contains(t, r.stderr, hidden+": cannot list this directory, so JARs in it may be missing from the check", "a directory it cannot list is named too")
}

// Pass-through commands read nothing: what the process read before the
// hand-off is its environment block, not the lib. (rchar counts what
// read(2) and pread(2) return: admission's manifests and config, not the
// central directories it maps.)
func TestPassThroughReadsNothing(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	require.NoError(t, os.WriteFile(im.lib("dependencies.jar"), testkit.ManyEntries(5_000, testkit.Manifest("A", "b")), 0o644))
	admitted := im.start(t, nil, "jobmanager")
	require.Equal(t, helperExit, admitted.code, admitted.stderr)
	passed := im.start(t, nil, "bash", "-c", "true")
	require.Equal(t, helperExit, passed.code, passed.stderr)
	var libBytes int64
	entries, err := os.ReadDir(filepath.Join(im.root, testkit.LibDir))
	require.NoError(t, err)
	for _, e := range entries {
		info, _ := e.Info()
		libBytes += info.Size()
	}
	t.Logf("read before hand-off: admitted %d bytes, pass-through %d bytes (lib holds %d)", admitted.got.Read, passed.got.Read, libBytes)
	assert.Less(t, passed.got.Read, int64(16<<10), "pass-through reads its environment and nothing of the image")
	assert.Greater(t, admitted.got.Read, passed.got.Read+int64(8<<10), "admission reads the lib's manifests")
}

// INT and HUP ignored when the container started stay ignored for Flink
// (and the entrypoint does not start relaying every signal instead). TERM
// cannot be kept ignored: the Go runtime installs its own handler for it at
// start, and a caught signal is reset to its default by execve.
func TestIgnoredSignalsStayIgnored(t *testing.T) {
	t.Parallel()
	im := newImage(t, testkit.Good("2.2.1"))
	// sh -c 'trap "" TERM INT HUP; exec ...' starts the entrypoint with all three ignored.
	cmd := osexec.Command("/bin/sh", "-c", `trap "" TERM INT HUP; exec "$0" jobmanager`, binary)
	cmd.Env, cmd.Dir = im.env, im.root
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	r := finish(t, cmd.Run(), stdout.String(), stderr.String())
	require.Equal(t, helperExit, r.code, r.stderr)
	ign, err := strconv.ParseUint(r.got.SigIgn, 16, 64)
	require.NoError(t, err)
	for _, s := range []syscall.Signal{syscall.SIGINT, syscall.SIGHUP} {
		assert.NotZero(t, ign&(1<<(uint(s)-1)), "%s still ignored after the hand-off", s)
	}
	assert.Zero(t, ign&(1<<(uint(syscall.SIGTERM)-1)), "TERM is reset to its default")
}

// TestJDKAsFlinkScriptsChooseIt: the JDK judged is the one Flink's scripts
// will start the JVM from (internal/realflink proves the model on the real
// scripts): 1.18's image appends FLINK_PROPERTIES to flink-conf.yaml, whose
// env.java.home wins over JAVA_HOME; 2.x's image rewrites config.yaml nested,
// which hides the flat key from the scripts.
func TestJDKAsFlinkScriptsChooseIt(t *testing.T) {
	t.Parallel()
	jdk21 := func(im *image) string {
		home := filepath.Join(im.root, "opt/jdk-21")
		require.NoError(t, os.MkdirAll(filepath.Join(home, "bin"), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(home, "release"), []byte("JAVA_VERSION=\"21.0.5\"\n"), 0o644))
		return home
	}
	conf := func(im *image, name, data string) {
		dir := filepath.Join(im.root, testkit.FlinkHome, "conf")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, name), []byte(data), 0o644))
	}

	old := newImage(t, testkit.Good("1.18.1"))
	conf(old, "flink-conf.yaml", "jobmanager.rpc.address: localhost\n")
	r := old.start(t, []string{"FLINK_PROPERTIES=env.java.home: " + jdk21(old)}, "jobmanager")
	assert.Equal(t, 78, r.code, r.stderr)
	assert.Contains(t, r.stderr, "host-jdk-unsupported")
	assert.Contains(t, r.stderr, "env.java.home in FLINK_PROPERTIES, appended to")
	assert.Nil(t, r.got, "refused before any hand-off")

	cur := newImage(t, testkit.Good("2.2.1"))
	conf(cur, "config.yaml", "env.java.home: "+jdk21(cur)+"\n")
	r = cur.start(t, nil, "streamfusion", "check", "--json")
	assert.Equal(t, 0, r.code, r.stdout)
	var rep struct {
		JDK     string `json:"jdk"`
		JDKFrom string `json:"jdkFrom"`
	}
	require.NoError(t, json.Unmarshal([]byte(r.stdout), &rep))
	assert.Equal(t, "17.0.15", rep.JDK)
	assert.Contains(t, rep.JDKFrom, "JAVA_HOME")
	assert.Contains(t, rep.JDKFrom, "is ignored: the image entrypoint rewrites")
}

// A derived image's RUN step: `streamfusion check --write-verdict` after
// the COPY of a job JAR into usrlib judges lib and usrlib once, in full,
// and writes the verdict every start then applies for the price of the
// fingerprints; a job that cannot link fails the step (78) and writes
// nothing, and a JAR changed after it is judged again at start.
func TestOwnCheckWritesTheVerdict(t *testing.T) {
	t.Parallel()
	lib := testkit.ClassJAR(testkit.Manifest(), []testkit.Class{{Name: "com/acme/lib/Util",
		Methods: []testkit.Member{{Name: "present", Descriptor: "()V"}}}}, nil)
	job := func(method string) []byte {
		return testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.Main"), []testkit.Class{{Name: "com/acme/Main",
			Calls: []testkit.Call{{Owner: "com/acme/lib/Util", Name: method, Descriptor: "()V"}}}}, nil)
	}
	setup := func(t *testing.T, method string) (*image, string) {
		im := newImage(t, testkit.Good("2.2.1"))
		require.NoError(t, os.WriteFile(im.lib("util.jar"), lib, 0o644))
		usrlib := filepath.Join(im.root, testkit.FlinkHome, "usrlib")
		require.NoError(t, os.MkdirAll(usrlib, 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(usrlib, "job.jar"), job(method), 0o644))
		return im, filepath.Join(usrlib, "job.jar")
	}

	im, jobPath := setup(t, "present")
	r := im.start(t, nil, "streamfusion", "check", "--write-verdict")
	require.Equal(t, 0, r.code, r.stdout+r.stderr)
	require.FileExists(t, im.lib(".streamfusion-deep-verdict"))
	r = im.start(t, nil, "jobmanager")
	require.Equal(t, helperExit, r.code, r.stderr)
	assert.Contains(t, r.stderr, "the baked deep verdict applies: 17 JARs of lib and 1 of usrlib unchanged")

	// The JAR replaced after the step: judged at start against the index.
	require.NoError(t, os.WriteFile(jobPath, job("gone"), 0o644))
	r = im.start(t, nil, "jobmanager")
	assert.Equal(t, 78, r.code, r.stderr)
	assert.Contains(t, r.stderr, "linkage-method")

	bad, _ := setup(t, "gone")
	r = bad.start(t, nil, "streamfusion", "check", "--write-verdict")
	assert.Equal(t, 78, r.code, r.stdout+r.stderr)
	assert.Contains(t, r.stdout, "[linkage-method]")
	assert.NoFileExists(t, bad.lib(".streamfusion-deep-verdict"), "a refused check writes no verdict")
}
