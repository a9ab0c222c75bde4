package payload_test

// Finding the archive and reading its central directory and local headers,
// as JarFile does (docs/jar-reading.md, "A JAR in lib, usrlib or plugins").
// Each damaged or unusual archive is either read as the JVM reads it or
// refused with an error that says what is wrong, never a panic, a hang or a
// guess; make test-jvm checks the same shapes against the JVM.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const shLauncher = "#!/bin/sh\nexec java -jar \"$0\" \"$@\"\n"

// The archive is not found, or its end record is not trusted.
func TestArchiveNotFound(t *testing.T) {
	t.Parallel()
	good := testkit.Extension("kafka", "2.2", "0.1.0").Bytes()
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"empty file", nil, "too short"},
		{"not a ZIP: a text file", []byte("this is a text file, not a JAR\n"), "not a valid ZIP archive"},
		{"not a ZIP: an HTML error page saved as .jar", []byte("<html><body>404 Not Found</body></html>"), "not a valid ZIP archive"},
		{"truncated JAR", good[:len(good)-100], "not a valid ZIP archive"},
		{"half a JAR", good[:len(good)/2], "no end-of-central-directory record"},
		{"end record cut", good[:len(good)-4], "no end-of-central-directory record"},
		{"stub prepended, offsets not shifted", append([]byte(shLauncher), good[:len(good)-22]...), "no end-of-central-directory record"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, c.data, c.want)
		})
	}
}

// One bad central record refuses the whole JAR, as JarFile refuses it when
// it opens the file.
func TestDirectoryRecordRefused(t *testing.T) {
	t.Parallel()
	good := testkit.Extension("kafka", "2.2", "0.1.0").Bytes()
	manifestRecord := func(f func(b []byte, at int)) []byte {
		return messWith(good, func(b []byte) []byte {
			f(b, centralRecord(b, "META-INF/MANIFEST.MF"))
			return b
		})
	}
	for _, c := range []struct {
		name string
		data []byte
		want string
	}{
		{"entry name not UTF-8", manifestRecord(func(b []byte, at int) { b[at+46+9] = 0xff }), "is not UTF-8"},
		{"extra field block longer than the field", withCentralExtra(good, "META-INF/MANIFEST.MF", []byte{0x55, 0x54, 9, 0, 1, 2, 3, 4}),
			"extra field 0x5455 declares 9 bytes, 4 remain"},
		{"ZIP64 extra field of an odd size", withCentralExtra(good, "META-INF/MANIFEST.MF", []byte{1, 0, 6, 0, 1, 2, 3, 4, 5, 6}),
			"ZIP64 extra field of 6 bytes"},
		{"encrypted entry", manifestRecord(func(b []byte, at int) { b[at+8] |= 1 }), "is encrypted"},
		{"unknown compression method", manifestRecord(func(b []byte, at int) {
			binary.LittleEndian.PutUint16(b[at+10:], 12) // bzip2
		}), "compression method 12"},
		{"local header offset past the data", manifestRecord(func(b []byte, at int) {
			binary.LittleEndian.PutUint32(b[at+42:], uint32(len(b)))
		}), "outside the 2016-byte file"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, c.data, c.want)
		})
	}
}

