package payload_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// FuzzReadDiff reads every input with archive/zip and with payload.Read and
// fails where they disagree on what the JAR says: if archive/zip opens the
// archive and reads the manifest, ours reads the same main attributes, or
// refuses by a named policy. When archive/zip refuses, the JVM may still
// read the archive (see below), so that direction is left to the JVM
// corpus; here ours only must not panic or hang. The exceptions are the places where
// the JVM's JarFile (which decides, see the contract) differs from
// archive/zip; each is a named policy below with the JVM fact behind it,
// confirmed by the jvmoracle corpus (make test-jvm):
//
//   - policyCRC: archive/zip checks CRC-32 when reading an entry, JarFile
//     does not (a manifest whose CRC is wrong loads: raw-manifest-crc-*).
//     Ours may read such a manifest.
//   - policyCount: archive/zip refuses an end record whose entry count
//     differs from the central directory's, JarFile counts the records
//     itself (raw-count-plus, raw-count-minus open with 6 entries). Ours
//     may read such an archive.
//   - policyCEN: JarFile refuses, when it opens the archive, a central
//     header whose extra field has a block running past the extra length
//     (raw-bad-central-extra), whose method is neither stored nor deflated
//     (raw-method-12) or that is flagged encrypted (raw-encrypted-flag);
//     archive/zip opens these. Ours must refuse them, as JarFile does.
//   - policyBase: JarFile finds the central directory at the end record
//     minus the directory size and the first local header at that minus
//     the directory offset; when that lies before the file's start it
//     refuses ("invalid END header (bad central directory offset)"), where
//     archive/zip reads relative to a negative base; when no central
//     header starts there it refuses ("invalid CEN header (bad
//     signature)"), where archive/zip tries the directory offset as it
//     stands; when bytes follow the end record and no central and local
//     header start where it says, JarFile does not trust it, where
//     archive/zip does. Ours must refuse. And where the first local
//     header would lie after the file's start, archive/zip reads the
//     directory at the offset as it stands whenever a central header
//     starts there (prefix-holds-directory); JarFile reads the implied
//     one. Ours must not read a manifest archive/zip does not.
//   - policySize: JarFile reads a manifest of up to 64 KiB by the size
//     its central header declares, exactly that many bytes; archive/zip
//     refuses an entry whose data runs longer. This oracle reads as
//     JarFile does.
//   - policyEndSearch: an end record followed by bytes and pointing at no
//     directory is not trusted by JarFile, which looks further back for
//     another; archive/zip refuses the archive. Not compared here.
//   - policyEndAlone: an end record at the file's first byte is an empty
//     archive to JarFile whatever its fields say; archive/zip refuses one
//     whose fields are nonsense. Ours reads it as empty.
//   - JarFile reads central records to the directory's end and refuses a
//     bad one; archive/zip stops at the first bad record once it has as
//     many as the end record counts (policyCEN too).
//   - JarFile refuses an entry name that is not UTF-8 ("invalid CEN header
//     (bad entry name)"); archive/zip reads it (policyCEN too).
//   - With several entries named META-INF/MANIFEST.MF in any case, JarFile
//     reads the last (raw-two-manifests): so does this oracle.
//
// A manifest our parser refuses makes ours refuse too (the parser has its
// own fuzz target and tests).
func FuzzReadDiff(f *testing.F) {
	for _, s := range jarSeeds() {
		f.Add(s)
	}
	base := testkit.JAR(testkit.Manifest("StreamFusion-Payload", "core", "StreamFusion-Version", "0.1.0"),
		testkit.Entry{Name: "tech/streamfusion/X.class", Data: []byte("class")},
		testkit.Entry{Name: "META-INF/native/linux-x86_64/libstreamfusion_core.so", Data: []byte("elf"), Store: true})
	f.Add(base)
	f.Add(append([]byte("#!/bin/sh\nexec java -jar \"$0\"\n"), base...))
	f.Add(append(append([]byte(nil), base...), "junk"...))
	// Its own entries and directory prepended, the real directory's second
	// record broken: archive/zip reads the copy at the raw offset, JarFile
	// refuses (FuzzReadDiff/8e6e90fa4c87d71b, the prefix-holds-directory
	// cases of the JVM corpus).
	endAt := bytes.LastIndex(base, []byte("PK\x05\x06"))
	cen := int(binary.LittleEndian.Uint32(base[endAt+16:]))
	prefix := cen + int(binary.LittleEndian.Uint32(base[endAt+12:]))
	shadowed := append(base[:prefix:prefix], base...)
	shadowed[prefix+cen+46+int(binary.LittleEndian.Uint16(base[cen+28:]))+int(binary.LittleEndian.Uint16(base[cen+30:]))+int(binary.LittleEndian.Uint16(base[cen+32:]))] ^= 0xff
	f.Add(shadowed)
	var commented bytes.Buffer
	w := zip.NewWriter(&commented)
	mf, _ := w.Create("META-INF/MANIFEST.MF")
	io.WriteString(mf, "Manifest-Version: 1.0\r\nStreamFusion-Version: 0.1.0\r\n\r\n")
	w.SetComment("a comment")
	w.Close()
	f.Add(commented.Bytes())

	f.Fuzz(func(t *testing.T, data []byte) {
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/fuzz.jar", payload.Options{})
		want, stdErr := stdManifest(data)
		if errors.Is(stdErr, errCount) {
			// policyCount: JarFile reads it as archive/zip does with the
			// count fixed.
			want, stdErr = stdManifest(fixCount(data))
		}
		switch {
		case stdErr != nil && bytes.HasPrefix(data, []byte("PK\x05\x06")) && j.Err == nil:
			// policyEndAlone: an end record at offset 0 is an empty
			// archive to JarFile, whatever its fields say (endonly.jar
			// opens with 0 entries); archive/zip refuses it.
			if j.Entries != 0 || j.Manifest != nil {
				t.Fatalf("an end record at offset 0 reads as %d entries", j.Entries)
			}
			return
		case stdErr != nil:
			// archive/zip refuses archives JarFile reads in more ways than
			// this oracle can model (an end record it does not trust, a
			// search further back, saturated sizes without a ZIP64 field
			// on an entry never read, ...). Whether ours then reads what
			// the JVM reads is decided by the JVM corpus (make test-jvm),
			// not here: ours only must not panic or hang.
			return
		case want.stopped:
			// archive/zip stopped reading the directory at a record with
			// a saturated size or offset and no ZIP64 field, which JarFile
			// reads on (the first-size-saturated cases of the JVM corpus,
			// FuzzReadDiff/7bd8ec401edca86e): what it finds after is the
			// JVM corpus's to judge.
			return
		case want.untrusted:
			// policyEndSearch: JarFile looks further back for an end
			// record and may read an archive archive/zip never sees
			// (FuzzReadDiff/ad9498dd0fb58e8f: JarFile reads 11 entries and
			// the manifest from an earlier end record).
			return
		case want.cen:
			// JarFile may refuse this archive (policyCEN, policyBase), and
			// ours may read it empty where the heuristics above misjudge
			// JarFile (an end record it skips): the JVM corpus decides.
			// Ours must not read a manifest archive/zip does not.
			if j.Err == nil && j.Manifest != nil && !equalAttrs(want.attrs, attrs(j.Manifest)) {
				t.Fatalf("ours reads a manifest archive/zip does not: %v", attrs(j.Manifest))
			}
			return
		case want.parseErr != nil:
			if j.Err == nil {
				t.Fatalf("our parser refuses the manifest archive/zip reads (%v); Read admits %v", want.parseErr, attrs(j.Manifest))
			}
			return
		case j.Err != nil && strings.Contains(j.Err.Error(), "ZIP64"):
			// JarFile refuses ZIP64 extra fields of impossible sizes when it
			// opens the archive; archive/zip reads on.
			return
		case j.Err != nil:
			t.Fatalf("archive/zip reads manifest %q; ours refuses: %v", want.raw, j.Err)
		}
		if got := attrs(j.Manifest); !equalAttrs(want.attrs, got) {
			t.Fatalf("archive/zip reads manifest %v; ours %v", want.attrs, got)
		}
	})
}

