package main

import (
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// flinkHome writes a Flink distribution and a JDK below a temporary
// directory; env points the CLI at them as a host's environment would.
func flinkHome(t *testing.T, d testkit.Dist) (home string, env map[string]string) {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Skip("the test payloads carry linux-x86_64 native libraries")
	}
	root := t.TempDir()
	require.NoError(t, d.Write(root))
	return filepath.Join(root, testkit.FlinkHome), map[string]string{
		"JAVA_HOME": filepath.Join(root, testkit.JavaHome), "LC_ALL": "C", "PATH": "/usr/bin:/bin",
	}
}

func libState(t *testing.T, home string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(filepath.Join(home, "lib"), func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if d.Name() == host.VerdictFile {
			// Not part of the install's all-or-nothing change: the deep
			// verdict is written once lib is in place, names lib's absolute
			// path and is applied only to JARs whose fingerprints it holds
			// (TestInstallAndCheckWriteTheDeepVerdict, internal/baked).
			return err
		}
		out[strings.TrimPrefix(p, home)] = string(b)
		return err
	}))
	return out
}

func TestInstallOnBareMetal(t *testing.T) {
	home, env := flinkHome(t, testkit.Dist{Flink: "2.2.1"})
	args := []string{"install", "--flink-home", home, "--flink-line", "2.2"}
	args = append(args, jarArgs(t, "2.2", nil)...)
	before := libState(t, home)

	code, out, stderr := cli(t, env, append(args[:1:1], append([]string{"--dry-run"}, args[1:]...)...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "dry run, nothing written")
	assert.Contains(t, out, "add      00-streamfusion-loader.jar")
	assert.Equal(t, before, libState(t, home), "a dry run writes nothing")

	code, out, stderr = cli(t, env, args...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "installed into "+filepath.Join(home, "lib"))
	after := libState(t, home)
	for _, n := range []string{"/lib/00-streamfusion-loader.jar", "/lib/streamfusion-core.jar", "/lib/streamfusion-kafka.jar", "/lib/streamfusion-json.jar"} {
		assert.Contains(t, after, n)
	}
	code, out, stderr = cli(t, env, "check", "--flink-home", home)
	assert.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "StreamFusion admission: ADMITTED")

	code, out, _ = cli(t, env, "check", "--json", "--flink-home", home)
	assert.Equal(t, 0, code)
	var r struct {
		Admitted bool `json:"admitted"`
		Payloads []any
	}
	require.NoError(t, json.Unmarshal([]byte(out), &r))
	assert.True(t, r.Admitted)
	assert.Len(t, r.Payloads, 4)
}

func TestInstallRefusalsLeaveLibUnchanged(t *testing.T) {
	for _, tc := range []struct {
		name string
		dist testkit.Dist
		args func(t *testing.T) []string
		code int
		says string
	}{
		{"the wrong --flink-line", testkit.Dist{Flink: "2.2.1"}, func(t *testing.T) []string {
			return append([]string{"--flink-line", "1.18"}, jarArgs(t, "2.2", nil)...)
		}, 78, "[install-flink-line]"},
		{"payloads of another line", testkit.Dist{Flink: "2.2.1"}, func(t *testing.T) []string { return jarArgs(t, "1.18", nil) }, 78, "[payload-line]"},
		{"a missing JAR path", testkit.Dist{Flink: "2.2.1"}, func(t *testing.T) []string {
			return append(jarArgs(t, "2.2", nil), "./streamfusion-avro-0.1.0.jar")
		}, 1, "./streamfusion-avro-0.1.0.jar: no such file"},
		{"two JARs of one file name", testkit.Dist{Flink: "2.2.1"}, func(t *testing.T) []string {
			a := jarArgs(t, "2.2", nil)
			return append(a, jarArgs(t, "2.2", nil)[0])
		}, 64, "have the same file name"},
		{"a distribution without flink-dist", testkit.Dist{Flink: "2.2.1", NoDist: true}, func(t *testing.T) []string { return jarArgs(t, "2.2", nil) }, 78, "[host-dist-missing]"},
		{"an unsupported --flink-line", testkit.Dist{Flink: "2.2.1"}, func(t *testing.T) []string {
			return append([]string{"--flink-line", "2.3"}, jarArgs(t, "2.2", nil)...)
		}, 64, `--flink-line "2.3": want 2.2 or 1.18`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			home, env := flinkHome(t, tc.dist)
			before := libState(t, home)
			code, out, stderr := cli(t, env, append([]string{"install", "--flink-home", home}, tc.args(t)...)...)
			assert.Equal(t, tc.code, code, "%s\n%s", out, stderr)
			assert.Contains(t, out+stderr, tc.says)
			assert.Equal(t, before, libState(t, home), "lib unchanged")
		})
	}
}

