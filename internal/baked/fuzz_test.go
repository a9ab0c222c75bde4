package baked

import (
	"testing"
)

// FuzzDecode holds the reader to its bounds: any bytes give a verdict or
// an error, never a panic or an allocation past what they hold; a class
// body is decoded for every class an index lists.
func FuzzDecode(f *testing.F) {
	v, index := sample()
	data, err := Encode(v, index)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(data)
	f.Add(data[:len(data)/2])
	f.Add([]byte(Magic))
	empty, _ := Encode(&Verdict{}, nil)
	f.Add(empty)
	f.Fuzz(func(_ *testing.T, b []byte) {
		v, _, err := DecodeHeader(b)
		if err != nil || v == nil {
			return
		}
		ix, err := DecodeIndex(b[v.IndexAt():], len(v.Lib))
		if err != nil {
			return
		}
		for j, jar := range ix.JARs {
			for name := range jar.Classes {
				_, _ = ix.Class(j, name)
			}
		}
	})
}
