package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sync"
)

// ZIP record signatures and sizes (APPNOTE.TXT 4.3).
const (
	sigLocal     = 0x04034b50
	sigCentral   = 0x02014b50
	sigEnd       = 0x06054b50
	sigEnd64     = 0x06064b50
	sigLocator64 = 0x07064b50

	lenLocal     = 30
	lenCentral   = 46
	lenEnd       = 22
	lenEnd64     = 56
	lenLocator64 = 20

	maxCommentLen  = 0xffff
	flagDescriptor = 0x8 // sizes and CRC follow the data (general purpose bit 3)

	methodStored   = 0
	methodDeflated = 8
)

// ErrFormat is returned, wrapped with details, when the bytes are not a ZIP
// archive this package is willing to trust.
var ErrFormat = errors.New("not a valid ZIP archive")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// directory is the location of a ZIP archive's central directory.
type directory struct {
	r       io.ReaderAt
	size    int64 // bytes of the archive
	offset  int64 // of the first central directory record
	length  int64 // bytes of the central directory
	entries uint64
}

// entry is what the scan keeps of one central directory record.
type entry struct {
	name   string
	method uint16
	flags  uint16
	packed uint64 // compressed size
	size   uint64 // uncompressed size
	header int64  // offset of the local file header
}

// openDirectory finds the end-of-central-directory record and, for ZIP64,
// its 64-bit counterpart. It refuses archives whose central directory does
// not end exactly where the end record starts: data prepended to the
// archive (self-extracting stubs) or hidden between its parts.
func openDirectory(r io.ReaderAt, size int64) (*directory, error) {
	if size < lenEnd {
		return nil, formatErr("%d bytes is too short for a ZIP end record", size)
	}
	// The end record is the last 22 bytes unless an archive comment
	// follows it: look in a small tail first, then in the largest one a
	// comment allows.
	var buf []byte
	at := -1
	for _, n := range []int64{512, lenEnd + maxCommentLen} {
		tail := min(n, size)
		buf = make([]byte, tail)
		if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read end of central directory: %w", err)
		}
		if at = findEnd(buf); at >= 0 || tail == size {
			break
		}
	}
	if at < 0 {
		return nil, formatErr("no end-of-central-directory record (truncated, or not a ZIP file)")
	}
	end := buf[at:]
	endPos := size - int64(len(buf)) + int64(at)
	d := &directory{
		r:       r,
		size:    size,
		entries: uint64(binary.LittleEndian.Uint16(end[10:])),
		length:  int64(binary.LittleEndian.Uint32(end[12:])),
		offset:  int64(binary.LittleEndian.Uint32(end[16:])),
	}
	if disk := binary.LittleEndian.Uint16(end[4:]); disk != 0 {
		return nil, formatErr("multi-disk archive (disk %d)", disk)
	}
	dirEnd := endPos
	if d.entries == 0xffff || d.length == 0xffffffff || d.offset == 0xffffffff {
		pos, err := d.readEnd64(endPos)
		if err != nil {
			return nil, err
		}
		dirEnd = pos
	}
	if d.offset < 0 || d.length < 0 || d.offset > dirEnd || d.length > dirEnd-d.offset {
		return nil, formatErr("central directory (offset %d, %d bytes) lies outside the %d-byte file", d.offset, d.length, size)
	}
	if d.offset+d.length != dirEnd {
		return nil, formatErr("%d unexpected bytes before the end record: data prepended to the archive (self-extracting stub?) or a damaged directory", dirEnd-(d.offset+d.length))
	}
	if d.entries > uint64(d.length)/lenCentral {
		return nil, formatErr("end record declares %d entries in a %d-byte central directory", d.entries, d.length)
	}
	return d, nil
}

// findEnd returns where the last end record in buf starts whose comment
// fits in buf, or -1.
func findEnd(buf []byte) int {
	for i := len(buf) - lenEnd; i >= 0; i-- {
		if binary.LittleEndian.Uint32(buf[i:]) == sigEnd && int(binary.LittleEndian.Uint16(buf[i+20:]))+i+lenEnd <= len(buf) {
			return i
		}
	}
	return -1
}

