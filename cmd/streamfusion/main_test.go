package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

var entrypoints = map[string]string{} // by architecture

// testDir holds what TestMain builds, and the CLI binaries built on demand.
var testDir string

func TestMain(m *testing.M) {
	// Re-run as the CLI itself (os/exec's helper-process pattern), with the
	// fault hooks of faults_test.go: the child processes of the install
	// tests that kill, lock and race.
	if os.Getenv("STREAMFUSION_TEST_CLI") == "1" {
		fileOps = faultOps
		os.Exit(run(context.Background(), os.Args[1:], os.Environ(), os.Stdout, os.Stderr))
	}
	dir, err := os.MkdirTemp("", "streamfusion-test-")
	if err != nil {
		panic(err)
	}
	testDir = dir
	// The go commands below and in the tests keep the machine's build
	// cache: GOCACHE defaults to one below XDG_CACHE_HOME, which the next
	// line moves, and an empty build cache rebuilt the CLI and all its
	// dependencies at every run (minutes; TestVersionSaysTheBuild ran past
	// the test timeout on a loaded machine).
	if os.Getenv("GOCACHE") == "" {
		if out, err := osexec.Command("go", "env", "GOCACHE").Output(); err == nil {
			os.Setenv("GOCACHE", strings.TrimSpace(string(out)))
		}
	}
	os.Setenv("XDG_CACHE_HOME", filepath.Join(dir, "cache")) // the layer cache of these tests only
	for _, arch := range []string{"amd64", "arm64"} {
		out := filepath.Join(dir, "entrypoint-linux-"+arch)
		build := osexec.Command("go", "build", "-trimpath", "-o", out, "../entrypoint")
		build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH="+arch)
		if b, err := build.CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "build entrypoint for %s: %v\n%s", arch, err, b)
			os.Exit(1)
		}
		entrypoints[arch] = out
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// flinkBase is a Flink 2.2.1 image without StreamFusion.
func flinkBase(t *testing.T, arch string) v1.Image {
	t.Helper()
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	if arch == "arm64" {
		d.Files = map[string][]byte{"lib/ld-linux-aarch64.so.1": []byte("loader")}
	}
	img, err := imagekit.Base{Dist: d, User: "9999", Arch: arch}.Image()
	require.NoError(t, err)
	return img
}

// payloadFiles writes the usual StreamFusion set for line 2.2 to disk.
func payloadFiles(t *testing.T, mod func(*testkit.Payload)) []string {
	t.Helper()
	dir := t.TempDir()
	var args []string
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		if mod != nil {
			mod(&p.Payload)
		}
		f := filepath.Join(dir, p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		args = append(args, "--payload", f)
	}
	return args
}

func cli(t *testing.T, env map[string]string, args ...string) (int, string, string) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	var list []string
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	code := run(context.Background(), args, list, &stdout, &stderr)
	return code, stdout.String(), stderr.String()
}

func writeTarball(t *testing.T, img v1.Image) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "base.tar")
	require.NoError(t, tarball.WriteToFile(p, name.MustParseReference("flink:2.2.1-test").(name.Tag), img))
	return p
}

func TestBakeToRegistryAndVerifyByReference(t *testing.T) {
	srv := httptest.NewServer(registry.New())
	defer srv.Close()
	host := strings.TrimPrefix(srv.URL, "http://")
	base := host + "/flink:2.2.1"
	baseRef, err := name.ParseReference(base)
	require.NoError(t, err)
	require.NoError(t, remote.Write(baseRef, flinkBase(t, "amd64")))

	code, _, stderr := cli(t, nil, "verify", base)
	assert.Equal(t, 78, code, "plain Flink has no StreamFusion: %s", stderr)

	baked := host + "/flink:2.2.1-streamfusion"
	code, out, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--tag", baked, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, out, "baked linux/amd64 sha256:")

	code, out, stderr = cli(t, nil, "verify", baked)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "StreamFusion admission: ADMITTED")

	code, out, _ = cli(t, nil, "verify", "--json", baked)
	require.Equal(t, 0, code)
	var reports []verified
	require.NoError(t, json.Unmarshal([]byte(out), &reports))
	require.Len(t, reports, 1)
	assert.Equal(t, "2.2.1", reports[0].Report.Flink)
	assert.Len(t, reports[0].Report.Payloads, 4)

	// The baked image keeps the base's config and is annotated with it.
	bakedRef, err := name.ParseReference(baked)
	require.NoError(t, err)
	img, err := remote.Image(bakedRef)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, []string{"/docker-entrypoint.sh"}, cf.Config.Entrypoint)
	assert.Equal(t, []string{"help"}, cf.Config.Cmd)
	assert.Equal(t, "9999", cf.Config.User)
	assert.Equal(t, "/opt/flink", cf.Config.WorkingDir)
	assert.Contains(t, cf.Config.Env, "FLINK_HOME=/opt/flink")
	m, err := img.Manifest()
	require.NoError(t, err)
	assert.Equal(t, base, m.Annotations[image.AnnotationBaseName])
	assert.True(t, strings.HasPrefix(m.Annotations[image.AnnotationBaseDigest], "sha256:"))
}

