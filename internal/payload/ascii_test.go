package payload

import (
	"bytes"
	"testing"
)

// TestASCIIEveryLengthAndPosition holds the walk's word-at-a-time name
// check to a byte loop: for every length up to past four 32-byte rounds,
// a name of 7-bit bytes passes and one byte at or above 0x80 at any
// position fails, whatever the bytes around the name are.
func TestASCIIEveryLengthAndPosition(t *testing.T) {
	byteLoop := func(b []byte) bool {
		for _, c := range b {
			if c >= 0x80 {
				return false
			}
		}
		return true
	}
	for n := 0; n <= 140; n++ {
		// The name sits between high bytes: a check that read past
		// either end would see them.
		buf := bytes.Repeat([]byte{0xff}, n+16)
		name := buf[8 : 8+n]
		for i := range name {
			name[i] = 'a' + byte(i%26)
		}
		if got := ascii(name); !got || !byteLoop(name) {
			t.Fatalf("length %d, 7-bit: ascii = %v", n, got)
		}
		for at := range name {
			for _, high := range []byte{0x80, 0xc3, 0xff} {
				keep := name[at]
				name[at] = high
				if got, want := ascii(name), byteLoop(name); got != want {
					t.Fatalf("length %d, byte %#x at %d: ascii = %v, a byte loop says %v", n, high, at, got, want)
				}
				name[at] = keep
			}
		}
	}
}
