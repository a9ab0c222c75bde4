package payload

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"
	"unicode/utf8"
)

// ZIP record signatures and sizes (APPNOTE.TXT 4.3).
const (
	sigLocal      = 0x04034b50
	sigCentral    = 0x02014b50
	sigEnd        = 0x06054b50
	sigEnd64      = 0x06064b50
	sigLocator64  = 0x07064b50
	sigDescriptor = 0x08074b50

	lenLocal     = 30
	lenCentral   = 46
	lenEnd       = 22
	lenEnd64     = 56
	lenLocator64 = 20

	maxCommentLen  = 0xffff
	flagEncrypted  = 0x1
	flagDescriptor = 0x8 // sizes and CRC follow the data (general purpose bit 3)

	methodStored   = 0
	methodDeflated = 8

	magic32  = 0xffffffff // a saturated 32-bit field: look for ZIP64
	magic16  = 0xffff
	tagZIP64 = 0x0001
)

// ErrFormat is returned, wrapped with details, when the bytes are not a ZIP
// archive the JVM would open.
var ErrFormat = errors.New("not a valid ZIP archive")

func formatErr(format string, args ...any) error {
	return fmt.Errorf("%w: %s", ErrFormat, fmt.Sprintf(format, args...))
}

// directory is the location of a ZIP archive's central directory, found as
// java.util.zip.ZipFile finds it.
type directory struct {
	r      io.ReaderAt
	size   int64 // bytes of the file
	base   int64 // where the archive starts: bytes prepended to it (a launch script) shift every offset
	offset int64 // of the first central directory record, in the file
	length int64 // bytes of the central directory

	// crc is the CRC-32 of the whole directory once a walk has read all
	// of it (hashed: true): the fingerprint takes it instead of reading
	// the directory again.
	crc    uint32
	hashed bool
}

// entry is what the scan keeps of one central directory record.
type entry struct {
	name   string
	method uint16
	flags  uint16
	crc    uint32 // as the central directory records it
	packed uint64 // compressed size
	size   uint64 // uncompressed size
	header int64  // offset of the local file header, relative to the archive's start
}

// openDirectory finds the end-of-central-directory record and, for ZIP64,
// its 64-bit counterpart, with the JVM's rules: the last end record whose
// comment reaches exactly to the end of the file, or, when junk follows the
// archive, one whose directory and first local header start with their
// signatures. A ZIP64 end record is used when a locator points at one that
// agrees with the classic record; otherwise the classic values stand, even
// when saturated (65,535 entries without ZIP64 records). The central
// directory ends where the (ZIP64) end record starts; whatever lies before
// the archive's first byte is a prefix and shifts every offset.
func openDirectory(r io.ReaderAt, size int64) (*directory, error) {
	if size < lenEnd {
		return nil, formatErr("%d bytes is too short for a ZIP end record", size)
	}
	// The end record is the last 22 bytes unless an archive comment or
	// junk follows it: look in a small tail first, then in the largest
	// one a comment allows.
	for _, n := range []int64{512, lenEnd + maxCommentLen} {
		tail := min(n, size)
		buf := make([]byte, tail)
		if _, err := r.ReadAt(buf, size-tail); err != nil && !errors.Is(err, io.EOF) {
			return nil, fmt.Errorf("read end of central directory: %w", err)
		}
		for i := len(buf) - lenEnd; i >= 0; i-- {
			if binary.LittleEndian.Uint32(buf[i:]) != sigEnd {
				continue
			}
			d, ok, err := candidate(r, size, size-tail+int64(i), buf[i:i+lenEnd], buf[:i])
			if err != nil || ok {
				return d, err
			}
		}
		if tail == size {
			break
		}
	}
	return nil, formatErr("no end-of-central-directory record (truncated, or not a ZIP file)")
}

