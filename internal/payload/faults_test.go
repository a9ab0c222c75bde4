package payload_test

// The fault catalogue of docs/reliability.md, at the level of one JAR: each
// damaged or unusual archive is either read correctly or refused with an
// error that says what is wrong, never a panic, a hang or a guess.

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// messWith damages a copy of good.
func messWith(good []byte, f func(b []byte) []byte) []byte {
	return f(append([]byte(nil), good...))
}

// centralRecord returns the offset of the central directory record of name.
func centralRecord(b []byte, name string) int {
	for i := bytes.Index(b, []byte("PK\x01\x02")); i >= 0; {
		n := int(binary.LittleEndian.Uint16(b[i+28:]))
		if string(b[i+46:i+46+n]) == name {
			return i
		}
		j := bytes.Index(b[i+4:], []byte("PK\x01\x02"))
		if j < 0 {
			break
		}
		i += 4 + j
	}
	return -1
}

func TestFaultCatalogueRefusals(t *testing.T) {
	t.Parallel()
	good := testkit.Extension("kafka", "2.2", "0.1.0").Bytes()
	for _, c := range []struct {
		fault string
		data  []byte
		want  string
	}{
		{"truncated JAR", good[:len(good)-100], "not a valid ZIP archive"},
		{"half a JAR", good[:len(good)/2], "no end-of-central-directory record"},
		{"empty file", nil, "too short"},
		{"an HTML error page saved as .jar", []byte("<html><body>404 Not Found</body></html>"), "not a valid ZIP archive"},
		{"stub prepended, offsets not shifted", append([]byte("#!/bin/sh\nexec java -jar \"$0\" \"$@\"\n"), good[:len(good)-22]...), "no end-of-central-directory record"},
		{"entry name not UTF-8", messWith(good, func(b []byte) []byte {
			b[centralRecord(b, "META-INF/MANIFEST.MF")+46+9] = 0xff
			return b
		}), "is not UTF-8"},
		{"central extra field longer than declared", messWith(good, func(b []byte) []byte {
			return withCentralExtra(b, "META-INF/MANIFEST.MF", []byte{0x55, 0x54, 9, 0, 1, 2, 3, 4})
		}), "extra field 0x5455 declares 9 bytes, 4 remain"},
		{"ZIP64 extra field of an odd size", messWith(good, func(b []byte) []byte {
			return withCentralExtra(b, "META-INF/MANIFEST.MF", []byte{1, 0, 6, 0, 1, 2, 3, 4, 5, 6})
		}), "ZIP64 extra field of 6 bytes"},
		{"encrypted entry", messWith(good, func(b []byte) []byte {
			b[centralRecord(b, "META-INF/MANIFEST.MF")+8] |= 1
			return b
		}), "is encrypted"},
		{"manifest declaring 100 MiB", messWith(good, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+24:], 100<<20)
			return b
		}), "declares 104857600 bytes"},
		{"unknown compression method", messWith(good, func(b []byte) []byte {
			binary.LittleEndian.PutUint16(b[centralRecord(b, "META-INF/MANIFEST.MF")+10:], 12) // bzip2
			return b
		}), "compression method 12"},
		{"local header offset past the data", messWith(good, func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+42:], uint32(len(b)))
			return b
		}), "outside the 2000-byte file"},
		{"manifest without ': '", testkit.JAR("Manifest-Version 1.0\r\n"), "malformed manifest"},
		{"manifest line of 512 bytes", testkit.JAR("Manifest-Version: 1.0\r\nX: " + strings.Repeat("y", 509) + "\n"), "line 2 is longer than 511 bytes"},
		{"manifest section without Name", testkit.JAR("Manifest-Version: 1.0\r\n\r\nBogus: x\r\n"), "without \"Name: \""},
		{"manifest attribute name not ASCII", testkit.JAR("Manifest-Version: 1.0\r\nCaf\xc3\xa9: x\r\n"), "is not an attribute name"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			j := payload.Read(bytes.NewReader(c.data), int64(len(c.data)), "/opt/flink/lib/fault.jar", payload.Options{})
			require.Error(t, j.Err)
			assert.Contains(t, j.Err.Error(), c.want)
		})
	}
}

