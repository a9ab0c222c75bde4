package install

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// dist writes a Flink distribution (and JDK, and glibc loader) below a
// temporary root and returns the root.
func dist(t *testing.T, d testkit.Dist) string {
	t.Helper()
	root := t.TempDir()
	require.NoError(t, d.Write(root))
	return root
}

func settings() host.Settings {
	return host.Settings{LibDir: "/" + testkit.LibDir, JavaHome: "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64", Order: host.ByteOrder}
}

func payloads(line, version string) []Payload {
	var out []Payload
	for _, p := range testkit.StreamFusion(line, version) {
		out = append(out, Payload{Source: "./" + p.Name, Data: p.Payload.Bytes()})
	}
	return out
}

// snapshot is every file below root: mode, link target and contents (by
// digest, so a difference prints short).
func snapshot(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	require.NoError(t, filepath.WalkDir(root, func(p string, _ fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := os.Lstat(p)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		v := info.Mode().String()
		switch {
		case info.Mode()&fs.ModeSymlink != 0:
			l, err := os.Readlink(p)
			if err != nil {
				return err
			}
			v += " -> " + l
		case info.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			v += fmt.Sprintf(" %d bytes sha256:%x", len(b), sha256.Sum256(b))
		}
		out[rel] = v
		return nil
	}))
	return out
}

func install(t *testing.T, root, line string, ps []Payload, ops FileOps) (*Plan, error) {
	t.Helper()
	p, err := Decide(context.Background(), os.DirFS(root), settings(), line, ps)
	if err != nil {
		return p, err
	}
	return p, Apply(p, root, ops)
}

func libNames(t *testing.T, root string) []string {
	t.Helper()
	names, _, err := host.List(os.DirFS(root), testkit.LibDir)
	require.NoError(t, err)
	for i := range names {
		names[i] = strings.TrimPrefix(names[i], testkit.LibDir+"/")
	}
	return names
}

func check(t *testing.T, root string) *admission.Decision {
	t.Helper()
	f, err := host.Gather(context.Background(), os.DirFS(root), settings(), nil)
	require.NoError(t, err)
	return admission.Decide(f)
}

func TestInstallsUnderTheDocumentedNames(t *testing.T) {
	root := dist(t, testkit.Dist{Flink: "2.2.1"})
	require.False(t, check(t, root).Admitted(), "plain Flink: no loader")
	ps := append(payloads("2.2", "0.1.0"), Payload{Source: "paimon.jar", Data: testkit.Extension("paimon", "2.2", "0.1.0").Bytes()})
	p, err := install(t, root, "2.2", ps, nil)
	require.NoError(t, err)
	for _, c := range p.Changes {
		assert.Equal(t, OpAdd, c.Op, c.Name)
	}
	names := libNames(t, root)
	for _, n := range []string{"00-streamfusion-loader.jar", "streamfusion-core.jar", "streamfusion-kafka.jar", "streamfusion-json.jar", "01-streamfusion-paimon.jar"} {
		assert.Contains(t, names, n)
	}
	data, err := os.ReadFile(filepath.Join(root, testkit.LibDir, "streamfusion-kafka.jar"))
	require.NoError(t, err)
	assert.Equal(t, ps[2].Data, data, "byte for byte")
	assert.True(t, check(t, root).Admitted())
	entries, err := os.ReadDir(filepath.Join(root, testkit.LibDir))
	require.NoError(t, err)
	for _, e := range entries {
		assert.False(t, strings.HasPrefix(e.Name(), ".streamfusion-install-"), "the staging directory is gone")
	}
}

