package payload_test

import (
	"bytes"
	"encoding/binary"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func readBytes(t *testing.T, data []byte) *payload.JAR {
	t.Helper()
	return payload.Read(bytes.NewReader(data), int64(len(data)), "/opt/flink/lib/x.jar", payload.Options{Properties: true})
}

func TestReadLoaderWithEmbeddedCore(t *testing.T) {
	t.Parallel()
	for _, stored := range []bool{true, false} {
		loader := testkit.Loader("2.2", "0.1.0")
		loader.EmbedStored = stored
		j := readBytes(t, loader.Bytes())
		require.NoError(t, j.Err)
		require.NotNil(t, j.Manifest)
		kind, _ := j.Manifest.Get("streamfusion-payload")
		assert.Equal(t, "loader", kind)
		assert.Equal(t, testkit.DefaultEmbedPath, j.EmbeddedCore)
		require.NotNil(t, j.Nested, "stored=%v", stored)
		require.NoError(t, j.Nested.Err)
		assert.Equal(t, !stored, j.Nested.Streamed)
		module, _ := j.Nested.Manifest.Get("StreamFusion-Module")
		assert.Equal(t, "streamfusion-core", module)
		assert.Equal(t, "/opt/flink/lib/x.jar!/"+testkit.DefaultEmbedPath, j.Nested.Path)
		assert.NotEmpty(t, j.ClassMark)
		assert.NotEmpty(t, j.MetaMark)
		// Its facts are its manifest only, however it is packed.
		assert.Zero(t, j.Nested.NativeCount)
		assert.Empty(t, j.Nested.ClassMark)
		assert.Zero(t, j.Nested.Entries)
	}
}

func TestReadMarksAndNative(t *testing.T) {
	t.Parallel()
	ext := testkit.Extension("kafka", "2.2", "0.1.0")
	ext.Entries = []testkit.Entry{{Name: "org/slf4j/Logger.class", Data: []byte("x")}}
	j := readBytes(t, ext.Bytes())
	require.NoError(t, j.Err)
	assert.Contains(t, j.ClassMark, "tech/streamfusion/kafka/")
	assert.Equal(t, "META-INF/native/linux-x86_64/libstreamfusion_kafka.so", j.NativeMark)
	assert.Equal(t, 1, j.NativeCount)
	assert.Equal(t, "org/slf4j/Logger.class", j.Logging)
	assert.Nil(t, j.Nested)
}

func TestReadDistProperties(t *testing.T) {
	t.Parallel()
	tree := testkit.Good("2.2.1").Tree()
	j := readBytes(t, tree[testkit.LibDir+"/flink-dist-2.2.1.jar"])
	require.NoError(t, j.Err)
	assert.Equal(t, "2.2.1", j.Properties["project.version"])
	v, _ := j.Manifest.Get("Implementation-Version")
	assert.Equal(t, "2.2.1", v)
}

func TestReadRefusesBrokenArchives(t *testing.T) {
	t.Parallel()
	good := testkit.Extension("kafka", "2.2", "0.1.0").Bytes()
	cases := map[string][]byte{
		"empty":          {},
		"not a zip":      []byte("this is a text file, not a JAR\n"),
		"truncated":      good[:len(good)/2],
		"cut end record": good[:len(good)-4],
	}
	for name, data := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			j := readBytes(t, data)
			require.Error(t, j.Err)
		})
	}
}

func TestReadRefusesHugeDeclaredManifest(t *testing.T) {
	t.Parallel()
	data := testkit.JAR(testkit.Manifest("A", "1"))
	cd := bytes.LastIndex(data, []byte{0x50, 0x4b, 0x01, 0x02})
	for ; cd >= 0; cd = bytes.LastIndex(data[:cd], []byte{0x50, 0x4b, 0x01, 0x02}) {
		nameLen := int(binary.LittleEndian.Uint16(data[cd+28:]))
		if string(data[cd+46:cd+46+nameLen]) == "META-INF/MANIFEST.MF" {
			break
		}
	}
	require.Positive(t, cd)
	binary.LittleEndian.PutUint32(data[cd+24:], 100<<20)
	j := readBytes(t, data)
	require.Error(t, j.Err)
	assert.Contains(t, j.Err.Error(), "declares 104857600 bytes")
}

func TestOpenRefusesNonRegularFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	require.NoError(t, os.MkdirAll(filepath.Join(lib, "dir.jar"), 0o755))
	require.NoError(t, syscall.Mkfifo(filepath.Join(lib, "fifo.jar"), 0o644))
	require.NoError(t, os.Symlink("missing.jar", filepath.Join(lib, "dangling.jar")))
	require.NoError(t, os.Symlink("loop-b.jar", filepath.Join(lib, "loop-a.jar")))
	require.NoError(t, os.Symlink("loop-a.jar", filepath.Join(lib, "loop-b.jar")))
	require.NoError(t, os.Symlink("dir.jar", filepath.Join(lib, "to-dir.jar")))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "real.jar"), testkit.Extension("csv", "2.2", "0.1.0").Bytes(), 0o644))
	require.NoError(t, os.Symlink("/real.jar", filepath.Join(lib, "abs.jar")))
	fsys := os.DirFS(dir)

	for name, want := range map[string]string{
		"fifo.jar":     "named pipe",
		"dangling.jar": "dangling symbolic link",
		"loop-a.jar":   "too many levels",
		"to-dir.jar":   "a directory",
	} {
		j := payload.Open(fsys, "lib/"+name, payload.Options{})
		require.Error(t, j.Err, name)
		assert.Contains(t, j.Err.Error(), want, name)
	}
	// An absolute link target is resolved inside the file system's root.
	j := payload.Open(fsys, "lib/abs.jar", payload.Options{})
	require.NoError(t, j.Err)
	assert.Equal(t, "/real.jar", j.Target)
}

func TestOpenMapFS(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"lib/a.jar": {Data: testkit.Core("2.2", "0.1.0").Bytes()}}
	j := payload.Open(fsys, "lib/a.jar", payload.Options{})
	require.NoError(t, j.Err)
	assert.Equal(t, "/lib/a.jar", j.Path)
}

// The central directory is read in 256 KiB chunks: a record may start, or
// its name end, anywhere across a chunk's end. Shifting every record by one
// byte at a time moves the boundary through every position of a record.
func TestDirectoryRecordsAcrossChunkBoundaries(t *testing.T) {
	t.Parallel()
	const n = 4_000 // 81-byte records: the directory crosses one chunk end
	for shift := range 82 {
		data := testkit.BigJAR(n, 0, testkit.Manifest("Implementation-Version", "2.2.1"),
			testkit.Entry{Name: strings.Repeat("s", shift+1), Data: []byte("x")})
		j := readBytes(t, data)
		require.NoError(t, j.Err, "shift %d", shift)
		require.Equal(t, n+2, j.Entries, "shift %d", shift)
		v, _ := j.Manifest.Get("Implementation-Version")
		require.Equal(t, "2.2.1", v)
	}
	// The largest record the JVM accepts (64 KiB with its name and extra
	// field), starting 100 bytes before a chunk's end: fillers after the
	// manifest's record (66 bytes) bring it there.
	name := func(recordLen int) string { return strings.Repeat("f", recordLen-46) }
	before := 256<<10 - 100 - 66
	long := testkit.BigJAR(0, 0, "A: 1\r\n",
		testkit.Entry{Name: name(60_000)}, testkit.Entry{Name: name(60_000)}, testkit.Entry{Name: name(60_000)},
		testkit.Entry{Name: name(60_000)}, testkit.Entry{Name: name(before - 4*60_000)},
		testkit.Entry{Name: strings.Repeat("n", 0xffff-46)})
	j := readBytes(t, long)
	require.NoError(t, j.Err)
	assert.Equal(t, 7, j.Entries)
}
