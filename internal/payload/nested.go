package payload

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"maps"
	"sync"
	"unicode/utf8"
)

// The loader may read its nested core in either of two ways: extracted and
// opened as a JarFile (its central directory), or streamed with
// JarInputStream (its local headers, front to back). A nested core is
// admitted only when both readings find the same manifest.
//
// A stored core is read both ways in place. A deflated one can only be
// streamed without inflating all of it, so it is streamed as far as
// JarInputStream's constructor reads: damage after its manifest goes
// unseen, the one accepted difference from the JVM.
//
// Either way the nested JAR's facts are its manifest only: the entries of a
// deflated core are never seen, so those of a stored one are not used
// either, and the verdict does not depend on how the core was packed.

// maxInflate bounds what is inflated of a deflated nested JAR while
// streaming it: a decompression bomb is refused.
const maxInflate = 64 << 20

// errBudget is returned when a nested JAR would inflate beyond maxInflate.
var errBudget = fmt.Errorf("%w: embedded JAR inflates beyond %d MiB before its manifest ends", ErrFormat, maxInflate>>20)

// rebuild is the fix for a core the two readings disagree on.
const rebuild = "rebuild it with the manifest as its first entry (or second, after META-INF/), as the jar tool and Maven write it"

// readNested reads the JAR stored in entry e.
func readNested(d *directory, e *entry, path string) *JAR {
	n := &JAR{Path: path, Size: int64(e.size)}
	off, err := d.dataStart(e, nil)
	if err != nil {
		n.Err = err
		return n
	}
	if d.avail(e, off) < int64(e.packed) {
		n.Err = formatErr("the %d bytes of its entry at offset %d run past the end of the %d-byte file", e.packed, off, d.size)
		return n
	}
	sec := io.NewSectionReader(d.r, off, int64(e.packed))
	b := &budget{left: maxInflate}
	var streamed *Manifest
	switch e.method {
	case methodStored:
		if e.packed != e.size {
			n.Err = fmt.Errorf("%w: stored entry has %d bytes packed but %d unpacked; its length is ambiguous", ErrFormat, e.packed, e.size)
			return n
		}
		// JarInputStream's reading first: when JarFile's names the same
		// entry, its manifest need not be read twice.
		t := &tracked{r: sec}
		br := bufReader(t)
		defer bufReaders.Put(br)
		var h *local
		if streamed, h, err = streamManifest(br, b, func() int64 { return t.n - int64(br.Buffered()) }); err != nil {
			n.Err = fmt.Errorf("embedded JAR read front to back (as JarInputStream reads it): %w; %s", err, rebuild)
			return n
		}
		opt := Options{}
		if streamed != nil {
			opt.known = &known{header: h.at, method: h.method, packed: h.read, size: h.size, manifest: streamed}
		}
		whole := &JAR{Path: path}
		whole.read(sec, int64(e.size), opt, 1)
		if whole.Err != nil {
			n.Err = fmt.Errorf("embedded JAR read through its central directory (as JarFile reads it): %w", whole.Err)
			return n
		}
		if err := agree(whole.Manifest, streamed); err != nil {
			n.Err = err
			return n
		}
	default: // deflated: the central directory checked that
		n.Streamed = true
		fr := inflater(sec)
		defer inflaters.Put(fr)
		br := bufReader(b.reader(fr))
		defer bufReaders.Put(br)
		var at *local
		if streamed, at, err = streamManifest(br, b, nil); err != nil {
			n.Err = fmt.Errorf("embedded JAR read front to back (as JarInputStream reads it): %w; %s", err, rebuild)
			return n
		}
		if streamed == nil {
			if err := noManifestAfter(br, at, b); err != nil {
				n.Err = err
				return n
			}
		} else if core, ok := streamed.Get(EmbeddedCoreAttr); ok && core != "" {
			n.Err = fmt.Errorf("%w: an embedded JAR declares an embedded core of its own (%s); only one level of nesting is allowed", ErrFormat, core)
			return n
		}
	}
	n.Manifest = streamed
	return n
}