func TestBakeLayout(t *testing.T) {
	img, err := flinkBase(t, "amd64"), error(nil)
	require.NoError(t, err)
	fsys, err := imagekit.Files(bakeTarball(t, writeTarball(t, img), nil))
	require.NoError(t, err)
	for p, mode := range map[string]os.FileMode{
		strings.TrimPrefix(image.EntrypointPath, "/"): image.EntrypointMode,
		strings.TrimPrefix(image.OriginalPath, "/"):   0o755,
		"opt/flink/lib/streamfusion-loader-0.1.0.jar": image.PayloadMode,
	} {
		f, ok := fsys[p]
		require.True(t, ok, p)
		assert.Equal(t, mode, f.Mode.Perm(), p)
	}
	assert.Equal(t, imagekit.FlinkDouble, string(fsys[strings.TrimPrefix(image.OriginalPath, "/")].Data), "Flink's script kept, byte for byte")
	elf := fsys[strings.TrimPrefix(image.EntrypointPath, "/")].Data
	assert.Equal(t, []byte("\x7fELF"), elf[:4])
}

// bakeTarball bakes a tarball base into a tarball and loads the result.
func bakeTarball(t *testing.T, base string, env map[string]string, extra ...string) v1.Image {
	t.Helper()
	out := filepath.Join(t.TempDir(), "baked.tar")
	args := append([]string{"bake", "--base", base, "--output", out, "--entrypoint", entrypoints["amd64"]}, extra...)
	if len(extra) == 0 {
		args = append(args, payloadFiles(t, nil)...)
	}
	code, _, stderr := cli(t, env, args...)
	require.Equal(t, 0, code, stderr)
	img, err := tarball.ImageFromPath(out, nil)
	require.NoError(t, err)
	return img
}

