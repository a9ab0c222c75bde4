//go:build jvmoracle

package payload_test

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"testing"
	"time"
)

// The Go side of the corpus: archive/zip as Go programs write JARs, and a
// raw ZIP writer for the shapes no tool writes on purpose (the corrupters).

var corpusTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// goCases are archives written by Go's archive/zip.
func goCases(t *testing.T) []corpusCase {
	type file struct {
		name   string
		data   []byte
		method uint16
	}
	content := []file{
		{"META-INF/MANIFEST.MF", []byte(coreManifest), zip.Deflate},
		{"tech/streamfusion/X.class", classData, zip.Deflate},
		{"tech/streamfusion/empty.txt", nil, zip.Deflate},
		{"META-INF/native/linux-x86_64/libstreamfusion_core.so", nativeData, zip.Deflate},
	}
	write := func(method uint16, raw bool, extra int) []byte {
		var buf bytes.Buffer
		w := zip.NewWriter(&buf)
		for _, f := range content {
			h := &zip.FileHeader{Name: f.name, Method: method, Modified: corpusTime}
			if !raw {
				fw, err := w.CreateHeader(h)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := fw.Write(f.data); err != nil {
					t.Fatal(err)
				}
				continue
			}
			packed := pack(t, f.data, method)
			h.CRC32 = crc32.ChecksumIEEE(f.data)
			h.UncompressedSize64 = uint64(len(f.data))
			h.CompressedSize64 = uint64(len(packed))
			fw, err := w.CreateRaw(h)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := fw.Write(packed); err != nil {
				t.Fatal(err)
			}
		}
		for i := range extra {
			if _, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("tech/streamfusion/gen/E%05d.class", i), Method: zip.Store, Modified: corpusTime}); err != nil {
				t.Fatal(err)
			}
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	return []corpusCase{
		{"go-deflated", "archive/zip CreateHeader, deflated (data descriptors)", write(zip.Deflate, false, 0)},
		{"go-stored-dd", "archive/zip CreateHeader, stored (stored entries with data descriptors)", write(zip.Store, false, 0)},
		{"go-raw-deflated", "archive/zip CreateRaw, deflated, sizes in the local headers", write(zip.Deflate, true, 0)},
		{"go-raw-stored", "archive/zip CreateRaw, stored, sizes in the local headers", write(zip.Store, true, 0)},
		{"go-zip64-70000", "archive/zip with 70,000 entries (ZIP64 end records)", write(zip.Deflate, false, 70000-len(content))},
		{"go-65535", "archive/zip with exactly 65,535 entries (Go writes ZIP64 records from 65,535 on)", write(zip.Deflate, false, 65535-len(content))},
	}
}

func pack(t *testing.T, data []byte, method uint16) []byte {
	if method != zip.Deflate {
		return data
	}
	var buf bytes.Buffer
	fw, err := flate.NewWriter(&buf, flate.DefaultCompression)
	if err != nil {
		t.Fatal(err)
	}
	fw.Write(data)
	fw.Close()
	return buf.Bytes()
}

// rawEntry is one entry as the raw writer lays it out.
type rawEntry struct {
	name         string
	data         []byte
	method       uint16
	localName    string // when set, the local header names this instead
	localExtra   []byte
	centralExtra []byte
	descriptor   bool    // sizes and CRC after the data, not in the local header
	crc          *uint32 // a CRC other than the data's, in both headers
	zip64Local   bool    // local header sizes saturated, given in a ZIP64 extra field
	inCentral    *bool   // false: a local header the central directory does not list
	flags        uint16  // general purpose flags besides the descriptor's
}

// rawZip is a ZIP archive laid out field by field.
type rawZip struct {
	entries    []rawEntry
	comment    string
	countDelta int    // added to the end record's entry counts
	zip64End   []byte // when not nil, a ZIP64 end record with this extensible data sector, and a saturated end record
	endOffset  uint32 // when not 0, the end record's directory offset in place of the true one
}

func le16(b *bytes.Buffer, v uint16) { binary.Write(b, binary.LittleEndian, v) }
func le32(b *bytes.Buffer, v uint32) { binary.Write(b, binary.LittleEndian, v) }
func le64(b *bytes.Buffer, v uint64) { binary.Write(b, binary.LittleEndian, v) }

