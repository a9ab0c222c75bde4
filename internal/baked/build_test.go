package baked

import (
	"bytes"
	"fmt"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// TestIndexLibIsTheSequentialIndex: the index the workers build chunk by
// chunk is byte for byte the index of every class parsed in order, across
// chunk boundaries, with a JAR of no classes and a class that does not
// parse.
func TestIndexLibIsTheSequentialIndex(t *testing.T) {
	jar := func(prefix string, n int, broken bool) *payload.Archive {
		var cs []testkit.Class
		for i := range n {
			cs = append(cs, testkit.Class{Name: fmt.Sprintf("%s/C%04d", prefix, i), Interfaces: []string{"java/io/Serializable"},
				Fields:  []testkit.Member{{Name: "f", Descriptor: "I"}},
				Methods: []testkit.Member{{Name: fmt.Sprintf("m%d", i%7), Descriptor: "()V"}}})
		}
		var extra []testkit.Entry
		if broken {
			extra = append(extra, testkit.Entry{Name: prefix + "/Broken.class", Data: []byte("not a class")})
		}
		b := testkit.ClassJAR("Manifest-Version: 1.0\n", cs, nil, extra...)
		a, err := payload.ReadArchive(bytes.NewReader(b), int64(len(b)), prefix+".jar")
		require.NoError(t, err)
		return a
	}
	lib := []*payload.Archive{jar("a", 3*chunkClasses+5, true), jar("b", 0, true), jar("c", chunkClasses-1, true), jar("e", 0, false), jar("d", 40, true)}
	got, err := indexLib(lib)
	require.NoError(t, err)

	want := make([][]Class, len(lib))
	unreadable := 0
	for i, a := range lib {
		names := slices.Sorted(func(yield func(string) bool) {
			for n := range a.Classes {
				if !yield(n) {
					return
				}
			}
		})
		for _, n := range names {
			e := a.Classes[n]
			c := Class{Name: n, CRC: e.CRC, Size: e.Size}
			data, err := a.Class(n, nil)
			require.NoError(t, err)
			if pc, err := classfile.Parse(data, classfile.Options{MembersOnly: true}); err != nil {
				c.Unreadable = true
				unreadable++
			} else {
				c.Major, c.Access, c.Super, c.Interfaces, c.Fields, c.Methods = pc.Major, pc.Access, pc.Super, pc.Interfaces, pc.Fields, pc.Methods
			}
			want[i] = append(want[i], c)
		}
	}
	require.Equal(t, 4, unreadable, "one broken class in each JAR")
	wantIx, err := encodeIndex(want)
	require.NoError(t, err)
	raw := func(b []byte) []byte {
		out, err := decompressIndex(b)
		require.NoError(t, err)
		return out
	}
	require.Len(t, want[0], 3*chunkClasses+6)
	require.Len(t, want[1], 1, "b: its broken class only")
	require.Empty(t, want[3], "e: no class at all")
	require.Equal(t, raw(wantIx), raw(got))
}
