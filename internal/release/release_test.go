package release

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain: run as one of a test release's binaries (copies of this test
// binary, named COMMAND-OS-ARCH), answer `version` as the real ones do,
// with the test release's version; Check asks the binaries of this
// machine's platform.
func TestMain(m *testing.M) {
	base := filepath.Base(os.Args[0])
	switch {
	case strings.HasPrefix(base, "streamfusion-") && len(os.Args) == 2 && os.Args[1] == "version":
		fmt.Println("streamfusion " + testVersion + " (commit unknown, go)")
		os.Exit(0)
	case strings.HasPrefix(base, "entrypoint-") && len(os.Args) == 3 && os.Args[2] == "version":
		fmt.Println("streamfusion-entrypoint " + testVersion + " (STREAMFUSION/ENTRYPOINT/CONTRACT=1)")
		os.Exit(0)
	case strings.HasPrefix(base, "streamfusion-") || strings.HasPrefix(base, "entrypoint-"):
		fmt.Fprintln(os.Stderr, "a test release's binary answers version only")
		os.Exit(2)
	}
	os.Exit(m.Run())
}

const testVersion = "1.2.3-rc.1"

// copyTestBinary stands in for the Go toolchain's cross-builds, which take
// minutes cold: every binary is this test binary (a real Go binary with a
// module graph, but no VCS stamp, which Check names). make test-release
// builds the real ones and checks them the same way.
func copyTestBinary(_ context.Context, _ Options, _, _ string, cmds []string, dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	data, err := os.ReadFile(self)
	if err != nil {
		return err
	}
	for _, c := range cmds {
		// No fork while the file is open for writing: the release runs
		// these copies, and a child forked meanwhile would hold the
		// descriptor and make that exec fail with ETXTBSY
		// (golang/go#22315).
		syscall.ForkLock.RLock()
		err := os.WriteFile(filepath.Join(dir, c), data, 0o755)
		syscall.ForkLock.RUnlock()
		if err != nil {
			return err
		}
	}
	return nil
}

func testOptions(t *testing.T, out string) Options {
	t.Helper()
	ca := filepath.Join(t.TempDir(), "ca.crt")
	require.NoError(t, os.WriteFile(ca, []byte("-----BEGIN CERTIFICATE-----\nnot a real one\n-----END CERTIFICATE-----\n"), 0o644))
	return Options{Version: testVersion, Commit: "0123456789abcdef0123456789abcdef01234567", Time: time.Unix(1800000000, 0).UTC(),
		Source: "../..", Out: out, Repository: DefaultRepository, CACerts: ca, Build: copyTestBinary}
}

func release(t *testing.T, o Options) *Manifest {
	t.Helper()
	m, err := Run(context.Background(), o)
	require.NoError(t, err)
	return m
}

// tree is every file under dir with its bytes.
func tree(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		files[rel], err = os.ReadFile(p)
		return err
	}))
	return files
}

func TestTwoRunsGiveTheSameBytes(t *testing.T) {
	a, b, c := t.TempDir(), t.TempDir(), t.TempDir()
	ma := release(t, testOptions(t, a))
	release(t, testOptions(t, b))
	ta, tb := tree(t, a), tree(t, b)
	require.Equal(t, len(ta), len(tb))
	for name, data := range ta {
		assert.True(t, bytes.Equal(data, tb[name]), "%s differs between two runs", name)
	}
	// The time is an input: another time, another image.
	o := testOptions(t, c)
	o.Time = o.Time.Add(time.Second)
	mc := release(t, o)
	assert.NotEqual(t, ma.Image.Index, mc.Image.Index)
	// Every file is listed, but the layout's blobs (listed by digest).
	var listed []string
	for _, art := range ma.Artifacts {
		listed = append(listed, art.Path)
	}
	assert.ElementsMatch(t, []string{
		"bin/entrypoint-linux-amd64", "bin/entrypoint-linux-arm64", "bin/streamfusion-linux-amd64", "bin/streamfusion-linux-arm64", "bin/streamfusion-darwin-arm64",
		"sbom/entrypoint-linux-amd64.cdx.json", "sbom/entrypoint-linux-arm64.cdx.json", "sbom/streamfusion-linux-amd64.cdx.json",
		"sbom/streamfusion-linux-arm64.cdx.json", "sbom/streamfusion-darwin-arm64.cdx.json",
		"sbom/image-linux-amd64.cdx.json", "sbom/image-linux-arm64.cdx.json",
		"image/streamfusion-1.2.3-rc.1-linux-amd64.tar", "image/streamfusion-1.2.3-rc.1-linux-arm64.tar",
		"chart/streamfusion-webhook-1.2.3-rc.1.tgz",
	}, listed)
}