func (z rawZip) bytes(t *testing.T) []byte {
	var b bytes.Buffer
	type placed struct {
		e              rawEntry
		off            uint32
		crc            uint32
		packed, size   uint32
		flags, version uint16
	}
	var dir []placed
	const dosTime, dosDate = 0, 0x5c21 // 2026-01-01
	for _, e := range z.entries {
		packed := pack(t, e.data, e.method)
		p := placed{e: e, off: uint32(b.Len()), crc: crc32.ChecksumIEEE(e.data), packed: uint32(len(packed)), size: uint32(len(e.data)), version: 20}
		if e.crc != nil {
			p.crc = *e.crc
		}
		p.flags = e.flags
		if e.descriptor {
			p.flags |= 0x8
		}
		name := e.name
		if e.localName != "" {
			name = e.localName
		}
		extra := e.localExtra
		lcrc, lpacked, lsize := p.crc, p.packed, p.size
		if e.descriptor {
			lcrc, lpacked, lsize = 0, 0, 0
		}
		if e.zip64Local {
			var x bytes.Buffer
			le16(&x, 1)
			le16(&x, 16)
			le64(&x, uint64(lsize))
			le64(&x, uint64(lpacked))
			extra = append(x.Bytes(), extra...)
			lpacked, lsize = 0xffffffff, 0xffffffff
			p.version = 45
		}
		le32(&b, 0x04034b50)
		le16(&b, p.version)
		le16(&b, p.flags)
		le16(&b, e.method)
		le16(&b, dosTime)
		le16(&b, dosDate)
		le32(&b, lcrc)
		le32(&b, lpacked)
		le32(&b, lsize)
		le16(&b, uint16(len(name)))
		le16(&b, uint16(len(extra)))
		b.WriteString(name)
		b.Write(extra)
		b.Write(packed)
		if e.descriptor {
			le32(&b, 0x08074b50)
			le32(&b, p.crc)
			le32(&b, p.packed)
			le32(&b, p.size)
		}
		if e.inCentral == nil || *e.inCentral {
			dir = append(dir, p)
		}
	}
	cdOff := b.Len()
	for _, p := range dir {
		le32(&b, 0x02014b50)
		le16(&b, p.version)
		le16(&b, p.version)
		le16(&b, p.flags)
		le16(&b, p.e.method)
		le16(&b, dosTime)
		le16(&b, dosDate)
		le32(&b, p.crc)
		le32(&b, p.packed)
		le32(&b, p.size)
		le16(&b, uint16(len(p.e.name)))
		le16(&b, uint16(len(p.e.centralExtra)))
		le16(&b, 0) // comment
		le16(&b, 0) // disk
		le16(&b, 0) // internal attributes
		le32(&b, 0) // external attributes
		le32(&b, p.off)
		b.WriteString(p.e.name)
		b.Write(p.e.centralExtra)
	}
	cdSize := b.Len() - cdOff
	count := len(dir) + z.countDelta
	if z.zip64End != nil {
		end64 := b.Len()
		le32(&b, 0x06064b50)
		le64(&b, uint64(44+len(z.zip64End)))
		le16(&b, 45)
		le16(&b, 45)
		le32(&b, 0)
		le32(&b, 0)
		le64(&b, uint64(count))
		le64(&b, uint64(count))
		le64(&b, uint64(cdSize))
		le64(&b, uint64(cdOff))
		b.Write(z.zip64End)
		le32(&b, 0x07064b50)
		le32(&b, 0)
		le64(&b, uint64(end64))
		le32(&b, 1)
	}
	le32(&b, 0x06054b50)
	le16(&b, 0)
	le16(&b, 0)
	if z.zip64End != nil {
		le16(&b, 0xffff)
		le16(&b, 0xffff)
		le32(&b, 0xffffffff)
		le32(&b, 0xffffffff)
	} else {
		le16(&b, uint16(count))
		le16(&b, uint16(count))
		le32(&b, uint32(cdSize))
		if z.endOffset != 0 {
			cdOff = int(z.endOffset)
		}
		le32(&b, uint32(cdOff))
	}
	le16(&b, uint16(len(z.comment)))
	b.WriteString(z.comment)
	return b.Bytes()
}

// baseEntries is the sound archive the raw corrupters start from.
func baseEntries(method uint16) []rawEntry {
	return []rawEntry{
		{name: "META-INF/", method: zip.Store},
		{name: "META-INF/MANIFEST.MF", data: []byte(coreManifest), method: method},
		{name: "tech/", method: zip.Store},
		{name: "tech/streamfusion/", method: zip.Store},
		{name: "tech/streamfusion/X.class", data: classData, method: method},
		{name: "META-INF/native/linux-x86_64/libstreamfusion_core.so", data: nativeData, method: method},
	}
}

