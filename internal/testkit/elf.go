package testkit

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
)

// elfHeaderSize is the size of an Elf64_Ehdr.
const elfHeaderSize = 64

// ELFHeader returns an ELF64 little-endian header of a shared object
// (ET_DYN) for machine, written field by field as the System V ABI's
// ELF header (Elf64_Ehdr) lays it out, followed by body: no program or
// section headers. It is what the payload's stand-in libraries carry, and
// a library for another machine than this one that needs no cross
// compiler (the loader refuses it on its header alone).
func ELFHeader(machine elf.Machine, body []byte) []byte {
	var b bytes.Buffer
	ident := [elf.EI_NIDENT]byte{0x7f, 'E', 'L', 'F', byte(elf.ELFCLASS64), byte(elf.ELFDATA2LSB), byte(elf.EV_CURRENT), byte(elf.ELFOSABI_NONE)}
	h := elf.Header64{
		Ident:     ident,
		Type:      uint16(elf.ET_DYN),
		Machine:   uint16(machine),
		Version:   uint32(elf.EV_CURRENT),
		Ehsize:    uint16(binary.Size(elf.Header64{})),
		Phentsize: uint16(binary.Size(elf.Prog64{})),
		Shentsize: uint16(binary.Size(elf.Section64{})),
	}
	must(nil, binary.Write(&b, binary.LittleEndian, h))
	b.Write(body)
	return b.Bytes()
}

// WithMachine returns a copy of an ELF object with its e_machine field
// (at byte 18 of the header, in the object's byte order) set to machine.
func WithMachine(so []byte, machine elf.Machine) []byte {
	out := bytes.Clone(so)
	bo := binary.ByteOrder(binary.LittleEndian)
	if out[elf.EI_DATA] == byte(elf.ELFDATA2MSB) {
		bo = binary.BigEndian
	}
	bo.PutUint16(out[18:20], uint16(machine))
	return out
}

// Native library fixtures, built by NativeFixtures with the machine's gcc.
const (
	NativeGood      = "libsf_good.so"      // needs only libc
	NativeTLS       = "libsf_tls.so"       // a 4 KiB __thread block, initial-exec
	NativeTLSSmall  = "libsf_tls_small.so" // a 64-byte __thread block, initial-exec
	NativeNewGlibc  = "libsf_glibc238.so"  // strlcpy@GLIBC_2.38
	NativeMissing   = "libsf_missing.so"   // DT_NEEDED libsf_absent.so
	NativeAArch64   = "libsf_aarch64.so"   // the good library, e_machine EM_AARCH64
	NativeMissingSO = "libsf_absent.so"    // the library NativeMissing needs, deleted
	// StubLibc236 is a libc.so.6 that defines the GLIBC versions of
	// bookworm's glibc 2.36 up to GLIBC_2.36 (a few of them: 2.2.5, 2.3,
	// 2.14, 2.34, 2.36) and nothing else, for test roots.
	StubLibc236 = "stub236/libc.so.6"
)