func TestFaultCatalogueReadCorrectly(t *testing.T) {
	t.Parallel()
	mf := func(m string) []byte { return testkit.JAR(m, testkit.Entry{Name: "a.class", Data: []byte("x")}) }
	for _, c := range []struct {
		fault string
		data  []byte
		attr  string
		want  string
	}{
		{"continuation lines", mf("Manifest-Version: 1.0\r\nStreamFusion-Module: streamfusion-avro-confluent-reg\r\n istry\r\n\r\n"), "StreamFusion-Module", "streamfusion-avro-confluent-registry"},
		{"CR-only line ends", mf("Manifest-Version: 1.0\rStreamFusion-Version: 0.1.0\r\r"), "streamfusion-version", "0.1.0"},
		{"LF line ends", mf("Manifest-Version: 1.0\nImplementation-Version: 2.2.1\n"), "Implementation-Version", "2.2.1"},
		{"72-byte lines folded by the jar tool", mf(testkit.Manifest("StreamFusion-Requires", strings.Repeat("streamfusion-avro ", 12))), "StreamFusion-Requires", strings.TrimSpace(strings.Repeat("streamfusion-avro ", 12))},
		{"non-UTF-8 bytes elsewhere", mf("Manifest-Version: 1.0\r\nImplementation-Vendor: Caf\xe9\r\nImplementation-Version: 1.0\r\n"), "Implementation-Version", "1.0"},
		{"per-entry sections after the main one", mf("Manifest-Version: 1.0\r\nA: main\r\n\r\nName: x.class\r\nA: entry\r\n"), "A", "main"},
		{"non-UTF-8 value, read as the JVM decodes it", mf("Manifest-Version: 1.0\r\nA: caf\xe9 \xe2\x82!\r\n"), "A", "caf\ufffd \ufffd!"},
		{"a NUL byte in a value", mf("Manifest-Version: 1.0\r\nA: x\x00y\r\n"), "A", "x\x00y"},
		{"the same attribute twice: the last one", mf("Manifest-Version: 1.0\r\nA: one\r\na: two\r\n"), "A", "two"},
		{"two manifests: JarFile reads the last", testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte("A: 2\r\n")}), "A", "2"},
		{"manifests differing in case: JarFile reads the last", testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "meta-inf/manifest.mf", Data: []byte("A: 2\r\n")}), "A", "2"},
		{"a launch script prepended (Spring Boot)", append([]byte("#!/bin/sh\nexec java -jar \"$0\" \"$@\"\n"), mf(testkit.Manifest("A", "1"))...), "A", "1"},
		{"junk appended", append(mf(testkit.Manifest("A", "1")), "JUNK JUNK JUNK"...), "A", "1"},
		{"an archive comment", withComment(mf(testkit.Manifest("A", "1")), "built by hand"), "A", "1"},
		{"entry count disagrees with the directory", messWith(mf(testkit.Manifest("A", "1")), func(b []byte) []byte {
			end := bytes.LastIndex(b, []byte("PK\x05\x06"))
			binary.LittleEndian.PutUint16(b[end+8:], 7)
			binary.LittleEndian.PutUint16(b[end+10:], 7)
			return b
		}), "A", "1"},
		{"local header names another entry", messWith(mf(testkit.Manifest("A", "1")), func(b []byte) []byte {
			at := binary.LittleEndian.Uint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+42:])
			copy(b[at+30:], "META-INF/MANIFEST.XX")
			return b
		}), "A", "1"},
	} {
		t.Run(c.fault, func(t *testing.T) {
			t.Parallel()
			j := payload.Read(bytes.NewReader(c.data), int64(len(c.data)), "/x.jar", payload.Options{})
			require.NoError(t, j.Err)
			got, ok := j.Manifest.Get(c.attr)
			assert.True(t, ok)
			assert.Equal(t, c.want, got)
		})
	}
}

func TestManifestLastLineWithoutEndIsIgnored(t *testing.T) {
	t.Parallel()
	data := testkit.JAR("Manifest-Version: 1.0\nImplementation-Version: 2.2.1")
	j := payload.Read(bytes.NewReader(data), int64(len(data)), "/x.jar", payload.Options{})
	require.NoError(t, j.Err)
	_, ok := j.Manifest.Get("Implementation-Version")
	assert.False(t, ok, "the JVM drops a last line without a line end")
	v, _ := j.Manifest.Get("Manifest-Version")
	assert.Equal(t, "1.0", v)
}