func with(es []rawEntry, i int, f func(*rawEntry)) []rawEntry {
	out := append([]rawEntry(nil), es...)
	f(&out[i])
	return out
}

func ptr[T any](v T) *T { return &v }

// corruptCases are the messWith-style cases: raw layouts no tool writes on
// purpose, and damage applied to good archives of the corpus.
func corruptCases(t *testing.T, good []corpusCase) []corpusCase {
	var out []corpusCase
	add := func(name, origin string, data []byte) {
		out = append(out, corpusCase{Name: name, Origin: origin, Data: data})
	}
	raw := func(z rawZip) []byte { return z.bytes(t) }
	d := baseEntries(zip.Deflate)
	s := baseEntries(zip.Store)
	add("raw-base-deflated", "raw writer, the corrupters' sound deflated base", raw(rawZip{entries: d}))
	add("raw-base-stored", "raw writer, the corrupters' sound stored base", raw(rawZip{entries: s}))
	add("raw-comment", "raw writer, an archive comment", raw(rawZip{entries: d, comment: "a comment\x00with PK\x05\x06 inside"}))
	add("raw-local-extra-differs", "local extra fields (alignment padding) that the central ones lack",
		raw(rawZip{entries: with(with(d, 1, func(e *rawEntry) { e.localExtra = []byte{0x35, 0xd9, 4, 0, 0, 0, 0, 0} }), 4,
			func(e *rawEntry) {
				e.localExtra = []byte{0xfe, 0xca, 0, 0}
				e.centralExtra = []byte{0x55, 0x54, 5, 0, 1, 0, 0, 0, 0}
			})}))
	add("raw-zip64-end-extensible", "a ZIP64 end record with a 16-byte extensible data sector",
		raw(rawZip{entries: d, zip64End: bytes.Repeat([]byte{0xab}, 16)}))
	add("raw-zip64-end", "a ZIP64 end record, no extensible data", raw(rawZip{entries: d, zip64End: []byte{}}))
	add("raw-zip64-local-dir", "a ZIP64 local header on the stored META-INF/ entry before the manifest",
		raw(rawZip{entries: with(d, 0, func(e *rawEntry) { e.zip64Local = true })}))
	add("raw-zip64-local-manifest", "a ZIP64 local header on a stored manifest",
		raw(rawZip{entries: with(s, 1, func(e *rawEntry) { e.zip64Local = true })}))
	add("raw-zip64-local-stored-class", "a ZIP64 local header on a stored class after the manifest",
		raw(rawZip{entries: with(s, 4, func(e *rawEntry) { e.zip64Local = true })}))
	add("raw-bad-central-extra", "a central extra field whose tag block runs past the extra length",
		raw(rawZip{entries: with(d, 4, func(e *rawEntry) { e.centralExtra = []byte{0xfe, 0xca, 16, 0, 1, 2, 3, 4} })}))
	add("raw-bad-central-extra-manifest", "the manifest's central extra field runs past its length",
		raw(rawZip{entries: with(d, 1, func(e *rawEntry) { e.centralExtra = []byte{0xfe, 0xca, 16, 0, 1, 2, 3, 4} })}))
	add("raw-manifest-crc-deflated", "the deflated manifest's CRC is wrong in both headers",
		raw(rawZip{entries: with(d, 1, func(e *rawEntry) { e.crc = ptr(uint32(0xdeadbeef)) })}))
	add("raw-manifest-crc-stored", "the stored manifest's CRC is wrong in both headers",
		raw(rawZip{entries: with(s, 1, func(e *rawEntry) { e.crc = ptr(uint32(0xdeadbeef)) })}))
	add("raw-class-crc", "a class's CRC is wrong (after the manifest)",
		raw(rawZip{entries: with(d, 4, func(e *rawEntry) { e.crc = ptr(uint32(0xdeadbeef)) })}))
	late := []rawEntry{d[0], d[2], d[3], d[4], d[1], d[5]}
	add("raw-manifest-late", "the manifest after META-INF/ and the classes", raw(rawZip{entries: late}))
	add("raw-manifest-late-stored", "the stored manifest after META-INF/ and the classes",
		raw(rawZip{entries: []rawEntry{s[0], s[2], s[3], s[4], s[1], s[5]}}))
	add("raw-manifest-first-no-dir", "the manifest first, no META-INF/ entry", raw(rawZip{entries: d[1:]}))
	add("raw-manifest-lowercase", "the manifest named meta-inf/manifest.mf",
		raw(rawZip{entries: with(d, 1, func(e *rawEntry) { e.name = "meta-inf/manifest.mf" })}))
	add("raw-local-name-differs", "the manifest's local header names another file",
		raw(rawZip{entries: with(d, 1, func(e *rawEntry) { e.localName = "META-INF/MANIFEST.XX" })}))
	add("raw-stray-local-manifest", "a stray stored local header with another manifest ahead of the listed entries",
		raw(rawZip{entries: append([]rawEntry{{name: "META-INF/MANIFEST.MF", data: []byte(otherManifest), method: zip.Store, inCentral: ptr(false)}}, s...)}))
	add("raw-stray-local-after", "a stray local header with another manifest between the data and the central directory",
		raw(rawZip{entries: append(append([]rawEntry(nil), s...), rawEntry{name: "META-INF/MANIFEST.MF", data: []byte(otherManifest), method: zip.Store, inCentral: ptr(false)})}))
	add("raw-two-manifests", "two entries named META-INF/MANIFEST.MF (0.1.0, then 9.9.9)",
		raw(rawZip{entries: append(append([]rawEntry(nil), d[:2]...), append([]rawEntry{{name: "META-INF/MANIFEST.MF", data: []byte(otherManifest), method: zip.Deflate}}, d[2:]...)...)}))
	add("raw-count-plus", "the end record counts one entry more than the directory holds", raw(rawZip{entries: d, countDelta: 1}))
	add("raw-offset-saturated", "the end record's directory offset is 0xffffffff and no ZIP64 locator precedes it (FuzzReadDiff/3a988f0af8be20b0)",
		raw(rawZip{entries: d, endOffset: 0xffffffff}))
	add("raw-count-minus", "the end record counts one entry fewer than the directory holds", raw(rawZip{entries: d, countDelta: -1}))
	add("raw-descriptor-stored", "stored entries with data descriptors (flag 8)",
		raw(rawZip{entries: func() []rawEntry {
			es := append([]rawEntry(nil), s...)
			for i := range es {
				es[i].descriptor = true
			}
			return es
		}()}))
	add("raw-descriptor-deflated", "deflated entries with data descriptors (flag 8)",
		raw(rawZip{entries: func() []rawEntry {
			es := append([]rawEntry(nil), d...)
			for i := range es {
				es[i].descriptor = true
			}
			return es
		}()}))
	add("raw-method-12", "a class (after the manifest) whose method is 12 (bzip2), data left stored",
		raw(rawZip{entries: with(d, 4, func(e *rawEntry) { e.method = 12 })}))
	add("raw-encrypted-flag", "a class (after the manifest) flagged encrypted (flag bit 0)",
		raw(rawZip{entries: with(d, 4, func(e *rawEntry) { e.flags = 1 })}))
	add("raw-no-manifest", "no manifest at all", raw(rawZip{entries: append([]rawEntry{d[0]}, d[2:]...)}))
	add("raw-empty-deflated-dir", "a deflated META-INF/ directory entry (compressed size 2), as Python writes",
		raw(rawZip{entries: with(d, 0, func(e *rawEntry) { e.method = zip.Deflate })}))
	// An entry of exactly 32 KiB before the manifest, sizes in the local header.
	add("raw-32k-before-manifest", "a deflated 32 KiB entry before the manifest (sizes in the local header)",
		raw(rawZip{entries: append([]rawEntry{{name: "META-INF/INDEX.LIST", data: bytes.Repeat([]byte("0123456789abcdef"), 2048), method: zip.Deflate}}, d[1:]...)}))

	// Damage applied to good archives (messWith).
	byName := map[string][]byte{}
	for _, c := range good {
		byName[c.Name] = c.Data
	}
	for _, base := range []string{"jdk-jar", "jdk-jar-stored", "go-deflated"} {
		data := byName[base]
		if data == nil {
			t.Fatalf("no good case %s to damage", base)
		}
		mess := func(name, origin string, f func([]byte) []byte) {
			add(base+"+"+name, origin+" ("+base+")", f(append([]byte(nil), data...)))
		}
		mess("prepend-script", "a launch script prepended, offsets not adjusted (Spring Boot style)",
			func(b []byte) []byte { return append([]byte(launchScript), b...) })
		// archive/zip, finding a sound central header at the end record's
		// directory offset taken as it stands, reads that one and ignores
		// the prefix; JarFile reads only the directory the end record
		// implies (FuzzReadDiff/8e6e90fa4c87d71b). The prefix here is the
		// archive's own entries and directory, so the raw offset holds a
		// sound copy of the directory.
		mess("prefix-holds-directory", "its own entries and directory prepended, offsets not adjusted",
			func(b []byte) []byte { return append(b[:centralEnd(t, b):centralEnd(t, b)], b...) })
		mess("prefix-holds-directory+damaged", "its own entries and directory prepended, the real directory's second record broken",
			func(b []byte) []byte {
				prefix := centralEnd(t, b)
				out := append(b[:prefix:prefix], b...)
				out[prefix+secondCentral(t, b)] ^= 0xff
				return out
			})
		// A central header's compressed size saturated without a ZIP64
		// field: archive/zip stops reading the directory there (and,
		// with the end record counting no entries, opens an empty
		// archive); JarFile reads every record
		// (FuzzReadDiff/7bd8ec401edca86e).
		mess("first-size-saturated", "the first central header's compressed size 0xffffffff, no ZIP64 field",
			func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[centralOffset(t, b)+20:], 0xffffffff)
				return b
			})
		mess("first-size-saturated+count-zero", "the first central header's compressed size 0xffffffff, no ZIP64 field, the end record counting no entries",
			func(b []byte) []byte {
				binary.LittleEndian.PutUint32(b[centralOffset(t, b)+20:], 0xffffffff)
				end := bytes.LastIndex(b, []byte("PK\x05\x06"))
				binary.LittleEndian.PutUint32(b[end+8:], 0)
				return b
			})
		mess("junk-appended", "junk after the end record",
			func(b []byte) []byte { return append(b, bytes.Repeat([]byte("junk"), 64)...) })
		mess("truncated-1", "the last byte cut off", func(b []byte) []byte { return b[:len(b)-1] })
		mess("truncated-half", "cut to its first half", func(b []byte) []byte { return b[:len(b)/2] })
		mess("no-directory", "cut before its central directory", func(b []byte) []byte { return b[:centralOffset(t, b)] })
		mess("directory-damaged", "the first central header's signature broken", func(b []byte) []byte {
			b[centralOffset(t, b)] ^= 0xff
			return b
		})
		mess("last-data-damaged", "bytes of the last entry's data flipped", func(b []byte) []byte {
			off := lastDataOffset(t, b)
			for i := off; i < off+8 && i < centralOffset(t, b); i++ {
				b[i] ^= 0x5a
			}
			return b
		})
	}
	return out
}