// unstamped are Check's findings for binaries without a VCS stamp (this
// test binary's copies).
func unstamped(bad []string) (rest []string) {
	for _, b := range bad {
		if !strings.Contains(b, `built from commit ""`) {
			rest = append(rest, b)
		}
	}
	return rest
}

func TestCheckNamesWhatDisagrees(t *testing.T) {
	ctx := context.Background()
	t.Run("one release", func(t *testing.T) {
		dir := t.TempDir()
		release(t, testOptions(t, dir))
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		assert.Len(t, bad, len(Binaries), "the binaries' missing VCS stamps: %q", bad)
		assert.Empty(t, unstamped(bad))
	})
	t.Run("a file changed after the manifest was written", func(t *testing.T) {
		dir := t.TempDir()
		release(t, testOptions(t, dir))
		f, err := os.OpenFile(filepath.Join(dir, "sbom", "image-linux-amd64.cdx.json"), os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(" ")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		assert.Len(t, unstamped(bad), 2, "%q", bad)
		assert.Contains(t, strings.Join(bad, "\n"), "sbom/image-linux-amd64.cdx.json: sha256")
		assert.Contains(t, strings.Join(bad, "\n"), ", sbom/image-linux-amd64.cdx.json is sha256:")
	})
	t.Run("the manifest of another version", func(t *testing.T) {
		dir := t.TempDir()
		m := release(t, testOptions(t, dir))
		m.Version = "9.9.9"
		require.NoError(t, m.write(dir))
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		all := strings.Join(bad, "\n")
		assert.Contains(t, all, `version "1.2.3-rc.1" and appVersion "1.2.3-rc.1", the release is 9.9.9`)
		assert.Contains(t, all, `image linux/amd64: labels say version "1.2.3-rc.1"`)
		assert.Contains(t, all, `image linux/arm64: labels say version "1.2.3-rc.1"`)
		assert.Contains(t, all, "no image index")
		assert.Contains(t, all, `bin/streamfusion-linux-amd64 says "streamfusion 1.2.3-rc.1 (commit unknown, go)", the release is 9.9.9`)
		assert.Contains(t, all, `bin/entrypoint-linux-amd64 says "streamfusion-entrypoint 1.2.3-rc.1`)
	})
	t.Run("a tarball of the other platform", func(t *testing.T) {
		dir := t.TempDir()
		m := release(t, testOptions(t, dir))
		img := filepath.Join(dir, "image")
		data, err := os.ReadFile(filepath.Join(img, "streamfusion-1.2.3-rc.1-linux-arm64.tar"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(img, "streamfusion-1.2.3-rc.1-linux-amd64.tar"), data, 0o644))
		rewriteSums(t, dir, m)
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		bad = unstamped(bad)
		require.Len(t, bad, 1, "%q", bad)
		assert.Contains(t, bad[0], "streamfusion-1.2.3-rc.1-linux-amd64.tar: holds image")
	})
	t.Run("a layout blob changed", func(t *testing.T) {
		dir := t.TempDir()
		m := release(t, testOptions(t, dir))
		h := strings.TrimPrefix(m.Image.Platforms[0].SBOM, "sha256:")
		blob := filepath.Join(dir, "image", "oci", "blobs", "sha256", h)
		data, err := os.ReadFile(blob)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(blob, append(data, ' '), 0o644))
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		assert.Contains(t, strings.Join(bad, "\n"), "layout blob sha256:"+h+" holds")
	})
	t.Run("an image whose binary is another's", func(t *testing.T) {
		dir := t.TempDir()
		m := release(t, testOptions(t, dir))
		bin := filepath.Join(dir, "bin", "streamfusion-linux-arm64")
		data, err := os.ReadFile(bin)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(bin, append(data, 0), 0o755))
		rewriteSums(t, dir, m)
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		all := strings.Join(bad, "\n")
		assert.Contains(t, all, "image linux/arm64: /streamfusion is sha256:")
		assert.Contains(t, all, "sbom/streamfusion-linux-arm64.cdx.json does not describe bin/streamfusion-linux-arm64")
		assert.Contains(t, all, "sbom/image-linux-arm64.cdx.json does not describe bin/streamfusion-linux-arm64")
	})
	t.Run("a release with a file left out", func(t *testing.T) {
		dir := t.TempDir()
		m := release(t, testOptions(t, dir))
		m.Artifacts = m.Artifacts[1:]
		require.NoError(t, m.write(dir))
		sums, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(dir, "SHA256SUMS"), append(sums, []byte("00  bin/extra\n")...), 0o644))
		bad, err := Check(ctx, dir)
		require.NoError(t, err)
		all := strings.Join(bad, "\n")
		assert.Contains(t, all, "bin/entrypoint-linux-amd64: missing from the manifest")
		assert.Contains(t, all, `SHA256SUMS: "00  bin/extra" is not the manifest's`)
	})
}