func TestTarballAndLayoutRoundTrips(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	bakedTar := filepath.Join(t.TempDir(), "baked.tar")
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", bakedTar, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = cli(t, nil, "verify", bakedTar)
	assert.Equal(t, 0, code, stderr)

	dir := filepath.Join(t.TempDir(), "layout")
	code, _, stderr = cli(t, nil, append([]string{"bake", "--base", bakedTar, "--layout", dir, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	code, _, stderr = cli(t, nil, "verify", dir)
	assert.Equal(t, 0, code, stderr)
}

func TestReproducibleDigests(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	payloads := payloadFiles(t, nil)
	digest := func(epoch string) v1.Hash {
		img := bakeTarball(t, base, map[string]string{"SOURCE_DATE_EPOCH": epoch}, payloads...)
		d, err := img.Digest()
		require.NoError(t, err)
		return d
	}
	a, b := digest("1700000000"), digest("1700000000")
	assert.Equal(t, a, b, "same inputs, same digest")
	assert.NotEqual(t, a, digest("1700000001"), "the epoch is in the image")
	code, _, _ := cli(t, map[string]string{"SOURCE_DATE_EPOCH": "yesterday"}, append([]string{"bake", "--base", base, "--output", filepath.Join(t.TempDir(), "x.tar")}, payloads...)...)
	assert.Equal(t, 64, code)
}

func TestRebakeReplacesPayloadsAndKeepsTheScript(t *testing.T) {
	first := bakeTarball(t, writeTarball(t, flinkBase(t, "amd64")), nil)
	// Re-bake with release 0.2.0 under other file names.
	dir := t.TempDir()
	var args []string
	for _, p := range testkit.StreamFusion("2.2", "0.2.0") {
		f := filepath.Join(dir, "v2-"+p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		args = append(args, "--payload", f)
	}
	second := bakeTarball(t, writeTarball(t, first), nil, args...)
	res, err := image.Verify(context.Background(), second)
	require.NoError(t, err)
	require.True(t, res.Decision.Admitted(), "%v", res.Decision.Findings)
	assert.Len(t, res.Decision.Payloads, 4, "the 0.1.0 payloads are whited out")
	for _, id := range res.Decision.Payloads {
		assert.Equal(t, "0.2.0", id.Version)
	}
	fsys, err := imagekit.Files(second)
	require.NoError(t, err)
	assert.Equal(t, imagekit.FlinkDouble, string(fsys[strings.TrimPrefix(image.OriginalPath, "/")].Data), "the original script survives a re-bake")
}

func TestBakeRefusesWhatWouldNotStart(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	out := filepath.Join(t.TempDir(), "x.tar")
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", out, "--entrypoint", entrypoints["amd64"]},
		payloadFiles(t, func(p *testkit.Payload) { p.Line = "1.18" })...)...)
	assert.Equal(t, 78, code)
	assert.Contains(t, stderr, "[payload-line]")
	assert.NoFileExists(t, out, "nothing written")

	code, _, stderr = cli(t, nil, append([]string{"bake", "--base", base, "--output", out, "--entrypoint", entrypoints["arm64"]}, payloadFiles(t, nil)...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "the entrypoint is built for EM_AARCH64, the image is amd64")
	assert.NoFileExists(t, out, "nothing written")
}

func TestIndexWithAmd64AndArm64(t *testing.T) {
	idx := mutate.AppendManifests(empty.Index,
		mutate.IndexAddendum{Add: flinkBase(t, "amd64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: flinkBase(t, "arm64"), Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}},
	)
	baseDir := filepath.Join(t.TempDir(), "base")
	p, err := layout.Write(baseDir, empty.Index)
	require.NoError(t, err)
	require.NoError(t, p.AppendIndex(idx))

	// The default: entrypoint-linux-ARCH beside the command; here given as a directory copy.
	binDir := t.TempDir()
	for arch, src := range entrypoints {
		data, err := os.ReadFile(src)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(binDir, "entrypoint-linux-"+arch), data, 0o755))
	}
	eps, err := loadEntrypointsFrom(binDir)
	require.NoError(t, err)
	src, err := source.Open(context.Background(), baseDir)
	require.NoError(t, err)
	var files []image.File
	for _, pl := range testkit.StreamFusion("2.2", "0.1.0") {
		files = append(files, image.File{Name: pl.Name, Data: pl.Payload.Bytes()})
	}
	_, _, err = image.BakeAll(context.Background(), src, nil, eps, image.BakeOptions{Payloads: files})
	require.Error(t, err, "the arm64 image cannot run x86_64-only payloads")
	assert.Contains(t, err.Error(), "linux/arm64")
	assert.Contains(t, err.Error(), "linux-x86_64")
	assert.Contains(t, err.Error(), "linux-aarch64")

	baked, out, err := image.BakeAll(context.Background(), src, &v1.Platform{OS: "linux", Architecture: "amd64"}, eps, image.BakeOptions{Payloads: files})
	require.NoError(t, err)
	require.Len(t, baked, 1)
	m, err := out.IndexManifest()
	require.NoError(t, err)
	require.Len(t, m.Manifests, 1)
	assert.Equal(t, "amd64", m.Manifests[0].Platform.Architecture)

	// verify checks every platform of an index, or the one asked for.
	code, stdout, _ := cli(t, nil, "verify", baseDir)
	assert.Equal(t, 78, code)
	assert.Contains(t, stdout, "linux/amd64")
	assert.Contains(t, stdout, "linux/arm64")
	code, stdout, _ = cli(t, nil, "verify", "--platform", "linux/arm64", baseDir)
	assert.Equal(t, 78, code)
	assert.NotContains(t, stdout, "linux/amd64")
}

func TestUsage(t *testing.T) {
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"bogus"}, "unknown command"},
		{[]string{"verify"}, "takes one IMAGE, got 0"},
		{[]string{"bake"}, "exactly one of --output, --tag, --layout, --load"},
		{[]string{"bake", "--output", "a"}, "needs --base IMAGE or --flink-line"},
		{[]string{"bake", "--base", "x"}, "exactly one of"},
		{[]string{"bake", "--base", "x", "--output", "a", "--tag", "b"}, "(got 2)"},
		{[]string{"bake", "--flink-line", "1.19", "--output", "a"}, `--flink-line "1.19": want 2.2 or 1.18`},
		{[]string{"verify", "--platform", "amd64", "x"}, "want OS/ARCH"},
		{[]string{"verify", "--bogus", "x"}, "unknown flag: --bogus"},
		{[]string{"inspect"}, "needs at least one PAYLOAD"},
		{[]string{"rules", "extra"}, "takes no arguments"},
		{[]string{"check", "--flink-home"}, "flag needs an argument"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := cli(t, nil, tc.args...)
			assert.Equal(t, 64, code)
			assert.Contains(t, stderr, tc.says)
		})
	}
}

