// Package testkit writes realistic Flink distributions and StreamFusion
// payload JARs for tests, benchmarks and the demo: Flink 2.2.x and 1.18.1
// lib layouts (flink-dist with its version resource, the planner loader with
// its nested planner), a JDK release file, the glibc loader, and payloads
// whose manifests follow the contract, with embedded cores stored or
// deflated and native library entries.
//
// It writes only what admission reads or would trip over; it is not Flink.
package testkit

import (
	"archive/zip"
	"bytes"
	"cmp"
	"debug/elf"
	"fmt"
	"hash/crc32"
	"sort"
	"strings"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Entry is one file in a JAR.
type Entry struct {
	Name  string
	Data  []byte
	Store bool // stored instead of deflated
}

// epoch keeps JAR bytes reproducible.
var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// JAR returns a ZIP archive holding a manifest (when manifest is not
// empty) followed by entries, in the order given, with the parent
// directory entries a jar tool writes.
func JAR(manifest string, entries ...Entry) []byte {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	dirs := map[string]bool{}
	add := func(e Entry) {
		for i := strings.IndexByte(e.Name, '/'); i >= 0; {
			d := e.Name[:i+1]
			if !dirs[d] {
				dirs[d] = true
				must(w.CreateHeader(&zip.FileHeader{Name: d, Method: zip.Store, Modified: epoch}))
			}
			j := strings.IndexByte(e.Name[i+1:], '/')
			if j < 0 {
				break
			}
			i += j + 1
		}
		method := zip.Deflate
		if e.Store {
			method = zip.Store
		}
		f, err := w.CreateHeader(&zip.FileHeader{Name: e.Name, Method: method, Modified: epoch})
		if err != nil {
			panic(err)
		}
		if _, err := f.Write(e.Data); err != nil {
			panic(err)
		}
	}
	if manifest != "" {
		add(Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(manifest)})
	}
	for _, e := range entries {
		add(e)
	}
	if err := w.Close(); err != nil {
		panic(err)
	}
	return buf.Bytes()
}

func must(_ any, err error) {
	if err != nil {
		panic(err)
	}
}

// Manifest renders attributes as a manifest main section, in the order
// given as name, value pairs, with CRLF line ends and lines folded at 72
// bytes as the jar tool folds them.
func Manifest(pairs ...string) string {
	var b strings.Builder
	b.WriteString("Manifest-Version: 1.0\r\n")
	for i := 0; i+1 < len(pairs); i += 2 {
		line := pairs[i] + ": " + pairs[i+1]
		for len(line) > 72 {
			b.WriteString(line[:72] + "\r\n")
			line = " " + line[72:]
		}
		b.WriteString(line + "\r\n")
	}
	b.WriteString("\r\n")
	return b.String()
}

// Payload describes a StreamFusion JAR. The zero values of the optional
// fields give a well-formed payload; NoMarker and Attrs build broken ones.
type Payload struct {
	Kind        string // loader, core, extension
	Module      string // streamfusion-kafka
	Artifact    string // default: tech.streamfusion:<module>[-flink1.18]
	Version     string // 0.1.0
	Line        string // 2.2 or 1.18
	JavaRelease string // default 11
	JavaRuntime string
	BuildID     string
	Platforms   string   // StreamFusion-Native-Platforms; default from Native
	Native      []string // platforms to add native libraries for
	Requires    string
	Stock       string

	NoMarker bool              // leave out StreamFusion-Payload
	Attrs    map[string]string // set (or, with "", remove) attributes last
	Entries  []Entry           // more entries

	// Embedded is the loader's nested core; EmbedStored stores it instead
	// of deflating it; EmbedPath overrides where it is kept.
	Embedded    *Payload
	EmbedStored bool
	EmbedPath   string
}

// DefaultEmbedPath is where loaders keep their embedded core.
const DefaultEmbedPath = "META-INF/streamfusion/streamfusion-core.jar"

