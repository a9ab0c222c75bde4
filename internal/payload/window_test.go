package payload

import (
	"bytes"
	"errors"
	"io"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// failingReader serves data as a file does (a short read ends with
// io.EOF) and fails with err for any read that reaches fail (when fail > 0),
// after the bytes before it.
type failingReader struct {
	data []byte
	fail int64
	err  error
}

func (r *failingReader) ReadAt(p []byte, off int64) (int, error) {
	if off >= int64(len(r.data)) {
		return 0, io.EOF
	}
	if r.fail > 0 && off+int64(len(p)) > r.fail {
		return copy(p, r.data[off:r.fail]), r.err
	}
	n := copy(p, r.data[off:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

// TestWindowFill consumes a directory in steps whose records straddle the
// buffer's chunk boundaries, as the walk does: every step must see exactly
// the bytes at its offset, and each failure says where it happened.
func TestWindowFill(t *testing.T) {
	t.Parallel()
	data := make([]byte, 100)
	for i := range data {
		data[i] = byte(i)
	}
	for _, tc := range []struct {
		name  string
		buf   int   // the window's buffer
		steps []int // record lengths consumed one after another
		end   int64 // the directory's end
		err   string
	}{
		{name: "records that fit the buffer exactly", buf: 10, steps: []int{10, 10, 10}, end: 30},
		{name: "records straddling every chunk boundary", buf: 10, steps: []int{3, 7, 9, 2, 10, 1, 8}, end: 40},
		{name: "a record as long as the buffer after a partial one", buf: 16, steps: []int{5, 16, 11, 16}, end: 48},
		{name: "a record past the directory's end", buf: 10, steps: []int{6, 6}, end: 10, err: "record at offset 6 runs past the directory's end"},
		{name: "a file shorter than its directory", buf: 64, steps: []int{60, 60}, end: 200, err: "file ends inside the central directory at offset 100"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := &failingReader{data: data}
			w := window{r: r, buf: make([]byte, tc.buf), end: tc.end}
			at := int64(0)
			for i, n := range tc.steps {
				err := w.fill(n, at)
				if err != nil {
					require.NotEmpty(t, tc.err, "step %d: %v", i, err)
					assert.Contains(t, err.Error(), tc.err)
					assert.ErrorIs(t, err, ErrFormat)
					return
				}
				require.Equal(t, data[at:at+int64(n)], w.buf[w.lo:w.lo+n], "step %d at %d", i, at)
				w.lo += n
				at += int64(n)
			}
			require.Empty(t, tc.err, "no step failed")
		})
	}
}

func TestWindowFillPassesReadErrorsOn(t *testing.T) {
	t.Parallel()
	boom := errors.New("input/output error")
	r := &failingReader{data: bytes.Repeat([]byte{1}, 64), fail: 8, err: boom}
	w := window{r: r, buf: make([]byte, 32), end: 64}
	err := w.fill(12, 0)
	require.ErrorIs(t, err, boom)
	assert.NotErrorIs(t, err, ErrFormat, "an I/O error is not a malformed archive")
	assert.Contains(t, err.Error(), "read central directory at offset 8")
}