// withCentralExtra gives the central record of name the extra field extra.
func withCentralExtra(b []byte, name string, extra []byte) []byte {
	i := centralRecord(b, name)
	n := int(binary.LittleEndian.Uint16(b[i+28:]))
	old := int(binary.LittleEndian.Uint16(b[i+30:]))
	binary.LittleEndian.PutUint16(b[i+30:], uint16(len(extra)))
	at := i + 46 + n
	out := append(append(append([]byte(nil), b[:at]...), extra...), b[at+old:]...)
	end := bytes.LastIndex(out, []byte("PK\x05\x06"))
	size := binary.LittleEndian.Uint32(out[end+12:])
	binary.LittleEndian.PutUint32(out[end+12:], size+uint32(len(extra)-old))
	return out
}

// withComment adds an archive comment.
func withComment(b []byte, comment string) []byte {
	end := bytes.LastIndex(b, []byte("PK\x05\x06"))
	binary.LittleEndian.PutUint16(b[end+20:], uint16(len(comment)))
	return append(b, comment...)
}

func TestZIP64AndDataDescriptors(t *testing.T) {
	t.Parallel()
	// More than 65,535 entries: archive/zip writes the ZIP64 end records.
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
	data := buf.Bytes()
	require.True(t, bytes.Contains(data, []byte("PK\x06\x06")), "ZIP64 end record written")
	j := payload.Read(bytes.NewReader(data), int64(len(data)), "/zip64.jar", payload.Options{})
	require.NoError(t, j.Err)
	assert.Equal(t, 70_001, j.Entries)
	v, _ := j.Manifest.Get("Implementation-Version")
	assert.Equal(t, "2.2.1", v)

	// A ZIP64 end record with an extensible data sector: the record is
	// longer than 56 bytes, and the directory still ends where it starts.
	end64 := bytes.LastIndex(data, []byte("PK\x06\x06"))
	sector := []byte("an extensible data sector")
	ext := append(append(append([]byte(nil), data[:end64+56]...), sector...), data[end64+56:]...)
	binary.LittleEndian.PutUint64(ext[end64+4:], binary.LittleEndian.Uint64(ext[end64+4:])+uint64(len(sector)))
	j = payload.Read(bytes.NewReader(ext), int64(len(ext)), "/zip64-sector.jar", payload.Options{})
	require.NoError(t, j.Err)
	assert.Equal(t, 70_001, j.Entries)

	// Exactly 65,535 entries and no ZIP64 records: the saturated count is
	// the count.
	full := testkit.BigJAR(65_534, 0, testkit.Manifest("Implementation-Version", "2.2.1"))
	require.False(t, bytes.Contains(full, []byte("PK\x06\x06")))
	j = payload.Read(bytes.NewReader(full), int64(len(full)), "/65535.jar", payload.Options{})
	require.NoError(t, j.Err)
	assert.Equal(t, 65_535, j.Entries)

	// archive/zip writes deflated entries with data descriptors (bit 3):
	// the streamed embedded core reads its manifest's sizes and CRC from
	// the descriptor.
	loader := testkit.Loader("2.2", "0.1.0")
	core := *loader.Embedded
	nested := testkit.JAR("", testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(core.Manifest())}, testkit.Entry{Name: "first.bin", Data: bytes.Repeat([]byte("q"), 3000)})
	loc := bytes.Index(nested, []byte("META-INF/MANIFEST.MF")) - 30
	require.NotZero(t, binary.LittleEndian.Uint16(nested[loc+6:])&0x8, "the manifest uses a data descriptor")
	loader.Embedded = nil
	loader.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
	loader.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: nested}}
	data = loader.Bytes()
	j = payload.Read(bytes.NewReader(data), int64(len(data)), "/loader.jar", payload.Options{})
	require.NoError(t, j.Err)
	require.NotNil(t, j.Nested)
	require.NoError(t, j.Nested.Err)
	m, _ := j.Nested.Manifest.Get("StreamFusion-Module")
	assert.Equal(t, "streamfusion-core", m)
}

