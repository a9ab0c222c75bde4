package payload

import (
	"bytes"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
)

// Bounds of the native libraries' reading (Options.Native).
const (
	// MaxNativeBytes is the largest library read: one declaring more is
	// not read (Native.Skipped says so). It bounds the one buffer a
	// library is inflated into.
	MaxNativeBytes = 64 << 20
	// NativeBudget is the inflated bytes read of one JAR's libraries
	// altogether; the libraries past it are not read.
	NativeBudget = 256 << 20
	// keepELF bounds the libraries of one JAR that are read.
	keepELF = 64
	// maxNeeded bounds the DT_NEEDED names and version needs kept of one
	// library.
	maxNeeded = 256
	// maxTLSRelocs bounds the relocation entries looked at per library.
	maxTLSRelocs = 1 << 22
)

// Native is what a native library's ELF says, as far as the loader's
// verdict goes: the machine it is for, whether it needs a static TLS block,
// the symbol versions and libraries it needs. Only facts: package admission
// judges them against the host.
type Native struct {
	Entry string `json:"entry"` // the entry's name in the JAR
	Size  uint64 `json:"size"`  // uncompressed, as the directory declares

	// Err is why the bytes are not an ELF object the loader would map
	// (a bad header, a damaged table); Skipped is why they were not read
	// (over MaxNativeBytes or the JAR's NativeBudget). Either way nothing
	// below is known.
	Err     string `json:"err,omitempty"`
	Skipped string `json:"skipped,omitempty"`

	Machine elf.Machine `json:"machine,omitempty"` // e_machine
	Class   elf.Class   `json:"class,omitempty"`   // ELFCLASS32/64
	Data    elf.Data    `json:"data,omitempty"`    // endianness
	Type    elf.Type    `json:"type,omitempty"`    // ET_DYN for a shared object

	// StaticTLSFlag is DF_STATIC_TLS in DT_FLAGS; TLSSize the PT_TLS
	// segment's size in memory (0: none); TLSReloc the first
	// initial-exec or local-exec TLS relocation of the dynamic
	// relocations (R_X86_64_TPOFF64, R_AARCH64_TLS_TPREL64, ...), ""
	// for none.
	StaticTLSFlag bool   `json:"staticTLSFlag,omitempty"`
	TLSSize       uint64 `json:"tlsSize,omitempty"`
	TLSReloc      string `json:"tlsReloc,omitempty"`

	Needed   []string      `json:"needed,omitempty"`   // DT_NEEDED, in order
	Versions []VersionNeed `json:"versions,omitempty"` // .gnu.version_r
}

// VersionNeed is one symbol version a library needs from another.
type VersionNeed struct {
	File    string `json:"file"`    // libc.so.6
	Version string `json:"version"` // GLIBC_2.38
}

// StaticTLS reports whether the library needs a static TLS block: the
// linker marked it DF_STATIC_TLS, or it has a TLS segment that
// initial-exec relocations address.
func (n *Native) StaticTLS() bool {
	return n.StaticTLSFlag || (n.TLSSize > 0 && n.TLSReloc != "")
}

// Read reports whether the library's ELF was read.
func (n *Native) Read() bool { return n.Err == "" && n.Skipped == "" }

// ParseELF reads the facts of one native library from its bytes. It never
// allocates more than the bytes given: debug/elf reads sections through
// its bounded reader, and every table is checked against data.
func ParseELF(data []byte) (n Native, err error) {
	defer func() {
		// debug/elf is fuzzed upstream, but a library is untrusted input
		// and the start path must not die of one: a panic is a damaged
		// library.
		if r := recover(); r != nil {
			n, err = Native{}, fmt.Errorf("damaged ELF object: %v", r)
		}
	}()
	f, err := elf.NewFile(bytes.NewReader(data))
	if err != nil {
		return n, err
	}
	n.Machine, n.Class, n.Data, n.Type = f.Machine, f.Class, f.Data, f.Type
	for _, p := range f.Progs {
		if p.Type == elf.PT_TLS {
			n.TLSSize = p.Memsz
		}
	}
	if flags, err := f.DynValue(elf.DT_FLAGS); err == nil {
		for _, v := range flags {
			if elf.DynFlag(v)&elf.DF_STATIC_TLS != 0 {
				n.StaticTLSFlag = true
			}
		}
	}
	if libs, err := f.ImportedLibraries(); err == nil {
		n.Needed = libs[:min(len(libs), maxNeeded)]
	}
	if needs, err := f.DynamicVersionNeeds(); err == nil {
	needs:
		for _, need := range needs {
			for _, dep := range need.Needs {
				if len(n.Versions) == maxNeeded {
					break needs
				}
				n.Versions = append(n.Versions, VersionNeed{File: need.Name, Version: dep.Dep})
			}
		}
	}
	n.TLSReloc = tlsReloc(f, data)
	return n, nil
}

// tlsReloc returns the name of the first initial-exec (or local-exec)
// TLS relocation among the loaded relocation sections, "" for none.
func tlsReloc(f *elf.File, data []byte) string {
	seen := 0
	for _, s := range f.Sections {
		if s.Flags&elf.SHF_ALLOC == 0 || (s.Type != shtRelocA && s.Type != elf.SHT_REL) || s.Type == elf.SHT_NOBITS {
			continue
		}
		if s.Offset > uint64(len(data)) || s.Size > uint64(len(data))-s.Offset {
			continue
		}
		b := data[s.Offset : s.Offset+s.Size]
		size := relocSize(f.Class, s.Type)
		for off := 0; off+size <= len(b) && seen < maxTLSRelocs; off += size {
			seen++
			if name := tlsType(f, relocType(f, b[off:off+size])); name != "" {
				return name
			}
		}
	}
	return ""
}

