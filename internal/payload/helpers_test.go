package payload_test

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"maps"
	"reflect"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// readBytes reads data as a lib JAR, version resource included, both
// through a plain reader and in place (a Mapper, as rootfs.Host's files
// are read), and requires the two readings to agree.
func readBytes(t *testing.T, data []byte) *payload.JAR {
	t.Helper()
	j := payload.Read(bytes.NewReader(data), int64(len(data)), "/opt/flink/lib/x.jar", payload.Options{Properties: true})
	requireSameReading(t, j, payload.Read(inPlace(data), int64(len(data)), "/opt/flink/lib/x.jar", payload.Options{Properties: true}))
	return j
}

// mapped is a reader of data that also gives its bytes in place.
type mapped struct {
	*bytes.Reader
	data []byte
}

func inPlace(data []byte) mapped { return mapped{bytes.NewReader(data), data} }

func (m mapped) Map(off, n int64) ([]byte, bool) {
	if off < 0 || n <= 0 || off+n > int64(len(m.data)) {
		return nil, false
	}
	return m.data[off : off+n], true
}

// sameReading says how two readings of one JAR differ, "" when they agree.
func sameReading(a, b *payload.JAR) string {
	if fmt.Sprint(a.Err) != fmt.Sprint(b.Err) {
		return fmt.Sprintf("error %v, in place %v", a.Err, b.Err)
	}
	x, y := *a, *b
	x.Err, y.Err = nil, nil
	if !reflect.DeepEqual(x, y) {
		return fmt.Sprintf("%+v, in place %+v", x, y)
	}
	return ""
}

func requireSameReading(t *testing.T, a, b *payload.JAR) {
	t.Helper()
	if d := sameReading(a, b); d != "" {
		t.Fatalf("read through a reader and in place differ: %s", d)
	}
}

// requireRefused reads data and checks that it is refused with want.
func requireRefused(t *testing.T, data []byte, want string) {
	t.Helper()
	j := readBytes(t, data)
	require.Error(t, j.Err)
	assert.Contains(t, j.Err.Error(), want)
}

// requireAttr reads data and checks that its manifest says attr: want.
func requireAttr(t *testing.T, data []byte, attr, want string) *payload.JAR {
	t.Helper()
	j := readBytes(t, data)
	require.NoError(t, j.Err)
	require.NotNil(t, j.Manifest)
	got, ok := j.Manifest.Get(attr)
	assert.True(t, ok, "%s is read", attr)
	assert.Equal(t, want, got)
	return j
}

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

// withManifestSize makes the central record of the manifest declare size.
func withManifestSize(good []byte, size uint32) []byte {
	return messWith(good, func(b []byte) []byte {
		binary.LittleEndian.PutUint32(b[centralRecord(b, "META-INF/MANIFEST.MF")+24:], size)
		return b
	})
}

// withCentralExtra returns a copy of good whose central record of name has
// the extra field extra.
func withCentralExtra(good []byte, name string, extra []byte) []byte {
	b := append([]byte(nil), good...)
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

// loaderBytes nests core in a Go-written loader, stored or deflated.
func loaderBytes(core []byte, stored bool) []byte {
	l := testkit.Loader("2.2", "0.1.0")
	l.Embedded = nil
	l.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
	l.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: core, Store: stored}}
	return l.Bytes()
}

// normal gives main attributes as the tests compare them: names lower
// case, values trimmed; nil for no manifest.
func normal(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	n := make(map[string]string, len(m))
	for k, v := range m {
		n[strings.ToLower(k)] = strings.TrimSpace(v)
	}
	return n
}

// attrs is the normal form of a manifest's main attributes.
func attrs(m *payload.Manifest) map[string]string {
	if m == nil {
		return nil
	}
	return normal(m.Attributes())
}

// equalAttrs reports whether two normal forms are the same manifest (no
// manifest differs from an empty one).
func equalAttrs(a, b map[string]string) bool {
	return (a == nil) == (b == nil) && maps.Equal(a, b)
}