// errCount marks an archive archive/zip refuses only for its entry count.
var errCount = errors.New("end record entry count differs from the central directory")

type stdReading struct {
	raw      []byte
	attrs    map[string]string // nil without a manifest
	parseErr error
	cen      bool // a central header JarFile refuses (policyCEN)
	// untrusted: JarFile does not trust the last end record and looks
	// further back (policyEndSearch); what it finds there is the JVM
	// corpus's to judge.
	untrusted bool
	// stopped: archive/zip stopped at a central record JarFile reads
	// (a saturated size or offset without a ZIP64 field).
	stopped bool
}

// stdManifest reads the manifest as archive/zip does, looking it up as
// JarFile does: the exact name, else a name equal to it ignoring case.
func stdManifest(data []byte) (stdReading, error) {
	var r stdReading
	zr, err := zip.NewReader(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		if countOnly(data) {
			return r, errCount
		}
		return r, err
	}
	if negativeBase(data) {
		r.cen = true // policyBase: JarFile refuses, so must ours
	}
	if rawDirectory(data) {
		r.cen = true // policyBase: archive/zip reads a directory JarFile does not
	}
	if !endVerified(data) {
		r.cen, r.untrusted = true, true // policyBase, policyEndSearch
	}
	if !directoryFilled(data, zr) {
		r.cen = true // policyCEN: JarFile reads every record of the directory
		r.stopped = stoppedAtSaturated(data, zr)
	}
	var files []*zip.File
	for _, f := range zr.File {
		if f.Method != zip.Store && f.Method != zip.Deflate || f.Flags&1 != 0 || badExtra(f.Extra) || !utf8.ValidString(f.Name) {
			r.cen = true
		}
		if strings.EqualFold(f.Name, "META-INF/MANIFEST.MF") {
			files = append(files[:0], f) // JarFile reads the last, whatever its case
		}
	}
	if len(files) == 0 {
		return r, nil
	}
	for _, f := range files {
		rc, err := f.Open()
		if err != nil {
			if r.cen {
				return r, nil
			}
			return r, err
		}
		// policySize: JarFile reads a manifest of at most 64 KiB by its
		// declared size, exactly that many bytes, more data unread
		// (archive/zip refuses data longer than declared).
		var raw []byte
		if n := f.UncompressedSize64; n <= 0xffff {
			raw = make([]byte, n)
			_, err = io.ReadFull(rc, raw)
		} else {
			raw, err = io.ReadAll(rc)
		}
		rc.Close()
		if err != nil && !errors.Is(err, zip.ErrChecksum) { // policyCRC
			if r.cen {
				return r, nil
			}
			return r, err
		}
		m, perr := payload.ParseManifest(bytes.NewReader(raw))
		if perr != nil {
			r.parseErr = perr
			r.raw = raw
			continue
		}
		r.raw, r.attrs = raw, attrs(&m)
	}
	return r, nil
}