// agree compares the manifests the two readings found.
func agree(whole, streamed *Manifest) error {
	switch {
	case whole == nil && streamed == nil:
		return nil
	case streamed == nil:
		return fmt.Errorf("%w: embedded JAR: JarFile finds a manifest but JarInputStream finds none (it looks only at the first entry, or the second after META-INF/); %s", ErrFormat, rebuild)
	case whole == nil:
		return fmt.Errorf("%w: embedded JAR: JarInputStream finds a manifest in its local headers that its central directory does not list (a stray local header?); %s", ErrFormat, rebuild)
	case !maps.Equal(whole.attrs, streamed.attrs):
		return fmt.Errorf("%w: embedded JAR: JarFile and JarInputStream read different manifests (a stray local header ahead of the central directory?); %s", ErrFormat, rebuild)
	}
	return nil
}

var bufReaders sync.Pool

// bufReader returns a pooled bufio.Reader reading r.
func bufReader(r io.Reader) *bufio.Reader {
	if br, ok := bufReaders.Get().(*bufio.Reader); ok {
		br.Reset(r)
		return br
	}
	return bufio.NewReader(r)
}

// budget is what may still be inflated; every reader it hands out draws on it.
type budget struct{ left int64 }

func (b *budget) reader(r io.Reader) io.Reader { return &bounded{r: r, b: b} }

type bounded struct {
	r io.Reader
	b *budget
}

func (r *bounded) Read(p []byte) (int, error) {
	if r.b.left <= 0 {
		return 0, errBudget
	}
	if int64(len(p)) > r.b.left {
		p = p[:r.b.left]
	}
	n, err := r.r.Read(p)
	r.b.left -= int64(n)
	return n, err
}

// local is a local file header as JarInputStream reads it.
type local struct {
	name              []byte
	flags, method     uint16
	crc               uint32
	packed, size      uint64
	descriptor, sizes bool   // sizes: packed and size came from the header
	at                int64  // where the header starts in the stream; -1 when not known
	read              uint64 // compressed bytes its data took, once read
}

// streamManifest reads what JarInputStream's constructor reads: the first
// local entry, or the second when the first is META-INF/; that entry's data
// when it is the manifest (its sizes and CRC checked); and the local header
// after it. It returns the header of the entry it stopped at: the
// manifest's, or, with no manifest, the entry's that is not one (its data
// unread; nil at the end of the entries). tell, when not nil, gives the
// position in the stream, recorded in the header as where it starts.
func streamManifest(r *bufio.Reader, b *budget, tell func() int64) (*Manifest, *local, error) {
	next := func() (*local, error) {
		at := int64(-1)
		if tell != nil {
			at = tell()
		}
		h, err := nextLocal(r)
		if h != nil {
			h.at = at
		}
		return h, err
	}
	h, err := next()
	if err != nil {
		return nil, nil, err
	}
	if h != nil && bytes.EqualFold(h.name, []byte("META-INF/")) {
		if _, err := h.data(r, b, false); err != nil {
			return nil, nil, err
		}
		if h, err = next(); err != nil {
			return nil, nil, err
		}
	}
	if h == nil || !isManifest(h.name) {
		return nil, h, nil
	}
	data, err := h.data(r, b, true)
	if err != nil {
		return nil, nil, err
	}
	m, err := parseManifest(data)
	if err != nil {
		return nil, nil, fmt.Errorf("read %s: %w", h.name, err)
	}
	if _, err := nextLocal(r); err != nil {
		return nil, nil, fmt.Errorf("after %s: %w", h.name, err)
	}
	return &m, h, nil
}

// tracked counts the bytes read from r, so that a position in a buffered
// stream over it is n minus what the buffer holds.
type tracked struct {
	r io.Reader
	n int64
}

func (t *tracked) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	t.n += int64(n)
	return n, err
}

func isManifest(name []byte) bool { return bytes.EqualFold(name, []byte(ManifestName)) }