// candidate judges the end record rec found at endPos, after the bytes
// before (what the tail read holds of them); ok is false when the search
// goes on.
func candidate(r io.ReaderAt, size, endPos int64, rec, before []byte) (*directory, bool, error) {
	entries := uint64(binary.LittleEndian.Uint16(rec[10:]))
	length := int64(binary.LittleEndian.Uint32(rec[12:]))
	offset := int64(binary.LittleEndian.Uint32(rec[16:]))
	comment := int64(binary.LittleEndian.Uint16(rec[20:]))
	if endPos+lenEnd+comment != size {
		// Bytes after the archive: believe this record only when the
		// directory and the first local header it implies are there.
		cen, loc := endPos-length, endPos-length-offset
		if cen < 0 || loc < 0 || sigAt(r, cen) != sigCentral || sigAt(r, loc) != sigLocal {
			return nil, false, nil
		}
	}
	if endPos+lenEnd+comment > size {
		return nil, true, formatErr("archive comment of %d bytes runs past the end of the file", comment)
	}
	if endPos >= lenLocator64 {
		if l, o, pos, ok := end64(r, endPos, before, entries, length, offset); ok {
			length, offset, endPos = l, o, pos
		}
	}
	if endPos == 0 {
		return &directory{r: r, size: size}, true, nil // an end record alone: no entries
	}
	if length > endPos {
		return nil, true, formatErr("end record declares a %d-byte central directory, more than the %d bytes before it", length, endPos)
	}
	d := &directory{r: r, size: size, offset: endPos - length, length: length}
	if d.base = d.offset - offset; d.base < 0 {
		return nil, true, formatErr("end record places the central directory at offset %d, beyond the %d bytes before it", offset, d.offset)
	}
	return d, true, nil
}

// end64 reads the ZIP64 end record through the locator just before the
// classic end record at endPos (in before, when the tail read holds it). It
// is used only when it agrees with every classic value that is not
// saturated, as the JVM does.
func end64(r io.ReaderAt, endPos int64, before []byte, entries uint64, length, offset int64) (int64, int64, int64, bool) {
	var loc []byte
	if len(before) >= lenLocator64 {
		loc = before[len(before)-lenLocator64:]
	} else {
		loc = make([]byte, lenLocator64)
		if _, err := r.ReadAt(loc, endPos-lenLocator64); err != nil {
			return 0, 0, 0, false
		}
	}
	if binary.LittleEndian.Uint32(loc) != sigLocator64 {
		return 0, 0, 0, false
	}
	pos := binary.LittleEndian.Uint64(loc[8:])
	var rec [lenEnd64]byte
	if pos > 1<<62 {
		return 0, 0, 0, false
	}
	if _, err := r.ReadAt(rec[:], int64(pos)); err != nil || binary.LittleEndian.Uint32(rec[:]) != sigEnd64 {
		return 0, 0, 0, false
	}
	entries64 := binary.LittleEndian.Uint64(rec[32:])
	length64 := binary.LittleEndian.Uint64(rec[40:])
	offset64 := binary.LittleEndian.Uint64(rec[48:])
	if length64 != uint64(length) && length != magic32 ||
		offset64 != uint64(offset) && offset != magic32 ||
		entries64 != entries && entries != magic16 {
		return 0, 0, 0, false
	}
	if length64 > 1<<62 || offset64 > 1<<62 {
		return 0, 0, 0, false
	}
	return int64(length64), int64(offset64), int64(pos), true
}

func sigAt(r io.ReaderAt, off int64) uint32 {
	var b [4]byte
	if _, err := r.ReadAt(b[:], off); err != nil {
		return 0
	}
	return binary.LittleEndian.Uint32(b[:])
}

// cdChunk is the read size of the central directory walk; maxRecord is the
// largest record the JVM accepts (header, name, extra and comment together
// within 64 KiB). 64 KiB chunks, not 256: a start is a fresh process, and
// each page of a larger buffer is a page fault to zero (issue 19 measured
// 124 fewer faults and 4% less CPU on the real 2.2.0 lib for 80 more preads).
const (
	cdChunk   = 64 << 10
	maxRecord = 0xffff
)