// Loader returns a loader payload with its embedded core, both for line
// and version; the cores carry native libraries for linux-x86_64.
func Loader(line, version string) Payload {
	core := Core(line, version)
	return Payload{Kind: "loader", Module: "streamfusion-loader", Version: version, Line: line, Embedded: &core}
}

// Core returns a runtime core payload with native libraries for linux-x86_64.
func Core(line, version string) Payload {
	return Payload{Kind: "core", Module: "streamfusion-core", Version: version, Line: line,
		BuildID: "3f9c0d1e", Native: []string{"linux-x86_64"}}
}

// Extension returns an extension payload for streamfusion-<name>.
func Extension(name, line, version string) Payload {
	return Payload{Kind: "extension", Module: "streamfusion-" + name, Version: version, Line: line,
		Native: []string{"linux-x86_64"}}
}

// ArtifactID is the artifactId a module is published as on a line.
func ArtifactID(module, line string) string {
	if line == "2.2" {
		return module
	}
	return module + "-flink" + line
}

// FileName is the file name Maven gives the payload.
func (p Payload) FileName() string {
	return ArtifactID(p.Module, p.Line) + "-" + p.Version + ".jar"
}

// Manifest renders the payload's manifest.
func (p Payload) Manifest() string {
	attrs := [][2]string{
		{"Created-By", "StreamFusion build"},
		{"StreamFusion-Payload", p.Kind},
		{"StreamFusion-Module", p.Module},
		{"StreamFusion-Artifact", p.artifact()},
		{"StreamFusion-Version", p.Version},
		{"StreamFusion-Flink-Line", p.Line},
		{"StreamFusion-Java-Release", cmp.Or(p.JavaRelease, "11")},
		{"StreamFusion-Java-Runtime", p.JavaRuntime},
		{"StreamFusion-Build-Id", p.BuildID},
		{"StreamFusion-Native-Platforms", cmp.Or(p.Platforms, strings.Join(p.Native, " "))},
		{"StreamFusion-Requires", p.Requires},
		{"StreamFusion-Stock-Requires", p.Stock},
	}
	if p.Embedded != nil {
		attrs = append(attrs, [2]string{EmbeddedCoreAttr, p.embedPath()})
	}
	if p.NoMarker {
		attrs[1][1] = ""
	}
	keys := make([]string, 0, len(p.Attrs))
	for k := range p.Attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		found := false
		for i := range attrs {
			if strings.EqualFold(attrs[i][0], k) {
				attrs[i][1], found = p.Attrs[k], true
			}
		}
		if !found {
			attrs = append(attrs, [2]string{k, p.Attrs[k]})
		}
	}
	var pairs []string
	for _, a := range attrs {
		if a[1] != "" {
			pairs = append(pairs, a[0], a[1])
		}
	}
	return Manifest(pairs...)
}

// EmbeddedCoreAttr names the loader's nested core.
const EmbeddedCoreAttr = payload.EmbeddedCoreAttr

func (p Payload) artifact() string {
	if p.Artifact != "" {
		return p.Artifact
	}
	return "tech.streamfusion:" + ArtifactID(p.Module, p.Line)
}

func (p Payload) embedPath() string { return cmp.Or(p.EmbedPath, DefaultEmbedPath) }

// Bytes returns the payload JAR.
func (p Payload) Bytes() []byte {
	short := strings.TrimPrefix(p.Module, "streamfusion-")
	pkg := strings.ReplaceAll(short, "-", "")
	entries := []Entry{
		{Name: "tech/streamfusion/" + pkg + "/Module.class", Data: classBytes(p.Module)},
		{Name: "META-INF/streamfusion/" + p.Module + ".properties", Data: []byte("module=" + p.Module + "\n")},
	}
	for _, platform := range p.Native {
		lib := "libstreamfusion_" + strings.ReplaceAll(short, "-", "_") + ".so"
		entries = append(entries, Entry{Name: "META-INF/native/" + platform + "/" + lib, Data: nativeBytes(p.Module, platform)})
	}
	if p.Embedded != nil {
		entries = append(entries, Entry{Name: p.embedPath(), Data: p.Embedded.Bytes(), Store: p.EmbedStored})
	}
	entries = append(entries, p.Entries...)
	return JAR(p.Manifest(), entries...)
}