func TestReplacesEarlierPayloadsByContentWhateverTheirNames(t *testing.T) {
	d := testkit.Good("2.2.1") // 0.1.0 under Maven file names
	kafka := testkit.Extension("kafka", "2.2", "0.1.0")
	d = d.Without("streamfusion-kafka").With(testkit.Placed{Name: "connectors/renamed-kafka.jar", Payload: kafka})
	root := dist(t, d)
	require.True(t, check(t, root).Admitted())
	p, err := install(t, root, "", payloads("2.2", "0.2.0"), nil)
	require.NoError(t, err)
	ops := map[string]string{}
	for _, c := range p.Changes {
		ops[c.Name] = c.Op
	}
	assert.Equal(t, OpRemove, ops["connectors/renamed-kafka.jar"])
	assert.Equal(t, OpRemove, ops["streamfusion-loader-0.1.0.jar"])
	assert.Equal(t, OpAdd, ops["00-streamfusion-loader.jar"])
	dec := check(t, root)
	require.True(t, dec.Admitted(), "%v", dec.Findings)
	require.Len(t, dec.Payloads, 4)
	for _, id := range dec.Payloads {
		assert.Equal(t, "0.2.0", id.Version, id.Path)
	}
	assert.Contains(t, libNames(t, root), "flink-connector-files-2.2.1.jar", "stock JARs stay")

	// Installing again over documented names replaces them in place.
	p, err = install(t, root, "", payloads("2.2", "0.2.1"), nil)
	require.NoError(t, err)
	for _, c := range p.Changes {
		assert.Equal(t, OpReplace, c.Op, c.Name)
		assert.Equal(t, "0.2.0", c.Old.Version)
	}
	assert.True(t, check(t, root).Admitted())
}

// Every refusal leaves lib byte for byte as it was, and says why.
func TestRefusalsLeaveLibUnchanged(t *testing.T) {
	stock := testkit.JAR(testkit.Manifest("Implementation-Title", "flink-connector-kafka", "Implementation-Version", "5.0.0-2.2"))
	for _, tc := range []struct {
		name string
		dist testkit.Dist
		set  func(*host.Settings)
		line string
		ps   []Payload
		rule string
	}{
		{name: "payloads of another line", dist: testkit.Dist{Flink: "2.2.1"}, ps: payloads("1.18", "0.1.0"), rule: "payload-line"},
		{name: "--flink-line other than the distribution's", dist: testkit.Dist{Flink: "2.2.1"}, line: "1.18", ps: payloads("2.2", "0.1.0"), rule: RuleLine},
		{name: "a stock JAR as a payload", dist: testkit.Dist{Flink: "2.2.1"}, ps: append(payloads("2.2", "0.1.0"), Payload{Source: "flink-connector-kafka-5.0.0-2.2.jar", Data: stock}), rule: RuleNotPayload},
		{name: "not a JAR at all", dist: testkit.Dist{Flink: "2.2.1"}, ps: append(payloads("2.2", "0.1.0"), Payload{Source: "notes.jar", Data: []byte("hello")}), rule: RuleNotPayload},
		{name: "two payloads of one module", dist: testkit.Dist{Flink: "2.2.1"}, ps: append(payloads("2.2", "0.1.0"), Payload{Source: "kafka-again.jar", Data: testkit.Extension("kafka", "2.2", "0.1.0").Bytes()}), rule: RuleSameModule},
		{name: "another release than a kept payload", dist: testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-avro-0.1.0.jar", Payload: testkit.Extension("avro", "2.2", "0.1.0")}), ps: payloads("2.2", "0.2.0"), rule: "payload-version"},
		{name: "no loader", dist: testkit.Dist{Flink: "2.2.1"}, ps: payloads("2.2", "0.1.0")[1:], rule: "loader-missing"},
		{name: "no flink-dist", dist: testkit.Dist{Flink: "2.2.1", NoDist: true}, ps: payloads("2.2", "0.1.0"), rule: "host-dist-missing"},
		{name: "an unsupported Flink release", dist: testkit.Dist{Flink: "2.3.0"}, ps: payloads("2.2", "0.1.0"), rule: "host-planner-abi"},
		{name: "an unsupported JDK", dist: testkit.Dist{Flink: "2.2.1", JDK: "21.0.1"}, ps: payloads("2.2", "0.1.0"), rule: "host-jdk-unsupported"},
		{name: "no JDK", dist: testkit.Dist{Flink: "2.2.1"}, set: func(s *host.Settings) { s.JavaHome = "/nowhere" }, ps: payloads("2.2", "0.1.0"), rule: "host-jdk-missing"},
		{name: "a platform the natives do not cover", dist: testkit.Dist{Flink: "2.2.1"}, set: func(s *host.Settings) { s.Arch = "aarch64" }, ps: payloads("2.2", "0.1.0"), rule: "host-platform"},
		{name: "a payload bundling slf4j", dist: testkit.Dist{Flink: "2.2.1"}, ps: func() []Payload {
			ps := payloads("2.2", "0.1.0")
			k := testkit.Extension("kafka", "2.2", "0.1.0")
			k.Entries = []testkit.Entry{{Name: "org/slf4j/Logger.class", Data: []byte("x")}}
			ps[2].Data = k.Bytes()
			return ps
		}(), rule: "layout-logging"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := dist(t, tc.dist)
			before := snapshot(t, root)
			s := settings()
			if tc.set != nil {
				tc.set(&s)
			}
			p, err := Decide(context.Background(), os.DirFS(root), s, tc.line, tc.ps)
			require.ErrorIs(t, err, admit.ErrRefused)
			var rules []string
			for _, f := range p.Decision.Errors() {
				rules = append(rules, f.Rule)
			}
			assert.Contains(t, rules, tc.rule)
			require.ErrorIs(t, Apply(p, root, nil), admit.ErrRefused, "a refused plan is never applied")
			assert.Equal(t, before, snapshot(t, root))
		})
	}
}

