package admission_test

import (
	"context"
	"debug/elf"
	"os"
	"strings"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// nativeLibs are the gcc-built fixtures (testkit.NativeFixtures), built
// once. gcc is what `go test -race` needs anyway; without it the cases
// that use them fail.
var nativeLibs = sync.OnceValue(func() map[string][]byte {
	dir, err := os.MkdirTemp("", "sf-native-")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	libs, err := testkit.NativeFixtures(dir)
	if err != nil {
		panic("the native library fixtures need gcc: " + err.Error())
	}
	return libs
})

const multiarchLibc = "lib/x86_64-linux-gnu/libc.so.6"

// nativeRoot is the good 2.2.1 host with a glibc 2.36 libc.so.6 (a stub
// that defines its versions) and streamfusion-ops carrying lib.
func nativeRoot(lib string, so []byte) fstest.MapFS {
	m := testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar",
		Payload: testkit.NativePayload("ops", "2.2", "0.1.0", lib, so)}).MapFS()
	return put(m, multiarchLibc, nativeLibs()[testkit.StubLibc236])
}

func nativeCase(name, rule, lib string, so func() []byte) ruleCase {
	return ruleCase{name: name, rule: rule,
		root:  func() fstest.MapFS { return nativeRoot(lib, so()) },
		set:   func(s *host.Settings) { s.Deep = true },
		admit: func() fstest.MapFS { return nativeRoot(testkit.NativeGood, nativeLibs()[testkit.NativeGood]) }}
}

func fixture(name string) func() []byte { return func() []byte { return nativeLibs()[name] } }

func init() {
	cases = append(cases,
		nativeCase("a library for aarch64 in the x86_64 directory", "native-machine", testkit.NativeAArch64, fixture(testkit.NativeAArch64)),
		nativeCase("an initial-exec TLS library", "native-static-tls", testkit.NativeTLS, fixture(testkit.NativeTLS)),
		nativeCase("a library needing GLIBC_2.38", "native-symbol-version", testkit.NativeNewGlibc, fixture(testkit.NativeNewGlibc)),
		nativeCase("a library needing a library nobody has", "native-needed", testkit.NativeMissing, fixture(testkit.NativeMissing)),
		nativeCase("a library that is no ELF object", "native-unreadable", "libsf_junk.so", func() []byte { return []byte("MZ not ELF") }),
	)
}

func nativeFindings(t *testing.T, root fstest.MapFS, s host.Settings) []admission.Finding {
	t.Helper()
	facts, err := host.Gather(context.Background(), root, s, nil)
	require.NoError(t, err)
	var out []admission.Finding
	for _, f := range admission.Decide(facts).Findings {
		if strings.HasPrefix(f.Rule, "native-") {
			out = append(out, f)
		}
	}
	return out
}

func TestNativeMessagesNameEntryVersionsAndFix(t *testing.T) {
	t.Parallel()
	s := defaults
	s.Native = true
	fs := nativeFindings(t, nativeRoot(testkit.NativeNewGlibc, nativeLibs()[testkit.NativeNewGlibc]), s)
	require.Len(t, fs, 1, "%v", fs)
	f := fs[0]
	assert.Equal(t, "native-symbol-version", f.Rule)
	assert.Equal(t, lib+"/streamfusion-ops-0.1.0.jar!/META-INF/native/linux-x86_64/"+testkit.NativeNewGlibc, f.Path)
	assert.Equal(t, "needs GLIBC_2.38 from libc.so.6", f.Found)
	assert.Equal(t, "libc.so.6 at /"+multiarchLibc+" defines up to GLIBC_2.36", f.Required)
	assert.Contains(t, f.Fix, "version `GLIBC_2.38' not found")

	fs = nativeFindings(t, nativeRoot(testkit.NativeTLS, nativeLibs()[testkit.NativeTLS]), s)
	require.Len(t, fs, 1, "%v", fs)
	assert.Equal(t, "DF_STATIC_TLS in DT_FLAGS, a PT_TLS segment of 4096 bytes, initial-exec relocations (R_X86_64_TPOFF64)", fs[0].Found)

	fs = nativeFindings(t, nativeRoot(testkit.NativeAArch64, nativeLibs()[testkit.NativeAArch64]), s)
	require.Len(t, fs, 1, "%v", fs)
	assert.Equal(t, "EM_AARCH64 (ELFCLASS64, ELFDATA2LSB)", fs[0].Found)
	assert.Equal(t, "EM_X86_64 (ELFCLASS64, ELFDATA2LSB) for linux-x86_64", fs[0].Required)
}

// What the native rules do not judge: libraries of a payload for another
// platform (host-platform's), a library under another platform's
// directory, a library needed from the same payload, the start without
// the ELF read.
func TestNativeRulesScope(t *testing.T) {
	t.Parallel()
	s := defaults
	s.Native = true
	libs := nativeLibs()

	arm := testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeAArch64, libs[testkit.NativeAArch64])
	arm.Platforms = "linux-aarch64"
	m := put(testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: arm}).MapFS(), multiarchLibc, libs[testkit.StubLibc236])
	assert.Empty(t, nativeFindings(t, m, s), "a payload without the host's platform is host-platform's to report")

	both := testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeGood, libs[testkit.NativeGood])
	both.Platforms = "linux-x86_64 linux-aarch64"
	both.Entries = append(both.Entries, testkit.Entry{Name: "META-INF/native/linux-aarch64/" + testkit.NativeGood, Data: libs[testkit.NativeAArch64]})
	m = put(testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: both}).MapFS(), multiarchLibc, libs[testkit.StubLibc236])
	assert.Empty(t, nativeFindings(t, m, s), "the aarch64 directory's library is for the other platform")

	sib := testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeMissing, libs[testkit.NativeMissing])
	sib.Entries = append(sib.Entries, testkit.Entry{Name: "META-INF/native/linux-x86_64/" + testkit.NativeMissingSO, Data: testkit.ELFHeader(elf.EM_X86_64, nil)})
	m = put(testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: sib}).MapFS(), multiarchLibc, libs[testkit.StubLibc236])
	assert.Empty(t, nativeFindings(t, m, s), "a library the payload carries itself")

	assert.Empty(t, nativeFindings(t, nativeRoot(testkit.NativeTLS, libs[testkit.NativeTLS]), defaults), "not read without Native or Deep")

	// libc.so.6 found through /etc/ld.so.conf's include, not the system path.
	m = testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-ops-0.1.0.jar", Payload: testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeGood, libs[testkit.NativeGood])}).MapFS()
	put(m, "etc/ld.so.conf", []byte("include /etc/ld.so.conf.d/*.conf\n"))
	put(m, "etc/ld.so.conf.d/x.conf", []byte("# local\n/opt/glibc/lib\n"))
	put(m, "opt/glibc/lib/libc.so.6", libs[testkit.StubLibc236])
	assert.Empty(t, nativeFindings(t, m, s))
	delete(m, "etc/ld.so.conf.d/x.conf")
	got := nativeFindings(t, m, s)
	require.Len(t, got, 1)
	assert.Equal(t, "native-needed", got[0].Rule)
	assert.Contains(t, got[0].Found, "DT_NEEDED libc.so.6")
}