// noManifestAfter follows the local entries of a deflated core from h on,
// when JarInputStream has found no manifest: a manifest further on is one
// JarFile would read and JarInputStream would not, so the two readings
// disagree. A core without any manifest reads the same both ways.
func noManifestAfter(r *bufio.Reader, h *local, b *budget) error {
	for h != nil {
		// Only the central directory says what JarFile reads: a local
		// header named like the manifest that it does not list is unseen.
		if _, err := h.data(r, b, false); err != nil {
			return fmt.Errorf("embedded JAR read front to back to look for a manifest JarInputStream does not see: %w; %s", err, rebuild)
		}
		var err error
		if h, err = nextLocal(r); err != nil {
			return fmt.Errorf("embedded JAR read front to back to look for a manifest JarInputStream does not see: %w; %s", err, rebuild)
		}
	}
	// The entries end: JarFile reads the central directory that follows
	// (or, for an empty archive, the end record alone).
	for {
		sig, err := r.Peek(lenCentral)
		if err == nil && binary.LittleEndian.Uint32(sig) == sigCentral {
			name := make([]byte, binary.LittleEndian.Uint16(sig[28:]))
			skip := int(binary.LittleEndian.Uint16(sig[30:])) + int(binary.LittleEndian.Uint16(sig[32:]))
			if _, err = r.Discard(lenCentral); err == nil {
				if _, err = io.ReadFull(r, name); err == nil {
					_, err = r.Discard(skip)
				}
			}
			if err != nil {
				return truncated(err, "embedded JAR ends inside its central directory")
			}
			if isManifest(name) {
				return fmt.Errorf("%w: embedded JAR: its central directory lists a manifest where JarInputStream does not look (the first entry, or the second after META-INF/): JarFile reads it, JarInputStream does not; %s", ErrFormat, rebuild)
			}
			continue
		}
		if len(sig) < 4 || binary.LittleEndian.Uint32(sig) != sigEnd {
			return formatErr("embedded JAR: its entries are followed by neither a central directory nor an end record (truncated, or not a ZIP archive)")
		}
		return nil
	}
}

// nextLocal reads a local header; nil when the stream ends or something
// other than a local header follows, which is the end of the entries to a
// JarInputStream.
func nextLocal(r *bufio.Reader) (*local, error) {
	if sig, err := r.Peek(4); err != nil || binary.LittleEndian.Uint32(sig) != sigLocal {
		return nil, nil // left unread: the caller may look at what follows
	}
	var hdr [lenLocal]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, nil
		}
		return nil, err
	}
	h := &local{flags: binary.LittleEndian.Uint16(hdr[6:]), method: binary.LittleEndian.Uint16(hdr[8:])}
	h.name = make([]byte, binary.LittleEndian.Uint16(hdr[26:]))
	if _, err := io.ReadFull(r, h.name); err != nil {
		return nil, truncated(err, "ends inside a local header")
	}
	switch {
	case !utf8.Valid(h.name):
		return nil, formatErr("local entry name %q is not UTF-8", h.name)
	case h.flags&flagEncrypted != 0:
		return nil, formatErr("entry %q is encrypted", h.name)
	case h.flags&flagDescriptor != 0 && h.method != methodDeflated:
		return nil, formatErr("entry %q has a data descriptor but is not deflated; JarInputStream cannot read it", h.name)
	}
	h.descriptor = h.flags&flagDescriptor != 0
	if !h.descriptor {
		h.sizes = true
		h.crc = binary.LittleEndian.Uint32(hdr[14:])
		h.packed = uint64(binary.LittleEndian.Uint32(hdr[18:]))
		h.size = uint64(binary.LittleEndian.Uint32(hdr[22:]))
	}
	extra := make([]byte, binary.LittleEndian.Uint16(hdr[28:]))
	if _, err := io.ReadFull(r, extra); err != nil {
		return nil, truncated(err, fmt.Sprintf("entry %q ends inside its local extra field", h.name))
	}
	if h.sizes && (h.packed == magic32 || h.size == magic32) {
		// ZIP64: both sizes from the first 16 bytes of the field.
		for off := 0; off+4 < len(extra); {
			tag := binary.LittleEndian.Uint16(extra[off:])
			n := int(binary.LittleEndian.Uint16(extra[off+2:]))
			off += 4
			if off+n > len(extra) {
				break
			}
			if tag == tagZIP64 && n >= 16 {
				h.size = binary.LittleEndian.Uint64(extra[off:])
				h.packed = binary.LittleEndian.Uint64(extra[off+8:])
			}
			off += n
		}
	}
	return h, nil
}