// badExtra tells whether an extra field has a block running past its end.
func badExtra(b []byte) bool {
	for len(b) >= 4 {
		n := int(binary.LittleEndian.Uint16(b[2:]))
		if 4+n > len(b) {
			return true
		}
		b = b[4+n:]
	}
	return false // JarFile ignores fewer than 4 trailing bytes
}

// negativeBase tells whether the plain end record puts the archive's
// start before the file's (JarFile: cenpos - cenoff < 0).
func negativeBase(data []byte) bool {
	end := lastEnd(data)
	if end < 0 {
		return false
	}
	size := int64(binary.LittleEndian.Uint32(data[end+12:]))
	off := int64(binary.LittleEndian.Uint32(data[end+16:]))
	if (size == 0xffffffff || off == 0xffffffff) && end >= 20 && bytes.HasPrefix(data[end-20:], []byte("PK\x06\x07")) {
		return false // ZIP64: left to the corpus
	}
	// A saturated field without a ZIP64 locator before the end record is
	// read as it stands, by JarFile and archive/zip alike
	// (FuzzReadDiff/3a988f0af8be20b0: a directory offset of 0xffffffff,
	// JarFile refuses "invalid END header (bad central directory offset)").
	if int64(end)-size-off < 0 {
		return true
	}
	// archive/zip falls back to reading the directory at its raw offset
	// when the one the end record implies is not there; JarFile does not
	// (the jdk-jar+prepend-script cases read only with the implied one).
	cen := int64(end) - size
	return size > 0 && cen >= 0 && !bytes.HasPrefix(data[cen:], []byte("PK\x01\x02"))
}

// rawDirectory tells whether archive/zip reads the directory at the end
// record's offset as it stands, not where the end record implies: it does
// so whenever the implied start of the archive is after the file's and a
// central header starts at the raw offset (JarFile never does; the
// prefix-holds-directory cases of the JVM corpus,
// FuzzReadDiff/8e6e90fa4c87d71b).
func rawDirectory(data []byte) bool {
	end := lastEnd(data)
	if end < 0 {
		return false
	}
	size := int64(binary.LittleEndian.Uint32(data[end+12:]))
	off := int64(binary.LittleEndian.Uint32(data[end+16:]))
	return int64(end)-size-off > 0 && off+46 <= int64(len(data)) && bytes.HasPrefix(data[off:], []byte("PK\x01\x02"))
}

// endVerified tells whether JarFile would trust the last end record: one
// whose comment reaches exactly to the end of the file, or, with bytes
// after it, one whose directory and first local header start with their
// signatures. archive/zip trusts any whose comment fits in the file.
func endVerified(data []byte) bool {
	end := lastEnd(data)
	if end < 0 {
		return true
	}
	if end+22+int(binary.LittleEndian.Uint16(data[end+20:])) == len(data) {
		return true
	}
	cen := int64(end) - int64(binary.LittleEndian.Uint32(data[end+12:]))
	loc := cen - int64(binary.LittleEndian.Uint32(data[end+16:]))
	return loc >= 0 && bytes.HasPrefix(data[cen:], []byte("PK\x01\x02")) && bytes.HasPrefix(data[loc:], []byte("PK\x03\x04"))
}

