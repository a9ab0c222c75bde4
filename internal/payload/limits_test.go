package payload_test

// The reader's limits keep memory bounded (docs/jar-reading.md, "Where the
// reader refuses more than the JVM"). Allocation, not time: these are the
// bytes a reading allocates, the same on every machine.

import (
	"bytes"
	"encoding/binary"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// allocated reports the bytes allocated while f runs.
func allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}

func TestBoundedMemory(t *testing.T) {
	// Not parallel, nor its cases: it measures allocation.
	for _, c := range []struct {
		name  string
		data  []byte
		check func(t *testing.T, j *payload.JAR)
		limit uint64
	}{
		{"a million-entry directory is walked through one buffer",
			testkit.ManyEntries(1_000_000, testkit.Manifest("Implementation-Version", "1")),
			func(t *testing.T, j *payload.JAR) {
				require.NoError(t, j.Err)
				assert.Equal(t, 1_000_001, j.Entries)
			}, 4 << 20},
		{"a manifest declaring 100 MiB is refused without allocating it",
			withManifestSize(testkit.Extension("kafka", "2.2", "0.1.0").Bytes(), 100<<20),
			refusedWith("declares 104857600 bytes"), 1 << 20},
		{"a manifest declaring 100 MiB, alone in its JAR",
			withManifestSize(testkit.JAR(testkit.Manifest("A", "1")), 100<<20),
			refusedWith("declares 104857600 bytes"), 1 << 20},
	} {
		t.Run(c.name, func(t *testing.T) {
			var j *payload.JAR
			n := allocated(func() { j = readBytes(t, c.data) })
			c.check(t, j)
			assert.Less(t, n, c.limit, "%d bytes allocated for a %d-byte JAR", n, len(c.data))
		})
	}
}

func refusedWith(want string) func(t *testing.T, j *payload.JAR) {
	return func(t *testing.T, j *payload.JAR) {
		require.Error(t, j.Err)
		assert.Contains(t, j.Err.Error(), want)
	}
}

// The reader's own limits, where it refuses more than the JVM
// (docs/jar-reading.md): each is a refusal that names what it found.
func TestOwnLimits(t *testing.T) {
	t.Parallel()
	props := testkit.JAR(testkit.Manifest("Implementation-Title", "flink-dist"),
		testkit.Entry{Name: payload.VersionProperties, Data: bytes.Repeat([]byte("k=v\n"), 20<<10)})
	stored := loaderBytes(testkit.Core("2.2", "0.1.0").Bytes(), true)
	stored = messWith(stored, func(b []byte) []byte {
		i := centralRecord(b, testkit.DefaultEmbedPath)
		size := binary.LittleEndian.Uint32(b[i+24:])
		binary.LittleEndian.PutUint32(b[i+24:], size+1) // uncompressed differs from compressed
		return b
	})
	for _, c := range []struct {
		name string
		read func() *payload.JAR
		want string
	}{
		{"a version resource over 64 KiB", func() *payload.JAR {
			return payload.Read(bytes.NewReader(props), int64(len(props)), "/opt/flink/lib/flink-dist.jar", payload.Options{Properties: true})
		}, "declares 81920 bytes, more than the 65536"},
		{"a stored nested core whose two sizes differ", func() *payload.JAR {
			j := readBytes(t, stored)
			require.NoError(t, j.Err, "the loader itself reads")
			require.NotNil(t, j.Nested)
			return j.Nested
		}, "stored entry has 2013 bytes packed but 2014 unpacked; its length is ambiguous"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := c.read()
			require.Error(t, j.Err)
			assert.Contains(t, j.Err.Error(), c.want)
			assert.ErrorIs(t, j.Err, payload.ErrFormat)
		})
	}
}