// failing is OS with the n-th operation failing.
type failing struct {
	OS
	n, calls int
}

var errInjected = errors.New("injected failure")

func (f *failing) fail() error {
	f.calls++
	if f.calls == f.n {
		return fmt.Errorf("%w at operation %d", errInjected, f.n)
	}
	return nil
}

func (f *failing) Mkdir(name string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.OS.Mkdir(name)
}

func (f *failing) Append(name string, data []byte) error {
	if err := f.fail(); err != nil {
		// a torn append: half the bytes, then the error
		_ = f.OS.Append(name, data[:len(data)/2])
		return err
	}
	return f.OS.Append(name, data)
}

func (f *failing) Remove(name string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.OS.Remove(name)
}

func (f *failing) RemoveAll(name string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.OS.RemoveAll(name)
}

func (f *failing) WriteFile(name string, data []byte) error {
	if err := f.fail(); err != nil {
		// a torn write: half the file, then the error
		_ = os.WriteFile(name, data[:len(data)/2], 0o644)
		return err
	}
	return f.OS.WriteFile(name, data)
}

func (f *failing) Rename(from, to string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.OS.Rename(from, to)
}

func (f *failing) SyncDir(dir string) error {
	if err := f.fail(); err != nil {
		return err
	}
	return f.OS.SyncDir(dir)
}

// A failure at any step of Apply leaves lib as it was, or, once every new
// file is in place, as the install makes it (the install then stands and
// Apply returns nil); never a third state, and never a journal or a stage
// left behind. The replaced payloads sit under other names and in a
// subdirectory, so moving aside and back is exercised.
func TestAnyFailureLeavesLibAsItWasOrInstalled(t *testing.T) {
	d := testkit.Good("2.2.1").Without("streamfusion-json", "streamfusion-core").
		With(testkit.Placed{Name: "sub/json-renamed.jar", Payload: testkit.Extension("json", "2.2", "0.1.0")}).
		With(testkit.Placed{Name: "streamfusion-core.jar", Payload: testkit.Core("2.2", "0.1.0")})
	clean := dist(t, d)
	before := snapshot(t, clean)
	_, err := install(t, clean, "2.2", payloads("2.2", "0.2.0"), nil)
	require.NoError(t, err)
	after := snapshot(t, clean)
	require.NotEqual(t, before, after)
	steps, rolledBack, completed := 0, 0, 0
	for n := 1; ; n++ {
		root := dist(t, d)
		require.True(t, check(t, root).Admitted())
		ops := &failing{n: n}
		_, err := install(t, root, "2.2", payloads("2.2", "0.2.0"), ops)
		got := snapshot(t, root)
		if ops.calls < n { // no failure injected: the whole install ran
			require.NoError(t, err)
			steps = ops.calls
			assert.Equal(t, after, got)
			break
		}
		if err != nil {
			require.ErrorIs(t, err, errInjected, "step %d", n)
			t.Logf("step %d: %v", n, err)
			assert.Equal(t, before, got, "step %d failed: lib must be as it was", n)
			rolledBack++
		} else {
			assert.Equal(t, after, got, "step %d failed after every new file was in place: the install stands", n)
			completed++
		}
		if n > 200 {
			t.Fatal("no run without a failure")
		}
	}
	// journal+sync, mkdir, 4 writes, 2 syncs, mark; 8 renames (4 aside,
	// 4 into place) with their syncs and marks; commit; cleanup.
	assert.GreaterOrEqual(t, steps, 2+1+4+2+1+8*3+1+4)
	assert.Positive(t, rolledBack)
	assert.Positive(t, completed)
}