// shtRelocA is the section type of relocations with addends.
const shtRelocA = elf.SHT_RELA //nolint:misspell // the ELF specification's name

func relocSize(c elf.Class, t elf.SectionType) int {
	switch {
	case c == elf.ELFCLASS64 && t == shtRelocA:
		return 24
	case c == elf.ELFCLASS64:
		return 16
	case t == shtRelocA:
		return 12
	}
	return 8
}

// relocType is r_info's type: the low 32 bits on ELFCLASS64, the low 8 on
// ELFCLASS32.
func relocType(f *elf.File, rel []byte) uint32 {
	var bo binary.ByteOrder = binary.LittleEndian
	if f.Data == elf.ELFDATA2MSB {
		bo = binary.BigEndian
	}
	if f.Class == elf.ELFCLASS64 {
		return uint32(bo.Uint64(rel[8:16]))
	}
	return bo.Uint32(rel[4:8]) & 0xff
}

// tlsType names a relocation type that addresses the static TLS block
// (initial-exec or local-exec), "" for any other.
func tlsType(f *elf.File, t uint32) string {
	switch f.Machine {
	case elf.EM_X86_64:
		switch r := elf.R_X86_64(t); r {
		case elf.R_X86_64_TPOFF64, elf.R_X86_64_TPOFF32, elf.R_X86_64_GOTTPOFF:
			return r.String()
		}
	case elf.EM_AARCH64:
		switch r := elf.R_AARCH64(t); r {
		case elf.R_AARCH64_TLS_TPREL64, elf.R_AARCH64_TLSIE_ADR_GOTTPREL_PAGE21, elf.R_AARCH64_TLSIE_LD64_GOTTPREL_LO12_NC:
			return r.String()
		}
	case elf.EM_386:
		switch r := elf.R_386(t); r {
		case elf.R_386_TLS_TPOFF, elf.R_386_TLS_IE, elf.R_386_TLS_GOTIE, elf.R_386_TLS_LE, elf.R_386_TLS_TPOFF32:
			return r.String()
		}
	case elf.EM_PPC64:
		switch r := elf.R_PPC64(t); r {
		case elf.R_PPC64_TPREL64, elf.R_PPC64_GOT_TPREL16_DS:
			return r.String()
		}
	}
	return ""
}

// readNatives reads the ELF facts of the JAR's native libraries kept by
// the directory walk, one at a time, within NativeBudget.
func (j *JAR) readNatives(d *directory, es []entry) {
	var spent uint64
	for i := range es {
		e := &es[i]
		n := Native{Entry: e.name, Size: e.size}
		switch {
		case e.size > MaxNativeBytes:
			n.Skipped = fmt.Sprintf("declares %d bytes, more than the %d this tool reads of a library", e.size, MaxNativeBytes)
		case spent+e.size > NativeBudget:
			n.Skipped = fmt.Sprintf("the JAR's libraries exceed the %d bytes this tool reads of one JAR", NativeBudget)
		default:
			spent += e.size
			data, err := entryBytes(d, e, MaxNativeBytes)
			if err != nil {
				n.Err = err.Error()
				break
			}
			parsed, err := ParseELF(data)
			if err != nil {
				n.Err = describeELFErr(err)
				break
			}
			parsed.Entry, parsed.Size = n.Entry, n.Size
			n = parsed
		}
		j.ELF = append(j.ELF, n)
	}
}

func describeELFErr(err error) string {
	var fe *elf.FormatError
	if errors.As(err, &fe) {
		return "not an ELF object the loader maps: " + fe.Error()
	}
	return err.Error()
}

// Platform tokens in native library paths (META-INF/native/linux-x86_64/,
// linux-aarch64/, darwin/, ...), for PlatformMismatch.
var (
	archTokens = map[string]string{"x86_64": "x86_64", "amd64": "x86_64", "x64": "x86_64",
		"aarch64": "aarch64", "arm64": "aarch64", "ppc64le": "ppc64le", "s390x": "s390x", "riscv64": "riscv64",
		"i386": "x86", "i686": "x86", "x86": "x86", "arm": "arm", "armhf": "arm"}
	osTokens = map[string]string{"linux": "linux", "darwin": "macos", "macos": "macos", "osx": "macos",
		"windows": "windows", "win32": "windows", "win": "windows", "freebsd": "freebsd"}
)

// PlatformMismatch reports whether a native library's entry path names
// another platform than host ("linux-x86_64"): a directory such as
// linux-aarch64/, darwin/ or arm64/. A path that names no platform is
// taken to be for any, the host's included.
func PlatformMismatch(entry, host string) bool {
	hostOS, hostArch, _ := strings.Cut(host, "-")
	dirs := strings.Split(strings.ToLower(entry), "/")
	for _, seg := range dirs[:len(dirs)-1] {
		for _, tok := range strings.Split(seg, "-") {
			if a, ok := archTokens[tok]; ok && a != hostArch {
				return true
			}
			if o, ok := osTokens[tok]; ok && o != hostOS {
				return true
			}
		}
	}
	return false
}

// isELFName says whether a native library's name is one the Linux loader
// opens (lib.so, lib.so.1), not a .dylib, .dll or .jnilib.
func isELFName(name []byte) bool {
	b := base(name)
	return bytes.HasSuffix(b, []byte(".so")) || bytes.Contains(b, []byte(".so."))
}

// lists says whether the space-separated attribute lists word.
func (m Manifest) lists(attr, word string) bool {
	v, _ := m.Get(attr)
	for _, w := range strings.Fields(v) {
		if w == word {
			return true
		}
	}
	return false
}