// pythonCore is a core as Python's zipfile writes one with ZIP_DEFLATED: a
// deflated META-INF/ directory entry (compressed size 2, size 0) and sizes
// in the local headers, before the manifest.
func pythonCore(t *testing.T) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	// archive/zip writes no data for a directory: name it META-INFx, then rename.
	dir, err := w.CreateRaw(&zip.FileHeader{Name: "META-INFx", Method: zip.Deflate, CompressedSize64: 2})
	require.NoError(t, err)
	_, err = dir.Write([]byte{3, 0}) // an empty final deflate block
	require.NoError(t, err)
	mf := []byte(testkit.Core("2.2", "0.1.0").Manifest())
	var packed bytes.Buffer
	fw, _ := flate.NewWriter(&packed, flate.BestCompression)
	_, _ = fw.Write(mf)
	require.NoError(t, fw.Close())
	m, err := w.CreateRaw(&zip.FileHeader{Name: "META-INF/MANIFEST.MF", Method: zip.Deflate, CRC32: crc32.ChecksumIEEE(mf),
		CompressedSize64: uint64(packed.Len()), UncompressedSize64: uint64(len(mf))})
	require.NoError(t, err)
	_, err = m.Write(packed.Bytes())
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return bytes.ReplaceAll(buf.Bytes(), []byte("META-INFx"), []byte("META-INF/"))
}

func TestNestedCoreAsPythonWritesIt(t *testing.T) {
	t.Parallel()
	core := pythonCore(t)
	for _, stored := range []bool{false, true} {
		loader := testkit.Loader("2.2", "0.1.0")
		loader.Embedded = nil
		loader.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
		loader.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: core, Store: stored}}
		data := loader.Bytes()
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/loader.jar", payload.Options{})
		require.NoError(t, j.Err)
		require.NotNil(t, j.Nested)
		require.NoError(t, j.Nested.Err, "stored=%v", stored)
		m, _ := j.Nested.Manifest.Get("StreamFusion-Module")
		assert.Equal(t, "streamfusion-core", m, "stored=%v", stored)
	}
}

// zeros returns a raw deflate stream that inflates to n zero bytes (n-1 a
// multiple of 258), written bit by bit with the fixed Huffman codes: a
// literal 0, then copies of 258 bytes at distance 1. Compressing that much
// with compress/flate takes minutes under the race detector.
func zeros(n int) []byte {
	var out []byte
	var acc uint64
	var bits uint
	put := func(v uint64, n uint) { // LSB first
		acc |= v << bits
		for bits += n; bits >= 8; bits -= 8 {
			out = append(out, byte(acc))
			acc >>= 8
		}
	}
	code := func(v uint64, n uint) { // Huffman codes go MSB first
		var r uint64
		for i := range n {
			r |= (v >> i & 1) << (n - 1 - i)
		}
		put(r, n)
	}
	put(1, 1)           // BFINAL
	put(1, 2)           // BTYPE 01: fixed Huffman codes
	code(0b00110000, 8) // literal 0
	for range (n - 1) / 258 {
		code(0b11000101, 8) // length code 285: 258 bytes
		code(0, 5)          // distance code 0: distance 1
	}
	code(0, 7) // end of block
	put(0, 7)  // flush
	return out
}

// bombCore is a core whose deflated META-INF/ entry inflates to about n
// bytes, before its manifest.
func bombCore(t *testing.T, n int) []byte {
	t.Helper()
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	data := zeros(n/258*258 + 1)
	// archive/zip writes no data for a directory: name it META-INFx, then rename.
	dir, err := w.CreateRaw(&zip.FileHeader{Name: "META-INFx", Method: zip.Deflate, CompressedSize64: uint64(len(data)), UncompressedSize64: uint64(n)})
	require.NoError(t, err)
	_, err = dir.Write(data)
	require.NoError(t, err)
	mf, err := w.Create("META-INF/MANIFEST.MF")
	require.NoError(t, err)
	_, err = mf.Write([]byte(testkit.Core("2.2", "0.1.0").Manifest()))
	require.NoError(t, err)
	require.NoError(t, w.Close())
	return bytes.ReplaceAll(buf.Bytes(), []byte("META-INFx"), []byte("META-INF/"))
}