// rewriteSums lists every file of m again with its digest as it is now.
func rewriteSums(t *testing.T, dir string, m *Manifest) {
	t.Helper()
	arts := m.Artifacts
	m.Artifacts = nil
	for _, a := range arts {
		require.NoError(t, m.add(dir, a.Path, a.Kind, a.Platform))
	}
	require.NoError(t, m.write(dir))
}

func TestRunRefuses(t *testing.T) {
	for _, tc := range []struct {
		name string
		edit func(*Options)
		want string
	}{
		{"no version", func(o *Options) { o.Version = "" }, "no version"},
		{"a commit hash for a version", func(o *Options) { o.Version = "144f714" }, "not SemVer 2"},
		{"a leading v", func(o *Options) { o.Version = "v1.2.3" }, "not SemVer 2"},
		{"a folder with files", func(o *Options) { require.NoError(t, os.WriteFile(filepath.Join(o.Out, "old"), nil, 0o644)) }, "not empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := testOptions(t, t.TempDir())
			tc.edit(&o)
			_, err := Run(context.Background(), o)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

// goSum is go.sum's h1 lines: "path version" -> "h1:...".
func goSum(t *testing.T, p string) map[string]string {
	t.Helper()
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	sums := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 3 && !strings.HasSuffix(fields[1], "/go.mod") {
			sums[fields[0]+" "+fields[1]] = fields[2]
		}
	}
	require.NoError(t, sc.Err())
	return sums
}

// sbomModules are the Go modules an SBOM lists: "path version" -> gomod:sum.
func sbomModules(t *testing.T, p string) map[string]string {
	t.Helper()
	data, err := os.ReadFile(p)
	require.NoError(t, err)
	var bom cdx.BOM
	require.NoError(t, cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom))
	require.NotNil(t, bom.Components)
	mods := map[string]string{}
	for _, c := range *bom.Components {
		if c.Type != cdx.ComponentTypeLibrary || c.Name == "std" {
			continue
		}
		require.NotNil(t, c.Properties, c.Name)
		require.Equal(t, "gomod:sum", (*c.Properties)[0].Name)
		mods[c.Name+" "+c.Version] = (*c.Properties)[0].Value
	}
	return mods
}

// TestSBOMsAreGoSum: every module a binary's SBOM lists has the version
// and the checksum go.sum has, and the SBOM lists what `go version -m` (the
// Go toolchain reading the binary) lists. The binary is cmd/release, built
// here (a test binary carries no module graph); make test-release runs
// the same comparison on the release's own binaries.
func TestSBOMsAreGoSum(t *testing.T) {
	bin := filepath.Join(t.TempDir(), "release-tool")
	out, err := osexec.Command("go", "build", "-o", bin, "../../cmd/release").CombinedOutput()
	require.NoError(t, err, string(out))
	compareSBOMWithGoSum(t, bin, "../../go.sum", func(o Options, b Binary) ([]byte, error) {
		bom, _, err := binarySBOM(o, b, bin)
		return bom, err
	})
}

// compareSBOMWithGoSum asserts that the SBOM sbom makes of bin lists the
// modules `go version -m bin` lists, with go.sum's versions and checksums.
func compareSBOMWithGoSum(t *testing.T, bin, gosum string, sbom func(Options, Binary) ([]byte, error)) {
	t.Helper()
	sums := goSum(t, gosum)
	out, err := osexec.Command("go", "version", "-m", bin).Output()
	require.NoError(t, err)
	toolchain := map[string]string{}
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) == 4 && f[0] == "dep" {
			toolchain[f[1]+" "+f[2]] = f[3]
		}
	}
	require.NotEmpty(t, toolchain)
	data, err := sbom(testOptions(t, t.TempDir()), Binary{"release", "linux", "amd64"})
	require.NoError(t, err)
	p := filepath.Join(t.TempDir(), "sbom.json")
	require.NoError(t, os.WriteFile(p, data, 0o644))
	mods := sbomModules(t, p)
	assert.Equal(t, toolchain, mods)
	for mod, sum := range mods {
		assert.Equal(t, sums[mod], sum, "%s is not go.sum's", mod)
	}
}

