//go:build nativeoracle

package host_test

import (
	"archive/zip"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// dlopenC loads each library named on its command line, in order, as a
// JVM's System.load does (dlopen, RTLD_NOW), and prints the first error.
const dlopenC = `#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
	for (int i = 1; i < argc; i++) {
		if (!dlopen(argv[i], RTLD_NOW | RTLD_LOCAL)) {
			printf("%d %s\n", i, dlerror());
			return 1;
		}
	}
	return 0;
}
`

// TestNativeLoaderAgrees is make test-native: the native-* rules against
// glibc's own loader on this machine (Debian bookworm, glibc 2.36, as the
// images). Each gcc-built fixture goes into a payload JAR in a lib on this
// machine's root; the project judges it with the root's libc and ld.so.conf;
// the library, taken out of the JAR by archive/zip, is dlopen()ed by a C
// program built with gcc. Where a rule says error the loader must fail,
// with the failure the rule's message names; where it admits, the load
// must succeed.
func TestNativeLoaderAgrees(t *testing.T) {
	for _, tool := range []string{"gcc"} {
		if _, err := exec.LookPath(tool); err != nil {
			if os.Getenv("CI") == "true" {
				t.Fatalf("make test-native needs %s", tool)
			}
			t.Skipf("no %s", tool)
		}
	}
	require.Equal(t, "amd64", runtime.GOARCH, "the fixtures are built for x86_64; the aarch64 one is the foreign machine")
	work := t.TempDir()
	libs, err := testkit.NativeFixtures(work)
	require.NoError(t, err)
	dl := filepath.Join(work, "dlopen")
	require.NoError(t, os.WriteFile(dl+".c", []byte(dlopenC), 0o644))
	out, err := exec.Command("gcc", "-o", dl, dl+".c", "-ldl").CombinedOutput()
	require.NoError(t, err, "%s", out)

	load := func(paths ...string) (bool, string) {
		out, err := exec.Command(dl, paths...).CombinedOutput()
		return err == nil, strings.TrimSpace(string(out))
	}

	for _, c := range []struct {
		lib      string
		rule     string // "" admitted
		loadFail string // what dlopen says; "" it loads
	}{
		{testkit.NativeGood, "", ""},
		{testkit.NativeNewGlibc, "native-symbol-version", "version `GLIBC_2.38' not found"},
		{testkit.NativeMissing, "native-needed", testkit.NativeMissingSO + ": cannot open shared object file"},
		// glibc's loader reports a library for another machine as missing.
		{testkit.NativeAArch64, "native-machine", "cannot open shared object file: No such file or directory"},
		{testkit.NativeTLS, "native-static-tls", "cannot allocate memory in static TLS block"},
		// 64 bytes fit glibc's surplus static TLS: loaded alone, it loads.
		// The rule refuses it all the same (see below).
		{testkit.NativeTLSSmall, "native-static-tls", ""},
	} {
		t.Run(c.lib, func(t *testing.T) {
			root := filepath.Join(work, "root-"+c.lib)
			p := testkit.NativePayload("ops", "2.2", "0.1.0", c.lib, libs[c.lib])
			jar := p.Bytes()
			require.NoError(t, testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: p}).Write(root))

			s := host.Settings{LibDir: root + "/" + testkit.LibDir, PluginsDir: root + "/" + testkit.FlinkHome + "/plugins",
				JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64", Native: true}
			facts, err := host.Gather(context.Background(), os.DirFS("/"), s, nil)
			require.NoError(t, err)
			require.NotNil(t, facts.Libs)
			d := admission.Decide(facts)
			var native []admission.Finding
			for _, f := range d.Findings {
				if strings.HasPrefix(f.Rule, "native-") {
					native = append(native, f)
				}
			}

			so := filepath.Join(work, "out-"+c.lib)
			require.NoError(t, os.WriteFile(so, entry(t, jar, "META-INF/native/linux-x86_64/"+c.lib), 0o755))
			ok, msg := load(so)
			t.Logf("dlopen: ok=%v %s", ok, msg)
			if c.rule == "" {
				assert.Empty(t, native)
				assert.True(t, d.Admitted(), "%v", d.Findings)
				assert.True(t, ok, "the loader refuses what the rules admit: %s", msg)
				return
			}
			require.Len(t, native, 1, "%v", native)
			assert.Equal(t, c.rule, native[0].Rule)
			assert.Equal(t, admission.Error, native[0].Severity)
			assert.False(t, d.Admitted())
			t.Logf("finding: %s", native[0].Text())
			if c.loadFail == "" {
				assert.True(t, ok, "%s", msg)
				return
			}
			assert.False(t, ok, "the loader loads what the rules refuse")
			assert.Contains(t, msg, c.loadFail)
			if c.rule != "native-needed" { // whose message names the library, not the path
				// The finding names the loader's own failure.
				assert.Contains(t, native[0].Text(), c.loadFail)
			}
		})
	}

	// Why a library that loads alone is refused: libraries of the
	// initial-exec model loaded late (as the JVM loads JNI libraries) share
	// glibc's surplus static TLS, and the next one fails once it is used
	// up. Eight of 256 bytes each, under the default tunables.
	t.Run("initial-exec libraries loaded late exhaust the surplus", func(t *testing.T) {
		var paths []string
		for i := range 8 {
			name := fmt.Sprintf("libsf_ie%d.so", i)
			src := filepath.Join(work, name+".c")
			require.NoError(t, os.WriteFile(src, fmt.Appendf(nil, "__thread char sf_ie%d[256];\nchar *sf_ie_get%d(void) { return sf_ie%d; }\n", i, i, i), 0o644))
			out, err := exec.Command("gcc", "-shared", "-fPIC", "-ftls-model=initial-exec", "-o", filepath.Join(work, name), src).CombinedOutput()
			require.NoError(t, err, "%s", out)
			paths = append(paths, filepath.Join(work, name))
		}
		ok, msg := load(paths[0])
		require.True(t, ok, "one alone loads: %s", msg)
		cmd := exec.Command(dl, paths...)
		cmd.Env = append(os.Environ(), "GLIBC_TUNABLES=")
		o, err := cmd.CombinedOutput()
		require.Error(t, err, "eight load: %s", o)
		assert.Contains(t, string(o), "cannot allocate memory in static TLS block")
		t.Logf("eight 256-byte initial-exec libraries: %s", strings.TrimSpace(string(o)))
	})
}

// entry returns a JAR entry's bytes, read with archive/zip: not the
// project's reader.
func entry(t *testing.T, jar []byte, name string) []byte {
	t.Helper()
	zr, err := zip.NewReader(bytes.NewReader(jar), int64(len(jar)))
	require.NoError(t, err)
	f, err := zr.Open(name)
	require.NoError(t, err)
	defer f.Close()
	data, err := io.ReadAll(f)
	require.NoError(t, err)
	return data
}
