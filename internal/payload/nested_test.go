package payload_test

// The core nested in a loader, as both JarFile and JarInputStream see it
// (docs/jar-reading.md, "The core nested in a loader").

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"hash/crc32"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func TestNestedCoreRead(t *testing.T) {
	t.Parallel()
	kit := func(stored bool) []byte {
		loader := testkit.Loader("2.2", "0.1.0")
		loader.EmbedStored = stored
		return loader.Bytes()
	}
	for _, c := range []struct {
		name    string
		loader  []byte
		stored  bool
		classes bool // the loader has classes of its own
	}{
		{"stored, as the test kit writes it", kit(true), true, true},
		{"deflated, as the test kit writes it", kit(false), false, true},
		{"deflated, as Python's zipfile writes it", loaderBytes(pythonCore(t), false), false, false},
		{"stored, as Python's zipfile writes it", loaderBytes(pythonCore(t), true), true, false},
		// The streamed core reads its manifest's sizes and CRC from the
		// descriptor.
		{"deflated, its manifest with a data descriptor (archive/zip)", loaderBytes(descriptorCore(t), false), false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := requireAttr(t, c.loader, "StreamFusion-Payload", "loader")
			assert.Equal(t, testkit.DefaultEmbedPath, j.EmbeddedCore)
			require.NotNil(t, j.Nested)
			require.NoError(t, j.Nested.Err)
			assert.Equal(t, !c.stored, j.Nested.Streamed)
			module, _ := j.Nested.Manifest.Get("StreamFusion-Module")
			assert.Equal(t, "streamfusion-core", module)
			assert.Equal(t, "/opt/flink/lib/x.jar!/"+testkit.DefaultEmbedPath, j.Nested.Path)
			assert.NotEmpty(t, j.MetaMark)
			if c.classes {
				assert.NotEmpty(t, j.ClassMark)
			}
			// Its facts are its manifest only, however it is packed.
			assert.Zero(t, j.Nested.NativeCount)
			assert.Empty(t, j.Nested.ClassMark)
			assert.Zero(t, j.Nested.Entries)
		})
	}
}

// A nested core one of the readings cannot read, or beyond the limits, is
// refused in the nested JAR's name; the loader itself reads.
func TestNestedCoreRefused(t *testing.T) {
	t.Parallel()
	core := testkit.Core("2.2", "0.1.0")
	manifestThird := testkit.JAR("", testkit.Entry{Name: "META-INF/"}, testkit.Entry{Name: "a.class", Data: []byte("x")},
		testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(core.Manifest())})
	for _, c := range []struct {
		name   string
		stored bool
		core   func() []byte
		want   string
	}{
		{"truncated, deflated", false, func() []byte { return core.Bytes()[:40] }, "truncated"},
		{"truncated, stored", true, func() []byte { b := core.Bytes(); return b[:len(b)-30] }, "not a valid ZIP archive"},
		{"nested again, stored", true, func() []byte { return testkit.Loader("2.2", "0.1.0").Bytes() }, "only one level of nesting"},
		{"nested again, deflated", false, func() []byte { return testkit.Loader("2.2", "0.1.0").Bytes() }, "only one level of nesting"},
		{"garbage, deflated", false, func() []byte { return []byte("garbage garbage garbage garbage") }, "followed by neither a central directory nor an end record"},
		{"manifest third, deflated", false, func() []byte { return manifestThird }, "JarFile reads it, JarInputStream does not"},
		{"manifest third, stored", true, func() []byte { return manifestThird }, "JarFile finds a manifest but JarInputStream finds none"},
		{"decompression bomb as META-INF/", false, func() []byte { return bombCore(t, 80<<20) }, "inflates beyond 64 MiB"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := readBytes(t, loaderBytes(c.core(), c.stored))
			require.NoError(t, j.Err)
			require.NotNil(t, j.Nested)
			require.Error(t, j.Nested.Err)
			assert.Contains(t, j.Nested.Err.Error(), c.want)
			assert.Equal(t, "/opt/flink/lib/x.jar!/"+testkit.DefaultEmbedPath, j.Nested.Path, "the error names the nested JAR")
		})
	}
}

// descriptorCore is a core whose deflated manifest has a data descriptor
// (bit 3), as archive/zip writes it, and a later entry.
func descriptorCore(t *testing.T) []byte {
	t.Helper()
	core := testkit.JAR("", testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte(testkit.Core("2.2", "0.1.0").Manifest())},
		testkit.Entry{Name: "first.bin", Data: bytes.Repeat([]byte("q"), 3000)})
	loc := bytes.Index(core, []byte("META-INF/MANIFEST.MF")) - 30
	require.NotZero(t, binary.LittleEndian.Uint16(core[loc+6:])&0x8, "the manifest uses a data descriptor")
	return core
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

func TestZerosInflates(t *testing.T) {
	t.Parallel()
	got, err := io.ReadAll(flate.NewReader(bytes.NewReader(zeros(258*1000 + 1))))
	require.NoError(t, err)
	assert.Len(t, got, 258*1000+1)
	assert.Equal(t, make([]byte, len(got)), got)
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