// readEnd64 reads the ZIP64 end record through its locator, which sits just
// before the classic end record at endPos, and returns where it starts.
func (d *directory) readEnd64(endPos int64) (int64, error) {
	locPos := endPos - lenLocator64
	if locPos < 0 {
		return 0, formatErr("ZIP64 markers without a ZIP64 locator")
	}
	var loc [lenLocator64]byte
	if _, err := d.r.ReadAt(loc[:], locPos); err != nil {
		return 0, fmt.Errorf("read ZIP64 locator: %w", err)
	}
	if binary.LittleEndian.Uint32(loc[:]) != sigLocator64 {
		return 0, formatErr("ZIP64 markers without a ZIP64 locator")
	}
	pos := binary.LittleEndian.Uint64(loc[8:])
	if pos != uint64(locPos-lenEnd64) {
		return 0, formatErr("ZIP64 end record at %d, expected at %d", pos, locPos-lenEnd64)
	}
	var rec [lenEnd64]byte
	if _, err := d.r.ReadAt(rec[:], int64(pos)); err != nil {
		return 0, fmt.Errorf("read ZIP64 end record: %w", err)
	}
	if binary.LittleEndian.Uint32(rec[:]) != sigEnd64 {
		return 0, formatErr("bad ZIP64 end record signature")
	}
	entries := binary.LittleEndian.Uint64(rec[32:])
	length := binary.LittleEndian.Uint64(rec[40:])
	offset := binary.LittleEndian.Uint64(rec[48:])
	if length > uint64(d.size) || offset > uint64(d.size) {
		return 0, formatErr("ZIP64 central directory (offset %d, %d bytes) lies outside the %d-byte file", offset, length, d.size)
	}
	d.entries, d.length, d.offset = entries, int64(length), int64(offset)
	return int64(pos), nil
}

// cdChunk is the read size of the central directory walk; maxRecord is the
// largest record it may meet (three 16-bit lengths after a fixed header).
const (
	cdChunk   = 256 << 10
	maxRecord = lenCentral + 3*0xffff
)

// walk calls visit for every central directory record, in order, reading
// the directory in chunks through one pooled buffer. The name slice is only
// valid during the call. visit returns false to stop early.
func (d *directory) walk(visit func(name []byte, e *entry) bool) error {
	bp := walkBuffers.Get().(*[]byte)
	defer walkBuffers.Put(bp)
	buf := *bp
	lo, hi := 0, 0   // buf[lo:hi] holds bytes read but not parsed
	next := d.offset // file offset of the next byte to read
	end := d.offset + d.length
	at := d.offset // file offset of buf[lo], the current record
	need := func(n int) error {
		if hi-lo >= n {
			return nil
		}
		if lo > 0 {
			copy(buf, buf[lo:hi])
			hi -= lo
			lo = 0
		}
		for hi < n {
			want := int64(len(buf) - hi)
			if left := end - next; want > left {
				want = left
			}
			if want == 0 {
				return formatErr("central directory record at offset %d runs past the directory's end", at)
			}
			k, err := d.r.ReadAt(buf[hi:hi+int(want)], next)
			hi += k
			next += int64(k)
			if k < int(want) {
				if err == nil || errors.Is(err, io.EOF) {
					return formatErr("file ends inside the central directory at offset %d", next)
				}
				return fmt.Errorf("read central directory at offset %d: %w", next, err)
			}
		}
		return nil
	}
	var e entry
	var count uint64
	for at < end {
		if err := need(lenCentral); err != nil {
			return err
		}
		rec := buf[lo:hi]
		if binary.LittleEndian.Uint32(rec) != sigCentral {
			return formatErr("bad central directory record signature at offset %d", at)
		}
		nameLen := int(binary.LittleEndian.Uint16(rec[28:]))
		extraLen := int(binary.LittleEndian.Uint16(rec[30:]))
		commentLen := int(binary.LittleEndian.Uint16(rec[32:]))
		total := lenCentral + nameLen + extraLen + commentLen
		if err := need(total); err != nil {
			return err
		}
		rec = buf[lo : lo+total]
		e = entry{
			flags:  binary.LittleEndian.Uint16(rec[8:]),
			method: binary.LittleEndian.Uint16(rec[10:]),
			packed: uint64(binary.LittleEndian.Uint32(rec[20:])),
			size:   uint64(binary.LittleEndian.Uint32(rec[24:])),
			header: int64(binary.LittleEndian.Uint32(rec[42:])),
		}
		name := rec[lenCentral : lenCentral+nameLen]
		if e.packed == 0xffffffff || e.size == 0xffffffff || e.header == 0xffffffff {
			if err := e.zip64(rec[lenCentral+nameLen : lenCentral+nameLen+extraLen]); err != nil {
				return fmt.Errorf("entry %q: %w", name, err)
			}
		}
		count++
		if !visit(name, &e) {
			return nil
		}
		lo += total
		at += int64(total)
	}
	// The classic end record keeps the count modulo 2^16.
	if count != d.entries && !(d.entries <= 0xffff && count%0x10000 == d.entries) {
		return formatErr("end record declares %d entries, the central directory holds %d", d.entries, count)
	}
	return nil
}

var walkBuffers = sync.Pool{New: func() any {
	b := make([]byte, cdChunk+maxRecord)
	return &b
}}