func TestZerosInflates(t *testing.T) {
	t.Parallel()
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(zeros(258*1000 + 1))))
	require.NoError(t, err)
	assert.Len(t, got, 258*1000+1)
	assert.Equal(t, make([]byte, len(got)), got)
}

func TestNestedCoreFaults(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		fault  string
		stored bool
		core   func() []byte
		want   string
	}{
		{"truncated, deflated", false, func() []byte { b := testkit.Core("2.2", "0.1.0").Bytes(); return b[:40] }, "truncated"},
		{"truncated, stored", true, func() []byte { b := testkit.Core("2.2", "0.1.0").Bytes(); return b[:len(b)-30] }, "not a valid ZIP archive"},
		{"nested again, stored", true, func() []byte { return testkit.Loader("2.2", "0.1.0").Bytes() }, "only one level of nesting"},
		{"nested again, deflated", false, func() []byte { return testkit.Loader("2.2", "0.1.0").Bytes() }, "only one level of nesting"},
		{"garbage, deflated", false, func() []byte { return []byte("garbage garbage garbage garbage") }, "followed by neither a central directory nor an end record"},
		{"manifest third, deflated", false, func() []byte {
			return testkit.JAR("", testkit.Entry{Name: "META-INF/"}, testkit.Entry{Name: "a.class", Data: []byte("x")}, testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(testkit.Core("2.2", "0.1.0").Manifest())})
		}, "JarFile reads it, JarInputStream does not"},
		{"manifest third, stored", true, func() []byte {
			return testkit.JAR("", testkit.Entry{Name: "META-INF/"}, testkit.Entry{Name: "a.class", Data: []byte("x")}, testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(testkit.Core("2.2", "0.1.0").Manifest())})
		}, "JarFile finds a manifest but JarInputStream finds none"},
		{"decompression bomb as META-INF/", false, func() []byte { return bombCore(t, 80<<20) }, "inflates beyond 64 MiB"},
	} {
		loader := testkit.Loader("2.2", "0.1.0")
		loader.Embedded = nil
		loader.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
		loader.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: c.core(), Store: c.stored}}
		data := loader.Bytes()
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/loader.jar", payload.Options{})
		require.NoError(t, j.Err, c.fault)
		require.NotNil(t, j.Nested, c.fault)
		require.Error(t, j.Nested.Err, c.fault)
		assert.Contains(t, j.Nested.Err.Error(), c.want, c.fault)
		assert.Equal(t, "/loader.jar!/"+testkit.DefaultEmbedPath, j.Nested.Path, "the error names the nested JAR")
	}
}

// allocated reports the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestHugeInputsInBoundedMemory(t *testing.T) {
	// Not parallel: it measures allocation.
	million := testkit.ManyEntries(1_000_000, testkit.Manifest("Implementation-Version", "1"))
	var j *payload.JAR
	n := allocated(func() {
		j = payload.Read(bytes.NewReader(million), int64(len(million)), "/million.jar", payload.Options{})
	})
	require.NoError(t, j.Err)
	assert.Equal(t, 1_000_001, j.Entries)
	assert.Less(t, n, uint64(4<<20), "a million-entry directory is walked through one buffer (%d bytes allocated for a %d-byte JAR)", n, len(million))

	good := testkit.Extension("kafka", "2.2", "0.1.0").Bytes()
	huge := messWith(good, func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+24:], 100<<20)
		return b
	})
	n = allocated(func() { j = payload.Read(bytes.NewReader(huge), int64(len(huge)), "/huge.jar", payload.Options{}) })
	require.Error(t, j.Err)
	assert.Less(t, n, uint64(1<<20), "the 100 MiB manifest is refused without allocating it")
}

func TestSpecialFilesNamedJar(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "socket.jar")
	l, err := net.Listen("unix", sock)
	require.NoError(t, err)
	defer l.Close()
	j := payload.Open(os.DirFS(dir), "socket.jar", payload.Options{})
	require.ErrorIs(t, j.Err, rootfs.ErrNotRegular)
	assert.Contains(t, j.Err.Error(), "a socket")

	// A device, reached through a link to the real /dev/null.
	j = payload.Open(os.DirFS("/"), "dev/null", payload.Options{})
	require.ErrorIs(t, j.Err, rootfs.ErrNotRegular)
	assert.Contains(t, j.Err.Error(), "character device")
}