// NativeFixtures builds the native library fixtures in dir with gcc
// (which must be on PATH) and returns their bytes by name. The GLIBC_2.38
// library is linked against a stub libc.so.6 whose version script defines
// GLIBC_2.38, the way a library linked on a newer glibc records it.
func NativeFixtures(dir string) (map[string][]byte, error) {
	gcc, err := exec.LookPath("gcc")
	if err != nil {
		return nil, err
	}
	write := func(name, text string) error { return os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644) }
	run := func(args ...string) error {
		cmd := exec.Command(gcc, args...)
		cmd.Dir = dir
		if out, err := cmd.CombinedOutput(); err != nil {
			return fmt.Errorf("gcc %v: %w\n%s", args, err, out)
		}
		return nil
	}
	sources := map[string]string{
		"good.c":      "#include <string.h>\nsize_t sf_len(const char *s) { return strlen(s); }\n",
		"tls.c":       "__thread char sf_buf[4096];\nchar *sf_tls(void) { return sf_buf; }\n",
		"tls_small.c": "__thread char sf_small[64];\nchar *sf_tls_small(void) { return sf_small; }\n",
		"glibc238.c": "#include <stddef.h>\n__asm__(\".symver sf_strlcpy, strlcpy@GLIBC_2.38\");\n" +
			"extern size_t sf_strlcpy(char *, const char *, size_t);\n" +
			"size_t sf_copy(char *d, const char *s, size_t n) { return sf_strlcpy(d, s, n); }\n",
		"stubc.c":     "unsigned long strlcpy(char *d, const char *s, unsigned long n) { (void)d; (void)s; return n; }\n",
		"stubc.map":   "GLIBC_2.2.5 { };\nGLIBC_2.38 { global: strlcpy; };\n",
		"absent.c":    "int sf_absent(void) { return 1; }\n",
		"stub236.map": "GLIBC_2.2.5 { global: strlen; };\nGLIBC_2.3 { };\nGLIBC_2.14 { };\nGLIBC_2.34 { };\nGLIBC_2.36 { };\n",
		"stub236.c":   "unsigned long strlen(const char *s) { unsigned long n = 0; while (s[n]) n++; return n; }\n",
		"missing.c":   "extern int sf_absent(void);\nint sf_missing(void) { return sf_absent(); }\n",
	}
	for name, text := range sources {
		if err := write(name, text); err != nil {
			return nil, err
		}
	}
	for _, d := range []string{"stub", "stub236"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o755); err != nil {
			return nil, err
		}
	}
	steps := [][]string{
		{"-shared", "-fPIC", "-O2", "-o", NativeGood, "good.c"},
		{"-shared", "-fPIC", "-O2", "-ftls-model=initial-exec", "-o", NativeTLS, "tls.c"},
		{"-shared", "-fPIC", "-O2", "-ftls-model=initial-exec", "-o", NativeTLSSmall, "tls_small.c"},
		{"-shared", "-fPIC", "-nostdlib", "-Wl,--version-script=stubc.map", "-Wl,-soname,libc.so.6", "-o", "stub/libc.so.6", "stubc.c"},
		{"-shared", "-fPIC", "-nostdlib", "-Wl,--version-script=stub236.map", "-Wl,-soname,libc.so.6", "-o", StubLibc236, "stub236.c"},
		{"-shared", "-fPIC", "-nostdlib", "-o", NativeNewGlibc, "glibc238.c", "-Lstub", "-l:libc.so.6"},
		{"-shared", "-fPIC", "-Wl,-soname," + NativeMissingSO, "-o", NativeMissingSO, "absent.c"},
		{"-shared", "-fPIC", "-o", NativeMissing, "missing.c", "-L.", "-l:" + NativeMissingSO},
	}
	for _, s := range steps {
		if err := run(s...); err != nil {
			return nil, err
		}
	}
	out := map[string][]byte{}
	for _, name := range []string{NativeGood, NativeTLS, NativeTLSSmall, NativeNewGlibc, NativeMissing, StubLibc236} {
		data, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			return nil, err
		}
		out[name] = data
	}
	// The library NativeMissing needs must not be found by anyone.
	if err := os.Remove(filepath.Join(dir, NativeMissingSO)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return nil, err
	}
	out[NativeAArch64] = WithMachine(out[NativeGood], elf.EM_AARCH64)
	return out, nil
}

// NativePayload is an extension payload for linux-x86_64 carrying one
// native library, so under META-INF/native/linux-x86_64/.
func NativePayload(module, line, version, lib string, so []byte) Payload {
	p := Extension(module, line, version)
	p.Native = nil
	p.Platforms = "linux-x86_64"
	p.Entries = []Entry{{Name: "META-INF/native/linux-x86_64/" + lib, Data: so}}
	return p
}
