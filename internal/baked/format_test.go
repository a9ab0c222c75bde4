package baked

import (
	"bytes"
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

func sample() (*Verdict, [][]Class) {
	v := &Verdict{Rules: "rules-1-0000abcd", JDKMajor: 17, Flink: "2.2.0", Home: "/opt/flink",
		ParentFirst: []string{"java.", "org.apache.flink."}, ParentFirstFrom: "CoreOptions",
		Lib: []JAR{{Path: "/opt/flink/lib/a.jar", Fingerprint: payload.Fingerprint{Size: 100, Length: 40, CRC: 0xdeadbeef}},
			{Path: "/opt/flink/lib/flink-dist.jar", Fingerprint: payload.Fingerprint{Size: 1 << 30, Length: 4 << 20, CRC: 1}}},
		Usrlib: []JAR{{Path: "/opt/flink/usrlib/job.jar", Fingerprint: payload.Fingerprint{Size: 7, Length: 3, CRC: 2}}},
		Findings: []admission.Finding{
			{Rule: "linkage-class", Severity: admission.Warning, Path: "/opt/flink/lib/a.jar", Message: "A uses B", Found: "no B in /opt/flink/lib", Required: "B", Fix: "add B",
				Symbol: &admission.Symbol{Kind: "class", From: "a/A", Owner: "b/B", JAR: "/opt/flink/lib/a.jar"}},
			{Rule: "classpath-shadowed", Severity: admission.Error, Path: "/opt/flink/usrlib/job.jar", Message: "m", Found: "f", Required: "r", Fix: "x",
				Symbol: &admission.Symbol{Kind: "shadow", Classes: []string{"c/C", "c/D"}}},
		}}
	index := [][]Class{
		{{Name: "a/A", CRC: 5, Size: 300, Major: 61, Access: 1, Super: "java/lang/Object", Interfaces: []string{"java/io/Serializable"},
			Fields:  []classfile.Member{{Name: "x", Descriptor: "I", Access: 2}},
			Methods: []classfile.Member{{Name: "<init>", Descriptor: "()V", Access: 1}, {Name: "run", Descriptor: "(Ljava/lang/String;)V", Access: 1}}},
			{Name: "a/Broken", CRC: 6, Size: 3, Unreadable: true}},
		{{Name: "org/apache/flink/X", CRC: 7, Size: 10, Major: 55}},
	}
	return v, index
}

func TestRoundTrip(t *testing.T) {
	t.Parallel()
	v, index := sample()
	data, err := Encode(v, index)
	require.NoError(t, err)
	got, need, err := DecodeHeader(data)
	require.NoError(t, err)
	require.Zero(t, need)
	want := *v
	want.indexAt = got.indexAt
	assert.Equal(t, &want, got)

	ix, err := DecodeIndex(data[got.IndexAt():], len(got.Lib))
	require.NoError(t, err)
	require.Len(t, ix.JARs, 2)
	assert.Equal(t, payload.ClassEntry{CRC: 5, Size: 300}, ix.JARs[0].Classes["a/A"])
	c, err := ix.Class(0, "a/A")
	require.NoError(t, err)
	assert.Equal(t, &classfile.Class{Name: "a/A", Major: 61, Access: 1, Super: "java/lang/Object", Interfaces: []string{"java/io/Serializable"},
		Fields: index[0][0].Fields, Methods: index[0][0].Methods}, c)
	_, err = ix.Class(0, "a/Broken")
	assert.ErrorContains(t, err, "unreadable", "a class that did not parse when baked does not parse now")
	assert.Contains(t, ix.JARs[0].Classes, "a/Broken", "but it is on the classpath")
	_, err = ix.Class(1, "a/A")
	assert.Error(t, err, "each JAR its own classes")
	c, err = ix.Class(1, "org/apache/flink/X")
	require.NoError(t, err)
	assert.Equal(t, "", c.Super)
}

// A header read from a prefix asks for the bytes it needs.
func TestHeaderFromAPrefix(t *testing.T) {
	t.Parallel()
	v, index := sample()
	data, err := Encode(v, index)
	require.NoError(t, err)
	_, need, err := DecodeHeader(data[:Prefix])
	require.NoError(t, err)
	require.Positive(t, need)
	got, _, err := DecodeHeader(data[:need])
	require.NoError(t, err)
	assert.Equal(t, v.Lib, got.Lib)
}

// Every damage is ErrFormat, never a panic nor a verdict: each byte
// flipped (the checksums), every truncation, another version, no magic.
func TestDamageIsAFormatError(t *testing.T) {
	t.Parallel()
	v, index := sample()
	data, err := Encode(v, index)
	require.NoError(t, err)
	h, _, err := DecodeHeader(data)
	require.NoError(t, err)
	read := func(b []byte) error {
		hv, need, err := DecodeHeader(b)
		if err != nil {
			return err
		}
		if hv == nil {
			if need > int64(len(b)) {
				return ErrFormat // what the host reader says of a file that ends before need
			}
			t.Fatalf("need %d of %d bytes", need, len(b))
		}
		_, err = DecodeIndex(b[hv.IndexAt():], len(hv.Lib))
		return err
	}
	for i := range data {
		b := bytes.Clone(data)
		b[i] ^= 0x40
		assert.ErrorIs(t, read(b), ErrFormat, "byte %d flipped", i)
		assert.ErrorIs(t, read(data[:i]), ErrFormat, "cut at %d", i)
	}
	other := append([]byte(Magic), binary.AppendUvarint(nil, Version+1)...)
	other = append(other, data[len(Magic)+1:]...)
	_, _, err = DecodeHeader(other)
	require.ErrorIs(t, err, ErrFormat)
	assert.ErrorContains(t, err, "format version 2, this entrypoint reads version 1")
	_, err = DecodeIndex(data[h.IndexAt():], 3)
	assert.True(t, errors.Is(err, ErrFormat), "an index for another lib: %v", err)
}

func TestMoved(t *testing.T) {
	t.Parallel()
	v, _ := sample()
	m := v.Moved("/srv/flink-2.2.0")
	assert.Equal(t, "/srv/flink-2.2.0/lib/a.jar", m.Lib[0].Path)
	assert.Equal(t, "/srv/flink-2.2.0/usrlib/job.jar", m.Usrlib[0].Path)
	assert.Equal(t, "no B in /srv/flink-2.2.0/lib", m.Findings[0].Found)
	assert.Equal(t, "/srv/flink-2.2.0/lib/a.jar", m.Findings[0].Symbol.JAR)
	assert.Equal(t, "/opt/flink/lib/a.jar", v.Findings[0].Symbol.JAR, "the verdict read stays as it was")
	assert.Same(t, v, v.Moved("/opt/flink"))
}