// Archives the JVM reads though they are not as a ZIP writer would write
// them; each reads with its manifest and every entry counted.
func TestArchiveLayoutsRead(t *testing.T) {
	t.Parallel()
	jar := testkit.JAR(testkit.Manifest("Implementation-Version", "2.2.1"), testkit.Entry{Name: "a.class", Data: []byte("x")})
	zip64 := zip64JAR(t)
	for _, c := range []struct {
		name    string
		data    []byte
		entries int
	}{
		{"a launch script prepended (Spring Boot)", append([]byte(shLauncher), jar...), 3},
		{"junk appended", append(append([]byte(nil), jar...), "JUNK JUNK JUNK"...), 3},
		{"an archive comment", withComment(append([]byte(nil), jar...), "built by hand"), 3},
		{"entry count disagrees with the directory: JarFile counts the records", messWith(jar, func(b []byte) []byte {
			end := bytes.LastIndex(b, []byte("PK\x05\x06"))
			binary.LittleEndian.PutUint16(b[end+8:], 7)
			binary.LittleEndian.PutUint16(b[end+10:], 7)
			return b
		}), 3},
		{"local header names another entry: names are not compared", messWith(jar, func(b []byte) []byte {
			at := binary.LittleEndian.Uint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+42:])
			copy(b[at+30:], "META-INF/MANIFEST.XX")
			return b
		}), 3},
		{"ZIP64 end records (70,000 entries)", zip64, 70_001},
		{"a ZIP64 end record with an extensible data sector", withZIP64Sector(zip64, "an extensible data sector"), 70_001},
		{"exactly 65,535 entries without ZIP64 records: the saturated count stands", func() []byte {
			full := testkit.BigJAR(65_534, 0, testkit.Manifest("Implementation-Version", "2.2.1"))
			require.False(t, bytes.Contains(full, []byte("PK\x06\x06")))
			return full
		}(), 65_535},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := requireAttr(t, c.data, "Implementation-Version", "2.2.1")
			assert.Equal(t, c.entries, j.Entries)
		})
	}
}

// zip64JAR has more than 65,535 entries: archive/zip writes the ZIP64 end
// records.
func zip64JAR(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	f, err := w.Create("META-INF/MANIFEST.MF")
	require.NoError(t, err)
	_, _ = f.Write([]byte(testkit.Manifest("Implementation-Version", "2.2.1")))
	for i := range 70_000 {
		_, err := w.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("c/%05d", i), Method: zip.Store})
		require.NoError(t, err)
	}
	require.NoError(t, w.Close())
	require.True(t, bytes.Contains(buf.Bytes(), []byte("PK\x06\x06")), "ZIP64 end record written")
	return buf.Bytes()
}

// withZIP64Sector gives the ZIP64 end record an extensible data sector: the
// record is longer than 56 bytes, and the directory still ends where it
// starts.
func withZIP64Sector(data []byte, sector string) []byte {
	end64 := bytes.LastIndex(data, []byte("PK\x06\x06"))
	ext := append(append(append([]byte(nil), data[:end64+56]...), sector...), data[end64+56:]...)
	binary.LittleEndian.PutUint64(ext[end64+4:], binary.LittleEndian.Uint64(ext[end64+4:])+uint64(len(sector)))
	return ext
}

// The central directory is read in chunks (payload.CDChunk): a record may
// start, or its name end, anywhere across a chunk's end. Shifting every
// record by one byte at a time moves the boundary through every position of
// a record.
func TestDirectoryRecordsAcrossChunkBoundaries(t *testing.T) {
	t.Parallel()
	n := payload.CDChunk/81 + 800 // 81-byte records: the directory crosses a chunk end
	for shift := range 82 {
		t.Run(fmt.Sprintf("records shifted by %d", shift), func(t *testing.T) {
			t.Parallel()
			data := testkit.BigJAR(n, 0, testkit.Manifest("Implementation-Version", "2.2.1"),
				testkit.Entry{Name: strings.Repeat("s", shift+1), Data: []byte("x")})
			j := requireAttr(t, data, "Implementation-Version", "2.2.1")
			require.Equal(t, n+2, j.Entries)
		})
	}
	t.Run("the largest record the JVM accepts, across a chunk end", func(t *testing.T) {
		t.Parallel()
		// 64 KiB with its name and extra field, starting 100 bytes before
		// a chunk's end: fillers after the manifest's record (66 bytes)
		// bring it there.
		name := func(recordLen int) string { return strings.Repeat("f", recordLen-46) }
		before := payload.CDChunk - 100 - 66
		var entries []testkit.Entry
		for rest := before; rest > 0; {
			size := min(rest, 60_000)
			if rest-size > 0 && rest-size < 100 {
				size -= 100 // no filler too short to hold its own header
			}
			entries = append(entries, testkit.Entry{Name: name(size)})
			rest -= size
		}
		entries = append(entries, testkit.Entry{Name: strings.Repeat("n", 0xffff-46)})
		long := testkit.BigJAR(0, 0, "A: 1\r\n", entries...)
		j := requireAttr(t, long, "A", "1")
		assert.Equal(t, len(entries)+1, j.Entries)
	})
}