func TestHelpExitsZeroOnEveryCommand(t *testing.T) {
	for _, args := range [][]string{{"--help"}, {"help"}, {}, {"verify", "--help"}, {"bake", "--help"}, {"check", "--help"},
		{"inspect", "--help"}, {"install", "--help"}, {"rules", "--help"}, {"version", "--help"}, {"completion", "bash"}, {"completion", "zsh", "--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			code, out, stderr := cli(t, nil, args...)
			assert.Equal(t, 0, code, stderr)
			assert.NotEmpty(t, out)
		})
	}
}

func TestMissingLocalPathsAreNoSuchFile(t *testing.T) {
	dir := t.TempDir()
	base := writeTarball(t, flinkBase(t, "amd64"))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"verify", filepath.Join(dir, "nothing-here.tar")}, "nothing-here.tar: no such file"},
		{[]string{"verify", "typo.tar"}, "typo.tar: no such file"},
		{[]string{"verify", "./layout-typo"}, "./layout-typo: no such file"},
		{[]string{"bake", "--base", "missing.tar", "--output", filepath.Join(dir, "o.tar"), "--entrypoint", entrypoints["amd64"]}, "missing.tar: no such file"},
		{[]string{"bake", "--base", base, "--output", filepath.Join(dir, "o.tar"), "--entrypoint", entrypoints["amd64"], "--payload", "./streamfusion-kafka-0.1.0.jar"}, "--payload ./streamfusion-kafka-0.1.0.jar: no such file"},
		{[]string{"bake", "--base", base, "--output", filepath.Join(dir, "o.tar"), "--entrypoint", entrypoints["amd64"], "--lib", "flink-connector-kafka.jar"}, "--lib flink-connector-kafka.jar: no such file"},
		{[]string{"inspect", filepath.Join(dir, "gone.jar")}, "gone.jar: no such file"},
	} {
		t.Run(strings.Join(tc.args, " "), func(t *testing.T) {
			code, _, stderr := cli(t, nil, tc.args...)
			assert.Equal(t, 1, code, stderr)
			assert.Contains(t, stderr, tc.says)
			assert.NotContains(t, stderr, "fetch", "never a registry lookup")
		})
	}
}

// TestBakeFailsFast: flags, payloads and the output folder are checked
// before the base is read: the registry serving the base sees no request.
func TestBakeFailsFast(t *testing.T) {
	var requests atomic.Int64
	reg := registry.New()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		reg.ServeHTTP(w, r)
	}))
	defer srv.Close()
	base := strings.TrimPrefix(srv.URL, "http://") + "/flink:2.2.1"
	dir := t.TempDir()
	mixed := payloadFiles(t, nil)
	other := payloadFiles(t, func(p *testkit.Payload) { p.Line = "1.18" })[:2] // the loader of line 1.18
	renamed := filepath.Join(filepath.Dir(other[1]), "loader-of-the-other-line.jar")
	require.NoError(t, os.Rename(other[1], renamed))
	mixed = append(mixed, other[0], renamed)
	notJAR := filepath.Join(dir, "notes.jar")
	require.NoError(t, os.WriteFile(notJAR, []byte("not a zip"), 0o644))
	for name, tc := range map[string]struct {
		args []string
		want string
		code int // 64: the command line cannot work; 78: the payloads are refused
	}{
		"missing output folder":    {append([]string{"--output", filepath.Join(dir, "missing", "x.tar")}, payloadFiles(t, nil)...), "missing", 64},
		"missing layout parent":    {append([]string{"--layout", filepath.Join(dir, "missing", "layout")}, payloadFiles(t, nil)...), "missing", 64},
		"payloads of two lines":    {append([]string{"--output", filepath.Join(dir, "x.tar")}, mixed...), "[payload-line]", 78},
		"a payload that is no JAR": {[]string{"--output", filepath.Join(dir, "x.tar"), "--payload", notJAR}, "notes.jar", 78},
	} {
		t.Run(name, func(t *testing.T) {
			code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--entrypoint", entrypoints["amd64"]}, tc.args...)...)
			assert.Equal(t, tc.code, code, stderr)
			assert.Contains(t, stderr, tc.want)
			assert.Zero(t, requests.Load(), "the base was not read")
			assert.NoFileExists(t, filepath.Join(dir, "x.tar"))
		})
	}
}