// window is a sliding view of the central directory, read in chunks
// through one pooled buffer: buf[lo:hi] holds bytes read but not yet
// consumed, next is the file offset of the next byte to read.
type window struct {
	r         io.ReaderAt
	buf       []byte
	lo, hi    int
	next, end int64
	crc       uint32 // of the bytes read so far, from the directory's start
}

// fill makes at least n bytes available at buf[lo:], or says why it cannot.
func (w *window) fill(n int, at int64) error {
	if w.hi-w.lo >= n {
		return nil
	}
	if w.lo > 0 {
		w.hi = copy(w.buf, w.buf[w.lo:w.hi])
		w.lo = 0
	}
	for w.hi < n {
		want := min(int64(len(w.buf)-w.hi), w.end-w.next)
		if want == 0 {
			return formatErr("central directory record at offset %d runs past the directory's end", at)
		}
		k, err := w.r.ReadAt(w.buf[w.hi:w.hi+int(want)], w.next)
		w.crc = crc32.Update(w.crc, crc32.IEEETable, w.buf[w.hi:w.hi+k])
		w.hi += k
		w.next += int64(k)
		if k < int(want) {
			if err == nil || errors.Is(err, io.EOF) {
				return formatErr("file ends inside the central directory at offset %d", w.next)
			}
			return fmt.Errorf("read central directory at offset %d: %w", w.next, err)
		}
	}
	return nil
}

// walk calls visit for every central directory record, in order, and
// refuses the archive where the JVM's ZipFile refuses to open it: a bad
// signature, an encrypted entry, a method other than stored or deflated, a
// record over 64 KiB, a malformed extra field, a name that is not UTF-8, or
// records that do not fill the directory exactly. The entry count of the
// end record is not checked (the JVM counts the records). The name slice
// is only valid during the call. visit returns false to stop early.
func (d *directory) walk(visit func(name []byte, e *entry) bool) (err error) {
	bp := walkBuffers.Get().(*[]byte)
	defer walkBuffers.Put(bp)
	w := window{r: d.r, buf: *bp, next: d.offset, end: d.offset + d.length}
	var e entry
	for at := d.offset; at < w.end; {
		if w.hi-w.lo < lenCentral {
			if err := w.fill(lenCentral, at); err != nil {
				return err
			}
		}
		rec := w.buf[w.lo:w.hi]
		if binary.LittleEndian.Uint32(rec) != sigCentral {
			return formatErr("bad central directory record signature at offset %d", at)
		}
		nameLen := int(binary.LittleEndian.Uint16(rec[28:]))
		extraLen := int(binary.LittleEndian.Uint16(rec[30:]))
		commentLen := int(binary.LittleEndian.Uint16(rec[32:]))
		total := lenCentral + nameLen + extraLen + commentLen
		if total > maxRecord {
			return formatErr("central directory record at offset %d is %d bytes long, more than 64 KiB", at, total)
		}
		if len(rec) < total {
			if err := w.fill(total, at); err != nil {
				return err
			}
		}
		rec = w.buf[w.lo : w.lo+total]
		// Field by field: a composite literal is built on the stack and
		// copied in wide moves that stall on the narrow stores before them
		// (a fifth of the walk's time, measured).
		e.flags = binary.LittleEndian.Uint16(rec[8:])
		e.method = binary.LittleEndian.Uint16(rec[10:])
		e.crc = binary.LittleEndian.Uint32(rec[16:])
		e.packed = uint64(binary.LittleEndian.Uint32(rec[20:]))
		e.size = uint64(binary.LittleEndian.Uint32(rec[24:]))
		e.header = int64(binary.LittleEndian.Uint32(rec[42:]))
		name := rec[lenCentral : lenCentral+nameLen]
		// Nearly every record of a real JAR is plain: check the rest only
		// when something is set that needs a closer look.
		if extraLen != 0 || e.flags&flagEncrypted != 0 || e.method != methodStored && e.method != methodDeflated ||
			e.packed == magic32 || e.size == magic32 || e.header == magic32 || !ascii(name) {
			if err := e.check(name, rec[lenCentral+nameLen:lenCentral+nameLen+extraLen]); err != nil {
				return err
			}
		}
		if !visit(name, &e) {
			return nil
		}
		w.lo += total
		at += int64(total)
	}
	if w.next == w.end {
		d.crc, d.hashed = w.crc, true
	}
	return nil
}

