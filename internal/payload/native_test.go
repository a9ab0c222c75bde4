package payload_test

import (
	"bytes"
	"debug/elf"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

var updateELF = flag.Bool("update-elf", false, "rewrite testdata/elf from the gcc-built fixtures")

// nativeFixtures builds the gcc fixtures; without gcc the test fails in CI
// and is skipped elsewhere.
func nativeFixtures(t testing.TB) map[string][]byte {
	t.Helper()
	if _, err := exec.LookPath("gcc"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("gcc is required for the native library fixtures")
		}
		t.Skip("no gcc")
	}
	libs, err := testkit.NativeFixtures(t.TempDir())
	require.NoError(t, err)
	return libs
}

func TestParseELFOfRealLibraries(t *testing.T) {
	libs := nativeFixtures(t)
	if *updateELF {
		for name, data := range libs {
			if name == testkit.StubLibc236 {
				name = "libc236-stub.so" // a seed with version definitions
			}
			require.NoError(t, os.WriteFile(filepath.Join("testdata", "elf", name), data, 0o644))
		}
	}
	parse := func(name string) payload.Native {
		n, err := payload.ParseELF(libs[name])
		require.NoError(t, err, name)
		return n
	}

	good := parse(testkit.NativeGood)
	require.Equal(t, elf.EM_X86_64, good.Machine)
	require.Equal(t, elf.ELFCLASS64, good.Class)
	require.Equal(t, elf.ELFDATA2LSB, good.Data)
	require.Equal(t, elf.ET_DYN, good.Type)
	require.False(t, good.StaticTLS())
	require.Contains(t, good.Needed, "libc.so.6")
	require.Contains(t, good.Versions, payload.VersionNeed{File: "libc.so.6", Version: "GLIBC_2.2.5"})

	tls := parse(testkit.NativeTLS)
	require.True(t, tls.StaticTLSFlag, "gcc's linker marks an initial-exec library DF_STATIC_TLS")
	require.Equal(t, uint64(4096), tls.TLSSize)
	require.Equal(t, "R_X86_64_TPOFF64", tls.TLSReloc)
	require.True(t, tls.StaticTLS())

	newer := parse(testkit.NativeNewGlibc)
	require.Contains(t, newer.Versions, payload.VersionNeed{File: "libc.so.6", Version: "GLIBC_2.38"})

	missing := parse(testkit.NativeMissing)
	require.Contains(t, missing.Needed, testkit.NativeMissingSO)

	arm := parse(testkit.NativeAArch64)
	require.Equal(t, elf.EM_AARCH64, arm.Machine)

	hdr, err := payload.ParseELF(testkit.ELFHeader(elf.EM_AARCH64, []byte("body")))
	require.NoError(t, err, "a bare header written per the spec is an ELF object")
	require.Equal(t, elf.EM_AARCH64, hdr.Machine)
	require.Empty(t, hdr.Needed)
}

func TestJARNativeFacts(t *testing.T) {
	libs := nativeFixtures(t)
	p := testkit.NativePayload("ops", "2.2", "0.1.0", testkit.NativeTLS, libs[testkit.NativeTLS])
	p.Entries = append(p.Entries,
		testkit.Entry{Name: "META-INF/native/linux-aarch64/libsf_other.so", Data: libs[testkit.NativeAArch64]},
		testkit.Entry{Name: "META-INF/native/darwin/libsf_mac.dylib", Data: []byte("not ELF")},
		testkit.Entry{Name: "META-INF/native/libsf_plain.so", Data: libs[testkit.NativeGood], Store: true},
		testkit.Entry{Name: "META-INF/native/linux-x86_64/libsf_junk.so", Data: []byte("not an ELF object")})
	data := p.Bytes()
	read := func(opt payload.Options) *payload.JAR {
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/lib/ops.jar", opt)
		require.NoError(t, j.Err)
		return j
	}
	require.Nil(t, read(payload.Options{}).ELF, "not asked for")
	require.Nil(t, read(payload.Options{Native: "linux-aarch64"}).ELF, "the payload is not for linux-aarch64")

	j := read(payload.Options{Native: "linux-x86_64"})
	var names []string
	for _, n := range j.ELF {
		names = append(names, n.Entry)
	}
	require.Equal(t, []string{"META-INF/native/linux-x86_64/" + testkit.NativeTLS, "META-INF/native/libsf_plain.so", "META-INF/native/linux-x86_64/libsf_junk.so"}, names,
		"the other platform's library and the .dylib are not read")
	require.True(t, j.ELF[0].StaticTLS())
	require.True(t, j.ELF[1].Read())
	require.False(t, j.ELF[1].StaticTLS())
	require.Contains(t, j.ELF[2].Err, "not an ELF object the loader maps")

	// A loader's nested core is judged by its manifest only.
	loader := testkit.Loader("2.2", "0.1.0")
	core := *loader.Embedded
	core.Entries = []testkit.Entry{{Name: "META-INF/native/linux-x86_64/libsf_core.so", Data: libs[testkit.NativeTLS]}}
	loader.Embedded = &core
	ld := loader.Bytes()
	lj := payload.Read(bytes.NewReader(ld), int64(len(ld)), "/lib/loader.jar", payload.Options{Native: "linux-x86_64"})
	require.NoError(t, lj.Err)
	require.NotNil(t, lj.Nested)
	require.Nil(t, lj.Nested.ELF)
}