// jarArgs writes the usual payload set of a line to disk and returns the paths.
func jarArgs(t *testing.T, line string, mod func(*testkit.Payload)) []string {
	t.Helper()
	dir := t.TempDir()
	var out []string
	for _, p := range testkit.StreamFusion(line, "0.1.0") {
		if mod != nil {
			mod(&p.Payload)
		}
		f := filepath.Join(dir, p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		out = append(out, f)
	}
	return out
}

func TestInstallJSONAndInspect(t *testing.T) {
	home, env := flinkHome(t, testkit.Good("2.2.1"))
	dir := t.TempDir()
	var jars []string
	for _, p := range testkit.StreamFusion("2.2", "0.2.0") {
		f := filepath.Join(dir, p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		jars = append(jars, f)
	}
	before := libState(t, home)
	code, out, stderr := cli(t, env, append([]string{"install", "--dry-run", "--json", "--flink-home", home}, jars...)...)
	require.Equal(t, 0, code, stderr)
	var got installed
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	assert.True(t, got.DryRun)
	assert.False(t, got.Applied)
	assert.True(t, got.Report.Admitted)
	ops := map[string]int{}
	for _, c := range got.Changes {
		ops[c.Op]++
	}
	assert.Equal(t, map[string]int{"add": 4, "remove": 4}, ops, "the 0.1.0 payloads under their Maven names go")
	assert.Equal(t, before, libState(t, home))

	code, out, _ = cli(t, env, append([]string{"inspect"}, jars...)...)
	assert.Equal(t, 0, code)
	assert.Contains(t, out, "loader streamfusion-loader 0.2.0 (line 2.2)")
	assert.Contains(t, out, "embedded core: core streamfusion-core 0.2.0 (line 2.2)")
	code, out, _ = cli(t, env, "inspect", "--json", filepath.Join(home, "lib", "flink-dist-2.2.1.jar"))
	assert.Equal(t, 0, code)
	assert.Contains(t, out, `"entries"`)
	assert.NotContains(t, out, `"identity"`, "not StreamFusion content")
}

// An install that finds lib locked waits, says whom for, and after
// --lock-timeout exits 1 naming the holder; lib is untouched.
func TestInstallNamesTheLockHolder(t *testing.T) {
	home, env := flinkHome(t, testkit.Good("2.2.1"))
	l, err := install.LockLib(t.Context(), filepath.Join(home, "lib"), false, 0, nil)
	require.NoError(t, err)
	defer l.Unlock()
	before := libState(t, home)
	r := runBin(t, cliBin(), env, nil, append([]string{"install", "--lock-timeout", "200ms", "--flink-home", home}, jarArgs(t, "2.2", nil)...)...)
	assert.Equal(t, 1, r.code, r.stderr)
	assert.Contains(t, r.stderr, "is locked by another install (pid "+strconv.Itoa(os.Getpid()))
	assert.Contains(t, r.stderr, "is locked by another install: pid "+strconv.Itoa(os.Getpid()))
	// How long it waited is measured, not fixed: at least the timeout, and
	// more on a loaded machine.
	m := regexp.MustCompile(`started \d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ; gave up after (\S+) \(--lock-timeout\)`).FindStringSubmatch(r.stderr)
	require.Len(t, m, 2, r.stderr)
	waited, err := time.ParseDuration(m[1])
	require.NoError(t, err, r.stderr)
	assert.GreaterOrEqual(t, waited, 200*time.Millisecond, "it gave up before --lock-timeout")
	assert.Equal(t, before, libState(t, home))
	r = runBin(t, cliBin(), env, nil, "install", "--recover", "--lock-timeout", "0", "--flink-home", home)
	assert.Equal(t, 1, r.code, "recovery takes the lock too: %s", r.stderr)
}