// ascii reports whether b holds 7-bit bytes only: 32 bytes a loop (a
// JAR's names are 60-130 bytes long, and one branch a word costs more
// than the loads), the last 16 overlapping what came before, and words
// that overlap for names under 16 bytes.
func ascii(b []byte) bool {
	if len(b) < 16 {
		return ascii15(b)
	}
	acc := le64(b[len(b)-16:]) | le64(b[len(b)-8:])
	for ; len(b) >= 32; b = b[32:] {
		acc |= le64(b) | le64(b[8:]) | le64(b[16:]) | le64(b[24:])
	}
	if len(b) >= 16 {
		acc |= le64(b) | le64(b[8:])
	}
	return acc&high7 == 0
}

const high7 = 0x8080808080808080

func le64(b []byte) uint64 { return binary.LittleEndian.Uint64(b) }

// ascii15 is ascii for b under 16 bytes.
func ascii15(b []byte) bool {
	if len(b) < 8 {
		for _, c := range b {
			if c >= 0x80 {
				return false
			}
		}
		return true
	}
	return (le64(b)|le64(b[len(b)-8:]))&high7 == 0
}

var walkBuffers = sync.Pool{New: func() any {
	b := make([]byte, cdChunk+maxRecord)
	return &b
}}

// check applies the JVM's checks to one central directory record and
// replaces saturated sizes and offset with their ZIP64 values.
func (e *entry) check(name, extra []byte) error {
	switch {
	case e.flags&flagEncrypted != 0:
		return formatErr("entry %q is encrypted", name)
	case e.method != methodStored && e.method != methodDeflated:
		return formatErr("entry %q uses compression method %d; JARs use stored (0) or deflated (8)", name, e.method)
	case !utf8.Valid(name):
		return formatErr("entry name %q is not UTF-8", name)
	}
	saturated := e.packed == magic32 || e.size == magic32 || e.header == magic32
	if len(extra) == 0 {
		if saturated {
			return formatErr("entry %q: saturated sizes without a ZIP64 extra field", name)
		}
		return nil
	}
	for rest := extra; len(rest) >= 4; {
		tag := binary.LittleEndian.Uint16(rest)
		n := int(binary.LittleEndian.Uint16(rest[2:]))
		if 4+n > len(rest) {
			return formatErr("entry %q: extra field 0x%04x declares %d bytes, %d remain", name, tag, n, len(rest)-4)
		}
		if tag == tagZIP64 {
			if err := e.zip64(name, rest[4:4+n]); err != nil {
				return err
			}
		}
		rest = rest[4+n:]
	}
	// Saturated values without a ZIP64 field stay as they are: the JVM
	// opens such an archive and fails only when the entry is read.
	return nil
}