// counter counts the compressed bytes an inflater consumes; it is a
// ByteReader, so flate reads no further than the stream's end.
type counter struct {
	r *bufio.Reader
	n uint64
}

func (c *counter) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += uint64(n)
	return n, err
}

func (c *counter) ReadByte() (byte, error) {
	b, err := c.r.ReadByte()
	if err == nil {
		c.n++
	}
	return b, err
}

// data reads the entry's data as JarInputStream does: a stored entry by the
// size its header gives, its CRC checked; a deflated one to the end of its
// deflate stream, then its sizes and CRC checked against the header or the
// data descriptor. keep says whether the bytes are wanted (at most
// maxDeclaredMF of them); otherwise they are only checked.
func (h *local) data(r *bufio.Reader, b *budget, keep bool) ([]byte, error) {
	var body io.Reader
	var c *counter
	switch h.method {
	case methodStored:
		body = io.LimitReader(r, int64(h.size))
	case methodDeflated:
		c = &counter{r: r}
		fr := inflater(c)
		defer inflaters.Put(fr)
		body = b.reader(fr)
	default:
		return nil, formatErr("entry %q uses compression method %d; JARs use stored (0) or deflated (8)", h.name, h.method)
	}
	var data []byte
	var n int64
	var err error
	crc := crc32.NewIEEE()
	if keep {
		var buf bytes.Buffer
		n, err = buf.ReadFrom(io.LimitReader(body, maxDeclaredMF+1))
		data = buf.Bytes()
		crc.Write(data)
	} else {
		var buf [512]byte
		n, err = io.CopyBuffer(crc, body, buf[:]) //nolint:gosec // G110: bounded by the budget
	}
	switch {
	case errors.Is(err, errBudget):
		return nil, err
	case err != nil:
		return nil, truncated(err, fmt.Sprintf("entry %q is damaged", h.name))
	case n > maxDeclaredMF:
		return nil, fmt.Errorf("%w: embedded %s is longer than the %d bytes this tool reads", ErrManifest, h.name, maxDeclaredMF)
	}
	if c == nil {
		h.read = uint64(n)
		if uint64(n) < h.size {
			return nil, formatErr("entry %q ends after %d of its %d bytes (truncated)", h.name, n, h.size)
		}
		if h.size > 0 && crc.Sum32() != h.crc {
			return nil, formatErr("entry %q fails its CRC-32 check (0x%08x, its header says 0x%08x)", h.name, crc.Sum32(), h.crc)
		}
		return data, nil
	}
	h.read = c.n
	if h.descriptor {
		if err := h.readDescriptor(r); err != nil {
			return nil, err
		}
	}
	switch {
	case h.size != uint64(n):
		return nil, formatErr("entry %q inflates to %d bytes, its header says %d", h.name, n, h.size)
	case h.packed != c.n:
		return nil, formatErr("entry %q holds %d compressed bytes, its header says %d", h.name, c.n, h.packed)
	case crc.Sum32() != h.crc:
		return nil, formatErr("entry %q fails its CRC-32 check (0x%08x, its header says 0x%08x)", h.name, crc.Sum32(), h.crc)
	}
	return data, nil
}

// readDescriptor reads the data descriptor after a deflated entry: CRC and
// two 32-bit sizes, with or without a signature ahead of them (entries small
// enough to come before a manifest have no ZIP64 descriptors).
func (h *local) readDescriptor(r *bufio.Reader) error {
	d, err := r.Peek(16)
	if err != nil {
		return truncated(err, fmt.Sprintf("entry %q ends inside its data descriptor", h.name))
	}
	n := 12
	if binary.LittleEndian.Uint32(d) == sigDescriptor {
		n, d = 16, d[4:]
	}
	h.crc = binary.LittleEndian.Uint32(d)
	h.packed = uint64(binary.LittleEndian.Uint32(d[4:]))
	h.size = uint64(binary.LittleEndian.Uint32(d[8:]))
	_, err = r.Discard(n)
	return err
}