func TestImageSBOMListsTheImagesFiles(t *testing.T) {
	dir := t.TempDir()
	release(t, testOptions(t, dir))
	data, err := os.ReadFile(filepath.Join(dir, "sbom", "image-linux-amd64.cdx.json"))
	require.NoError(t, err)
	var bom struct {
		Metadata struct {
			Component struct{ Type, Name, Version string }
		}
		Components []struct{ Type, Name string }
	}
	require.NoError(t, json.Unmarshal(data, &bom))
	assert.Equal(t, "container", bom.Metadata.Component.Type)
	assert.Equal(t, "1.2.3-rc.1", bom.Metadata.Component.Version)
	var files []string
	for _, c := range bom.Components {
		if c.Type == "file" || c.Type == "application" {
			files = append(files, c.Type+" "+c.Name)
		}
	}
	assert.Equal(t, []string{"application streamfusion", "file /etc/group", "file /etc/passwd", "file /etc/ssl/certs/ca-certificates.crt"}, files)
}

// TestPackagedChartIsWhatHelmReads: the real helm reads the packaged
// chart's version and appVersion, lints it, and renders the image by the
// index's digest.
func TestPackagedChartIsWhatHelmReads(t *testing.T) {
	helm, err := osexec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm is not on PATH (.ci/run installs it)")
		}
		t.Skip("helm is not on PATH")
	}
	dir := t.TempDir()
	m := release(t, testOptions(t, dir))
	chart := filepath.Join(dir, filepath.FromSlash(m.Chart))
	out, err := osexec.Command(helm, "show", "chart", chart).CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), "\nversion: 1.2.3-rc.1\n")
	assert.Contains(t, string(out), "\nappVersion: 1.2.3-rc.1\n")
	out, err = osexec.Command(helm, "lint", "--strict", chart).CombinedOutput()
	require.NoError(t, err, string(out))
	out, err = osexec.Command(helm, "template", "sf", chart, "--set", "audit.enabled=true").CombinedOutput()
	require.NoError(t, err, string(out))
	want := `image: "` + DefaultRepository + "@" + m.Image.Index + `"`
	assert.Equal(t, 2, strings.Count(string(out), want), "the Deployment and the audit CronJob pull the index by digest")
	// The rest of the chart is the source's, byte for byte.
	src := tree(t, "../../"+Chart)
	files, err := chartFiles(chart)
	require.NoError(t, err)
	assert.Len(t, files, 2)
	for name := range src {
		if name != "Chart.yaml" && name != "values.yaml" {
			assertInArchive(t, chart, ChartName+"/"+filepath.ToSlash(name), src[name])
		}
	}
}

func assertInArchive(t *testing.T, archive, name string, want []byte) {
	t.Helper()
	out, err := osexec.Command("tar", "-xzOf", archive, name).Output()
	require.NoError(t, err, name)
	assert.Equal(t, string(want), string(out), name)
}