// zip64 replaces the 32-bit sizes and offset that are saturated with the
// values of the ZIP64 extended information extra field.
func (e *entry) zip64(extra []byte) error {
	if e.packed != 0xffffffff && e.size != 0xffffffff && e.header != 0xffffffff {
		return nil
	}
	for len(extra) >= 4 {
		tag := binary.LittleEndian.Uint16(extra)
		n := int(binary.LittleEndian.Uint16(extra[2:]))
		if 4+n > len(extra) {
			break
		}
		field := extra[4 : 4+n]
		extra = extra[4+n:]
		if tag != 0x0001 {
			continue
		}
		next := func(v *uint64) error {
			if *v != 0xffffffff {
				return nil
			}
			if len(field) < 8 {
				return formatErr("short ZIP64 extra field")
			}
			*v = binary.LittleEndian.Uint64(field)
			field = field[8:]
			return nil
		}
		header := uint64(e.header)
		if err := next(&e.size); err != nil {
			return err
		}
		if err := next(&e.packed); err != nil {
			return err
		}
		if err := next(&header); err != nil {
			return err
		}
		if header > 1<<62 {
			return formatErr("ZIP64 header offset %d out of range", header)
		}
		e.header = int64(header)
		return nil
	}
	return formatErr("saturated sizes without a ZIP64 extra field")
}

// smallEntry is the size up to which an entry's local header and data are
// read in one go: manifests and version resources.
const smallEntry = 64 << 10

// packedData returns the stored (compressed) bytes of a small entry,
// reading its local header, name and data with one read when the local
// extra field is short, as it is in JARs.
func (d *directory) packedData(e *entry) ([]byte, error) {
	const extraGuess = 64
	if e.header < 0 || e.header > d.offset-lenLocal || e.packed > uint64(d.offset) {
		return nil, formatErr("entry %q: local header offset %d outside the archive's data", e.name, e.header)
	}
	n := min(int64(lenLocal+len(e.name)+extraGuess)+int64(e.packed), d.offset-e.header)
	buf := make([]byte, n)
	if _, err := d.r.ReadAt(buf, e.header); err != nil && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("read local header of %q: %w", e.name, err)
	}
	start, err := d.checkLocal(e, buf)
	if err != nil {
		return nil, err
	}
	if rel := start - e.header; rel+int64(e.packed) <= int64(len(buf)) {
		return buf[rel : rel+int64(e.packed)], nil
	}
	data := make([]byte, e.packed) // a long extra field: read the data on its own
	if _, err := d.r.ReadAt(data, start); err != nil {
		return nil, fmt.Errorf("read %q: %w", e.name, err)
	}
	return data, nil
}

// checkLocal checks the local header at the start of buf (which holds at
// least the fixed header) against e, and returns where e's data starts.
func (d *directory) checkLocal(e *entry, buf []byte) (int64, error) {
	if len(buf) < lenLocal || binary.LittleEndian.Uint32(buf) != sigLocal {
		return 0, formatErr("entry %q: bad local header signature at offset %d", e.name, e.header)
	}
	nameLen := int(binary.LittleEndian.Uint16(buf[26:]))
	extraLen := int64(binary.LittleEndian.Uint16(buf[28:]))
	if nameLen != len(e.name) {
		return 0, formatErr("entry %q: local header names a %d-byte entry", e.name, nameLen)
	}
	if len(buf) < lenLocal+nameLen {
		return 0, formatErr("entry %q: local header runs into the central directory", e.name)
	}
	if name := buf[lenLocal : lenLocal+nameLen]; string(name) != e.name {
		return 0, formatErr("entry %q: local header names %q instead", e.name, name)
	}
	start := e.header + lenLocal + int64(nameLen) + extraLen
	if e.packed > uint64(d.offset) || start > d.offset-int64(e.packed) {
		return 0, formatErr("entry %q: %d bytes of data at offset %d run into the central directory", e.name, e.packed, start)
	}
	return start, nil
}

// dataOffset reads the local file header of e, checks that it names the
// same entry as the central directory, and returns where its data starts.
func (d *directory) dataOffset(e *entry) (int64, error) {
	if e.header < 0 || e.header > d.offset-lenLocal {
		return 0, formatErr("entry %q: local header offset %d outside the archive's data", e.name, e.header)
	}
	buf := make([]byte, lenLocal+len(e.name))
	if int64(len(buf)) > d.offset-e.header {
		return 0, formatErr("entry %q: local header runs into the central directory", e.name)
	}
	if _, err := d.r.ReadAt(buf, e.header); err != nil {
		return 0, fmt.Errorf("read local header of %q: %w", e.name, err)
	}
	start, err := d.checkLocal(e, buf)
	if err != nil {
		return 0, err
	}
	return start, nil
}