// centralOffset is where the central directory of a sound archive starts.
func centralOffset(t *testing.T, b []byte) int {
	i := bytes.LastIndex(b, []byte("PK\x05\x06"))
	if i < 0 {
		t.Fatal("no end record")
	}
	return int(binary.LittleEndian.Uint32(b[i+16:]))
}

// centralEnd is where the central directory of a sound archive ends.
func centralEnd(t *testing.T, b []byte) int {
	i := bytes.LastIndex(b, []byte("PK\x05\x06"))
	if i < 0 {
		t.Fatal("no end record")
	}
	return centralOffset(t, b) + int(binary.LittleEndian.Uint32(b[i+12:]))
}

// secondCentral is where the second central header of a sound archive starts.
func secondCentral(t *testing.T, b []byte) int {
	off := centralOffset(t, b)
	return off + 46 + int(binary.LittleEndian.Uint16(b[off+28:])) + int(binary.LittleEndian.Uint16(b[off+30:])) + int(binary.LittleEndian.Uint16(b[off+32:]))
}

// lastDataOffset is where the data of the last entry with data starts.
func lastDataOffset(t *testing.T, b []byte) int {
	r, err := zip.NewReader(bytes.NewReader(b), int64(len(b)))
	if err != nil {
		t.Fatal(err)
	}
	for i := len(r.File) - 1; i >= 0; i-- {
		f := r.File[i]
		if f.CompressedSize64 == 0 {
			continue
		}
		off, err := f.DataOffset()
		if err != nil {
			t.Fatal(err)
		}
		return int(off)
	}
	t.Fatal("no entry with data")
	return 0
}