// zip64 reads the ZIP64 extended information extra field of a central
// record: one 64-bit value for each saturated field, in the order size,
// compressed size, header offset; the JVM accepts only data sizes that
// are a whole number of such fields, with or without a disk number.
func (e *entry) zip64(name, field []byte) error {
	if len(field) == 0 {
		if e.packed == magic32 || e.size == magic32 {
			return formatErr("entry %q: empty ZIP64 extra field for saturated sizes", name)
		}
		return nil
	}
	switch len(field) {
	case 4, 8, 12, 16, 20, 24, 28:
	default:
		return formatErr("entry %q: ZIP64 extra field of %d bytes", name, len(field))
	}
	header := uint64(e.header)
	for _, v := range []*uint64{&e.size, &e.packed, &header} {
		if *v != magic32 {
			continue
		}
		if len(field) < 8 {
			return formatErr("entry %q: short ZIP64 extra field", name)
		}
		if *v = binary.LittleEndian.Uint64(field); *v > 1<<62 {
			return formatErr("entry %q: ZIP64 value %d out of range", name, *v)
		}
		field = field[8:]
	}
	e.header = int64(header)
	return nil
}

// smallEntry is the size up to which an entry's local header and data are
// read in one go: manifests and version resources.
const smallEntry = 64 << 10

// dataStart reads the local header of e (only its signature and lengths
// count, as for the JVM: the local name and extra field are not compared
// with the central ones) and returns where e's data starts in the file.
// When buf is given, it holds the bytes from the local header on.
func (d *directory) dataStart(e *entry, buf []byte) (int64, error) {
	at := d.base + e.header
	if e.header < 0 || at > d.size-lenLocal {
		return 0, formatErr("entry %q: local header offset %d outside the %d-byte file", e.name, e.header, d.size)
	}
	if len(buf) < lenLocal {
		buf = make([]byte, lenLocal)
		if _, err := d.r.ReadAt(buf, at); err != nil {
			return 0, fmt.Errorf("read local header of %q: %w", e.name, err)
		}
	}
	if binary.LittleEndian.Uint32(buf) != sigLocal {
		return 0, formatErr("entry %q: bad local header signature at offset %d", e.name, at)
	}
	start := at + lenLocal + int64(binary.LittleEndian.Uint16(buf[26:])) + int64(binary.LittleEndian.Uint16(buf[28:]))
	return start, nil
}

// avail is how much of e's data, starting at start, the file holds: the
// JVM reads an entry up to its compressed size or the end of the file,
// whichever comes first, and fails only if it needs more.
func (d *directory) avail(e *entry, start int64) int64 {
	if start >= d.size {
		return 0 // an empty entry reads; any other finds no data
	}
	return int64(min(e.packed, uint64(d.size-start)))
}

// packedData returns the stored (compressed) bytes of a small entry,
// reading its local header, name and data with one read when the local
// extra field is short, as it is in JARs. It reads into into when that is
// large enough, and returns the buffer it read the header into (into or a
// new one) for the caller to reuse once data is no longer needed.
func (d *directory) packedData(e *entry, into []byte) (data, buf []byte, err error) {
	const extraGuess = 64
	at := d.base + e.header
	if e.header < 0 || at > d.size-lenLocal {
		return nil, nil, formatErr("entry %q: local header offset %d outside the %d-byte file", e.name, e.header, d.size)
	}
	want := min(int64(lenLocal+len(e.name)+extraGuess)+int64(min(e.packed, smallEntry)), d.size-at)
	buf = into
	if int64(cap(buf)) < want {
		buf = make([]byte, want)
	}
	buf = buf[:want]
	got, err := d.r.ReadAt(buf, at)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, fmt.Errorf("read local header of %q: %w", e.name, err)
	}
	clear(buf[got:]) // a reused buffer reads as a new one past a short read
	start, err := d.dataStart(e, buf)
	if err != nil {
		return nil, nil, err
	}
	n := d.avail(e, start)
	if n == 0 {
		return nil, buf, nil
	}
	if rel := start - at; rel+n <= int64(len(buf)) {
		return buf[rel : rel+n], buf, nil
	}
	data = make([]byte, n) // a long local extra field: read the data on its own
	if _, err := d.r.ReadAt(data, start); err != nil {
		return nil, nil, fmt.Errorf("read %q: %w", e.name, err)
	}
	return data, buf, nil
}
