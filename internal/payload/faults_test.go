package payload_test

// The fault catalogue of docs/reliability.md, at the level of one JAR: each
// damaged or unusual archive is either read correctly or refused with an
// error that says what is wrong, never a panic, a hang or a guess.

import (
	"archive/zip"
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
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
		{"self-extracting stub prepended", append([]byte("#!/bin/sh\nexec java -jar \"$0\" \"$@\"\n"), good...), "data prepended"},
		{"two META-INF/MANIFEST.MF", testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte("B: 2\r\n")}), "2 META-INF/MANIFEST.MF entries"},
		{"two manifests differing in case", testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "meta-inf/manifest.mf", Data: []byte("B: 2\r\n")}), "ambiguous"},
		{"central directory name differs from the local header", messWith(good, func(b []byte) []byte {
			i := bytes.Index(b, []byte("PK\x03\x04"))
			for ; i >= 0; i = bytes.Index(b[i+4:], []byte("PK\x03\x04")) + i + 4 {
				n := int(binary.LittleEndian.Uint16(b[i+26:]))
				if string(b[i+30:i+30+n]) == "META-INF/MANIFEST.MF" {
					copy(b[i+30:], "META-INF/MANIFEST.XX")
					return b
				}
			}
			panic("no manifest")
		}), "local header names"},
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
		}), "outside the archive's data"},
		{"entry count disagrees with the directory", messWith(good, func(b []byte) []byte {
			end := bytes.LastIndex(b, []byte("PK\x05\x06"))
			binary.LittleEndian.PutUint16(b[end+10:], 3)
			return b
		}), "declares 3 entries"},
		{"manifest without ': '", testkit.JAR("Manifest-Version 1.0\r\n"), "malformed manifest"},
		{"manifest with a NUL byte", testkit.JAR("Manifest-Version: 1.0\x00\r\n"), "NUL byte"},
		{"manifest main section over 1 MiB", testkit.JAR("Manifest-Version: 1.0\r\nX: " + strings.Repeat("y", 1<<20) + "\r\n"), "main section longer than"},
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
		{"LF line ends, no final newline", mf("Manifest-Version: 1.0\nImplementation-Version: 2.2.1"), "Implementation-Version", "2.2.1"},
		{"72-byte lines folded by the jar tool", mf(testkit.Manifest("StreamFusion-Requires", strings.Repeat("streamfusion-avro ", 12))), "StreamFusion-Requires", strings.TrimSpace(strings.Repeat("streamfusion-avro ", 12))},
		{"non-UTF-8 bytes elsewhere", mf("Manifest-Version: 1.0\r\nImplementation-Vendor: Caf\xe9\r\nImplementation-Version: 1.0\r\n"), "Implementation-Version", "1.0"},
		{"per-entry sections after the main one", mf("Manifest-Version: 1.0\r\nA: main\r\n\r\nName: x.class\r\nA: entry\r\n"), "A", "main"},
	} {
		j := payload.Read(bytes.NewReader(c.data), int64(len(c.data)), "/x.jar", payload.Options{})
		require.NoError(t, j.Err, c.fault)
		got, ok := j.Manifest.Get(c.attr)
		assert.True(t, ok, c.fault)
		assert.Equal(t, c.want, got, c.fault)
	}
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

	// archive/zip writes deflated entries with data descriptors (bit 3):
	// the streamed embedded core walks past them.
	loader := testkit.Loader("2.2", "0.1.0")
	core := *loader.Embedded
	nested := testkit.JAR("", testkit.Entry{Name: "first.bin", Data: bytes.Repeat([]byte("q"), 3000)}, testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(core.Manifest())})
	require.NotZero(t, binary.LittleEndian.Uint16(nested[6:])&0x8, "the first entry uses a data descriptor")
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
		{"garbage, deflated", false, func() []byte { return []byte("garbage garbage garbage garbage") }, "bad local header signature"},
		{"decompression bomb before the manifest", false, func() []byte {
			return testkit.JAR("", testkit.Entry{Name: "zeros.bin", Data: make([]byte, 80<<20)}, testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(testkit.Core("2.2", "0.1.0").Manifest())})
		}, "no manifest within the first 64 MiB"},
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
	require.ErrorIs(t, j.Err, payload.ErrNotRegular)
	assert.Contains(t, j.Err.Error(), "a socket")

	// A device, reached through a link to the real /dev/null.
	j = payload.Open(os.DirFS("/"), "dev/null", payload.Options{})
	require.ErrorIs(t, j.Err, payload.ErrNotRegular)
	assert.Contains(t, j.Err.Error(), "character device")
}