// directoryFilled tells whether the records archive/zip read fill the
// central directory the plain end record declares. archive/zip stops at
// the first bad record once it has as many as the end record counts;
// JarFile reads records to the directory's end and refuses a bad one.
func directoryFilled(data []byte, zr *zip.Reader) bool {
	end := lastEnd(data)
	if end < 0 {
		return true
	}
	count := binary.LittleEndian.Uint16(data[end+10:])
	size := int64(binary.LittleEndian.Uint32(data[end+12:]))
	off := binary.LittleEndian.Uint32(data[end+16:])
	// ZIP64 only where the end record saturates a field, as both readers
	// look for it (archive/zip also on a directory size of 0xffff): a ZIP64
	// end record's signature elsewhere is bytes like any other
	// (FuzzReadDiff/ee7b4e38238f9d61: one inside a directory JarFile
	// refuses at its third record).
	if count == 0xffff || size == 0xffff || size == 0xffffffff || off == 0xffffffff {
		return true // ZIP64: left to the corpus
	}
	var n int64
	for _, f := range zr.File {
		n += 46 + int64(len(f.Name)+len(f.Extra)+len(f.Comment))
	}
	return n == size
}

// stoppedAtSaturated tells whether the record after those archive/zip
// read is a central header whose compressed size or local header offset
// is saturated without a ZIP64 extra field: archive/zip refuses such a
// record and stops there, JarFile reads it and goes on.
func stoppedAtSaturated(data []byte, zr *zip.Reader) bool {
	end := lastEnd(data)
	if end < 0 {
		return false
	}
	at := int64(end) - int64(binary.LittleEndian.Uint32(data[end+12:]))
	if rawDirectory(data) {
		at = int64(binary.LittleEndian.Uint32(data[end+16:]))
	}
	for _, f := range zr.File {
		at += 46 + int64(len(f.Name)+len(f.Extra)+len(f.Comment))
	}
	if at < 0 || at+46 > int64(len(data)) || !bytes.HasPrefix(data[at:], []byte("PK\x01\x02")) {
		return false
	}
	h := data[at:]
	if binary.LittleEndian.Uint32(h[20:]) != 0xffffffff && binary.LittleEndian.Uint32(h[42:]) != 0xffffffff {
		return false
	}
	nl, el := int64(binary.LittleEndian.Uint16(h[28:])), int64(binary.LittleEndian.Uint16(h[30:]))
	if at+46+nl+el > int64(len(data)) {
		return false
	}
	for x := h[46+nl : 46+nl+el]; len(x) >= 4; {
		if binary.LittleEndian.Uint16(x) == 1 {
			return false // a ZIP64 field: archive/zip stopped for another reason
		}
		n := 4 + int(binary.LittleEndian.Uint16(x[2:]))
		if n > len(x) {
			break
		}
		x = x[n:]
	}
	return true
}

// countOnly tells whether data opens with archive/zip once the end
// record's entry counts are set to what the central directory holds.
func countOnly(data []byte) bool {
	fixed := fixCount(data)
	if fixed == nil {
		return false
	}
	_, err := zip.NewReader(bytes.NewReader(fixed), int64(len(fixed)))
	return err == nil
}

// fixCount returns data with the end record's entry counts set to the
// number of central headers its directory holds, or nil when it has no
// plain end record (ZIP64 archives are left alone) or when the headers do
// not fill the directory (JarFile refuses the bytes after the last one).
func fixCount(data []byte) []byte {
	end := lastEnd(data)
	if end < 0 {
		return nil
	}
	size := int64(binary.LittleEndian.Uint32(data[end+12:]))
	off := int64(binary.LittleEndian.Uint32(data[end+16:]))
	start := int64(end) - size
	if start < 0 || start < off || size > int64(end) {
		return nil
	}
	cd := data[start:end]
	n := 0
	for len(cd) >= 46 && binary.LittleEndian.Uint32(cd) == 0x02014b50 {
		l := 46 + int(binary.LittleEndian.Uint16(cd[28:])) + int(binary.LittleEndian.Uint16(cd[30:])) + int(binary.LittleEndian.Uint16(cd[32:]))
		if l > len(cd) {
			return nil
		}
		cd = cd[l:]
		n++
	}
	if n > 0xfffe || len(cd) != 0 {
		return nil // JarFile reads records to the directory's end: bytes after the last are a bad signature
	}
	fixed := append([]byte(nil), data...)
	binary.LittleEndian.PutUint16(fixed[end+8:], uint16(n))
	binary.LittleEndian.PutUint16(fixed[end+10:], uint16(n))
	return fixed
}

// lastEnd returns the offset of the last end record signature with room
// for a whole record after it, as JarFile and archive/zip look for one (a
// signature in the file's last 21 bytes is never a record), or -1.
func lastEnd(data []byte) int {
	return bytes.LastIndex(data[:max(0, len(data)-18)], []byte("PK\x05\x06"))
}