// classBytes is a stand-in class file: the magic and some body.
func classBytes(seed string) []byte {
	return append([]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 55}, bytes.Repeat([]byte(seed), 16)...)
}

// nativeBytes is a stand-in shared library: an ELF header for the
// platform's machine (ELFHeader) and some body.
func nativeBytes(seed, platform string) []byte {
	// As long as the stand-in was before it carried a whole ELF header
	// (tests count the bytes of JARs that hold it).
	body := bytes.Repeat([]byte(fmt.Sprintf("%s/%s;", seed, platform)), 64)
	return ELFHeader(machineOf(platform), body[:len(body)+7-elfHeaderSize])
}

// machineOf is the ELF machine of a platform as StreamFusion-Native-Platforms
// spells it.
func machineOf(platform string) elf.Machine {
	if strings.HasSuffix(platform, "-aarch64") {
		return elf.EM_AARCH64
	}
	return elf.EM_X86_64
}

// ManyEntries returns a JAR of n empty stored entries after a manifest,
// written directly (archive/zip is too slow for millions of entries). It
// stands in for hostile central directories of a million entries.
func ManyEntries(n int, manifest string) []byte { return BigJAR(n, 0, manifest) }

// BigJAR returns a JAR of a manifest and n stored class-like entries of
// size bytes each (filled from one pseudo-random block), written directly;
// extra entries follow the manifest, stored.
// It stands in for Flink's large JARs: flink-dist holds about 45,000.
func BigJAR(n, size int, manifest string, extra ...Entry) []byte {
	block := noise(size)
	var body, dir bytes.Buffer
	body.Grow(n * (size + 60))
	le := func(b *bytes.Buffer, vs ...any) {
		for _, v := range vs {
			switch x := v.(type) {
			case uint16:
				b.Write([]byte{byte(x), byte(x >> 8)})
			case uint32:
				b.Write([]byte{byte(x), byte(x >> 8), byte(x >> 16), byte(x >> 24)})
			}
		}
	}
	crcBlock := crc32.ChecksumIEEE(block)
	add := func(name string, data []byte, crc uint32) {
		off := uint32(body.Len())
		le(&body, uint32(0x04034b50), uint16(10), uint16(0), uint16(0), uint16(0), uint16(0x21), crc, uint32(len(data)), uint32(len(data)), uint16(len(name)), uint16(0))
		body.WriteString(name)
		body.Write(data)
		le(&dir, uint32(0x02014b50), uint16(20), uint16(10), uint16(0), uint16(0), uint16(0), uint16(0x21), crc, uint32(len(data)), uint32(len(data)),
			uint16(len(name)), uint16(0), uint16(0), uint16(0), uint16(0), uint32(0), off)
		dir.WriteString(name)
	}
	add("META-INF/MANIFEST.MF", []byte(manifest), crc32.ChecksumIEEE([]byte(manifest)))
	for _, e := range extra {
		add(e.Name, e.Data, crc32.ChecksumIEEE(e.Data))
	}
	for i := 0; i < n; i++ {
		add(fmt.Sprintf("org/example/big/p%03d/C%07d.class", i%512, i), block, crcBlock)
	}
	// Without ZIP64 the end record keeps the count modulo 2^16, as many
	// writers do; readers count the directory's records instead.
	count := uint16((n + 1 + len(extra)) % 0x10000)
	out := append(body.Bytes(), dir.Bytes()...)
	var end bytes.Buffer
	le(&end, uint32(0x06054b50), uint16(0), uint16(0), count, count, uint32(dir.Len()), uint32(body.Len()), uint16(0))
	return append(out, end.Bytes()...)
}

// noise returns n pseudo-random (incompressible, reproducible) bytes.
func noise(n int) []byte {
	b := make([]byte, n)
	x := uint64(0x9e3779b97f4a7c15)
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = byte(x)
	}
	return b
}