func TestPlatformMismatch(t *testing.T) {
	for _, c := range []struct {
		entry string
		want  bool
	}{
		{"META-INF/native/linux-x86_64/libx.so", false},
		{"META-INF/native/linux-amd64/libx.so", false},
		{"META-INF/native/linux-aarch64/libx.so", true},
		{"META-INF/native/arm64/libx.so", true},
		{"META-INF/native/darwin/libx.so", true},
		{"META-INF/native/libx.so", false},
		{"lib/libx-aarch64.so", false}, // only directories name platforms
	} {
		require.Equal(t, c.want, payload.PlatformMismatch(c.entry, "linux-x86_64"), c.entry)
	}
}

func TestNativeBudget(t *testing.T) {
	// A library declaring more than MaxNativeBytes is not read: its size
	// comes from the directory, so nothing is allocated for it.
	big := testkit.BigJAR(1, 0, testkit.Manifest("StreamFusion-Native-Platforms", "linux-x86_64"),
		testkit.Entry{Name: "libbig.so", Data: testkit.ELFHeader(elf.EM_X86_64, make([]byte, payload.MaxNativeBytes)), Store: true})
	j := payload.Read(bytes.NewReader(big), int64(len(big)), "/lib/big.jar", payload.Options{Native: "linux-x86_64"})
	require.NoError(t, j.Err)
	require.Len(t, j.ELF, 1)
	require.Contains(t, j.ELF[0].Skipped, "more than the")
	require.False(t, j.ELF[0].Read())
}

func elfSeeds(f *testing.F) {
	files, _ := filepath.Glob("testdata/elf/*.so")
	if len(files) == 0 {
		f.Fatal("no seeds in testdata/elf")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add(testkit.ELFHeader(elf.EM_AARCH64, nil))
}

func FuzzParseELF(f *testing.F) {
	elfSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		n, err := payload.ParseELF(data)
		if err != nil {
			return
		}
		if len(n.Needed) > 256 || len(n.Versions) > 256 {
			t.Fatalf("unbounded lists: %d needed, %d versions", len(n.Needed), len(n.Versions))
		}
		if n.TLSReloc != "" && !slices.Contains([]elf.Machine{elf.EM_X86_64, elf.EM_AARCH64, elf.EM_386, elf.EM_PPC64}, n.Machine) {
			t.Fatalf("TLS relocation %s on machine %v", n.TLSReloc, n.Machine)
		}
	})
}

// FuzzNatives reads payload JARs carrying the seed libraries through the
// JAR reader, as admission does.
func FuzzNatives(f *testing.F) {
	files, _ := filepath.Glob("testdata/elf/*.so")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(testkit.NativePayload("ops", "2.2", "0.1.0", filepath.Base(name), data).Bytes())
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/lib/f.jar", payload.Options{Native: "linux-x86_64"})
		if len(j.ELF) > 64 {
			t.Fatalf("%d libraries read, more than kept", len(j.ELF))
		}
	})
}
