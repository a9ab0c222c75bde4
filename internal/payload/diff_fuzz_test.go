package payload_test

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// FuzzReadDiff reads every input with archive/zip and with payload.Read and
// fails where they disagree on what the JAR says: if archive/zip opens the
// archive and reads the manifest, ours reads the same main attributes; if
// archive/zip refuses, ours refuses. The exceptions are the places where
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
//     archive/zip reads relative to a negative base. Ours must refuse.
//   - policyDuplicate: with two entries named META-INF/MANIFEST.MF, JarFile
//     reads the last (raw-two-manifests). Ours reads one of them or
//     refuses.
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
		case stdErr != nil:
			if j.Err == nil {
				t.Fatalf("archive/zip refuses (%v); ours reads %v", stdErr, attrs(j.Manifest))
			}
			return
		case want.cen:
			if j.Err == nil {
				t.Fatalf("JarFile refuses a central header here (policyCEN); ours reads %v", attrs(j.Manifest))
			}
			return
		case want.parseErr != nil:
			if j.Err == nil {
				t.Fatalf("our parser refuses the manifest archive/zip reads (%v); Read admits %v", want.parseErr, attrs(j.Manifest))
			}
			return
		case j.Err != nil:
			t.Fatalf("archive/zip reads manifest %q; ours refuses: %v", want.raw, j.Err)
		}
		got := attrs(j.Manifest)
		if len(want.candidates) > 1 {
			for _, c := range want.candidates {
				if equalAttrs(c, got) {
					return // policyDuplicate
				}
			}
			t.Fatalf("%d manifests; ours reads none of them: %v", len(want.candidates), got)
		}
		if !equalAttrs(want.attrs, got) {
			t.Fatalf("archive/zip reads manifest %v; ours %v", want.attrs, got)
		}
	})
}

// errCount marks an archive archive/zip refuses only for its entry count.
var errCount = errors.New("end record entry count differs from the central directory")

type stdReading struct {
	raw        []byte
	attrs      map[string]string // nil without a manifest
	parseErr   error
	candidates []map[string]string
	cen        bool // a central header JarFile refuses (policyCEN)
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
	var exact, folded []*zip.File
	for _, f := range zr.File {
		if f.Method != zip.Store && f.Method != zip.Deflate || f.Flags&1 != 0 || badExtra(f.Extra) {
			r.cen = true
		}
		switch {
		case f.Name == "META-INF/MANIFEST.MF":
			exact = append(exact, f)
		case strings.EqualFold(f.Name, "META-INF/MANIFEST.MF"):
			folded = append(folded, f)
		}
	}
	files := exact
	if len(files) == 0 {
		files = folded
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
		raw, err := io.ReadAll(rc)
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
		r.candidates = append(r.candidates, r.attrs)
	}
	if len(files) > 1 {
		r.parseErr = nil // policyDuplicate decides
		if len(r.candidates) == 0 {
			r.parseErr = errors.New("no duplicate manifest parses")
		}
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
	end := bytes.LastIndex(data, []byte("PK\x05\x06"))
	if end < 0 || end+22 > len(data) {
		return false
	}
	size := int64(binary.LittleEndian.Uint32(data[end+12:]))
	off := int64(binary.LittleEndian.Uint32(data[end+16:]))
	if size == 0xffffffff || off == 0xffffffff {
		return false // ZIP64: left to the corpus
	}
	return int64(end)-size-off < 0
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
// plain end record (ZIP64 archives are left alone).
func fixCount(data []byte) []byte {
	end := bytes.LastIndex(data, []byte("PK\x05\x06"))
	if end < 0 || end+22 > len(data) {
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
	if n > 0xfffe {
		return nil
	}
	fixed := append([]byte(nil), data...)
	binary.LittleEndian.PutUint16(fixed[end+8:], uint16(n))
	binary.LittleEndian.PutUint16(fixed[end+10:], uint16(n))
	return fixed
}

func attrs(m *payload.Manifest) map[string]string {
	if m == nil {
		return nil
	}
	out := map[string]string{}
	for k, v := range m.Attributes() {
		out[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	return out
}

func equalAttrs(a, b map[string]string) bool {
	if (a == nil) != (b == nil) || len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}
