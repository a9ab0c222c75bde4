package baked

import (
	"bytes"
	"fmt"
	"hash/crc32"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// encodeIndex writes the class index, compressed: one table of strings, then per JAR
// its classes, each its name, CRC and size, then its body (major, access,
// supertypes, members) prefixed with its length, so a reader can leave
// the body undecoded until a rule asks for the class.
func encodeIndex(index [][]Class) ([]byte, error) {
	e := newIndexEncoder(len(index))
	for _, classes := range index {
		e.jar(len(classes))
		for i := range classes {
			e.class(&classes[i])
		}
	}
	return e.compressed()
}

// indexEncoder writes the class index one class at a time, so a caller
// that parses classes as it goes holds none of them past their turn.
type indexEncoder struct {
	ids   map[string]uint64
	table []string
	jars  writer
	body  writer
}

func newIndexEncoder(njars int) *indexEncoder {
	e := &indexEncoder{ids: make(map[string]uint64, 1<<12)}
	e.jars.uv(uint64(njars))
	return e
}

func (e *indexEncoder) id(s string) uint64 {
	if i, ok := e.ids[s]; ok {
		return i
	}
	i := uint64(len(e.table))
	e.ids[s] = i
	e.table = append(e.table, s)
	return i
}

// jar starts the next JAR, of n classes.
func (e *indexEncoder) jar(n int) { e.jars.uv(uint64(n)) }

func (e *indexEncoder) members(ms []classfile.Member) {
	e.body.uv(uint64(len(ms)))
	for _, m := range ms {
		e.body.uv(e.id(m.Name))
		e.body.uv(e.id(m.Descriptor))
		e.body.uv(uint64(m.Access))
	}
}

// class writes the next class of the current JAR.
func (e *indexEncoder) class(c *Class) {
	e.jars.uv(e.id(c.Name))
	e.jars.u32(c.CRC)
	e.jars.uv(c.Size)
	if c.Unreadable {
		e.jars.uv(0)
		return
	}
	e.body.b = e.body.b[:0]
	e.body.uv(uint64(c.Major))
	e.body.uv(uint64(c.Access))
	if c.Super == "" {
		e.body.uv(0)
	} else {
		e.body.uv(e.id(c.Super) + 1)
	}
	e.body.uv(uint64(len(c.Interfaces)))
	for _, i := range c.Interfaces {
		e.body.uv(e.id(i))
	}
	e.members(c.Fields)
	e.members(c.Methods)
	e.jars.uv(uint64(len(e.body.b)))
	e.jars.b = append(e.jars.b, e.body.b...)
}

// compressed is the index, compressed: the table of strings, then the
// JARs, streamed into the compressor a piece at a time (the whole index
// is never one buffer: for the real 2.2.0 lib it is 27 MB, mostly the
// table). The encoder is spent after it.
func (e *indexEncoder) compressed() ([]byte, error) {
	var out bytes.Buffer
	z, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(indexLevel), zstd.WithEncoderConcurrency(1), zstd.WithWindowSize(indexWindow))
	if err != nil {
		return nil, err
	}
	// The frame says the index's size, so a start that decompresses it
	// allocates it once.
	size := uvarintLen(uint64(len(e.table))) + len(e.jars.b)
	for _, s := range e.table {
		size += uvarintLen(uint64(len(s))) + len(s)
	}
	z.ResetContentSize(&out, int64(size))
	var w writer
	flush := func() error {
		_, err := z.Write(w.b)
		w.b = w.b[:0]
		return err
	}
	w.uv(uint64(len(e.table)))
	for _, s := range e.table {
		w.str(s)
		if len(w.b) >= 64<<10 {
			if err := flush(); err != nil {
				return nil, err
			}
		}
	}
	e.ids, e.table = nil, nil
	if err := flush(); err != nil {
		return nil, err
	}
	if _, err := z.Write(e.jars.b); err != nil {
		return nil, err
	}
	e.jars.b = nil
	if err := z.Close(); err != nil {
		return nil, err
	}
	return out.Bytes(), nil
}

// uvarintLen is how many bytes binary.AppendUvarint writes for x.
func uvarintLen(x uint64) int {
	n := 1
	for ; x >= 0x80; x >>= 7 {
		n++
	}
	return n
}

// span is a class body's extent in the index.
type span struct{ start, end uint32 }

// Index is a decoded class index: every class's name, CRC and size, its
// body decoded on demand.
type Index struct {
	strs []string
	data []byte
	JARs []IndexJAR // parallel to the verdict's Lib
}

// IndexJAR is one JAR's classes: its entries for payload.Archive.Classes,
// and where each class's body is.
type IndexJAR struct {
	Classes map[string]payload.ClassEntry
	bodies  map[string]span // where each class's body is in Index.data
}

// DecodeIndex reads the index section: data starts at the verdict's
// IndexAt and holds at least the section; nlib is the verdict's lib JARs.
//
// It is long because every field of the section is read with its own bound
// check, in the order the format lays them out.
func DecodeIndex(data []byte, nlib int) (*Index, error) {
	r := &reader{b: data}
	n := r.uv()
	if r.err != nil {
		return nil, r.err
	}
	if n > MaxIndex || n > uint64(len(r.b)) || uint64(len(r.b))-n < 4 {
		return nil, fmt.Errorf("%w: an index of %d bytes in %d (truncated)", ErrFormat, n, len(r.b))
	}
	packed := r.b[:n]
	if binaryCRC(r.b[n:]) != crc32.ChecksumIEEE(packed) {
		return nil, fmt.Errorf("%w: the class index's checksum does not match (damaged)", ErrFormat)
	}
	body, err := decompressIndex(packed)
	if err != nil {
		return nil, err
	}
	ix := &Index{}
	// One string for the whole section: the table's strings are slices
	// of it, not an allocation each. body is this function's own and is
	// never written again, so the string may share its bytes.
	all := ""
	if len(body) > 0 {
		all = unsafe.String(unsafe.SliceData(body), len(body)) //nolint:gosec // body is decompressed here and never written again
	}
	p := &reader{b: body}
	count := p.count(1)
	ix.strs = make([]string, 0, count)
	for i := 0; i < count && p.err == nil; i++ {
		k := p.uv()
		if p.err == nil && k > uint64(len(p.b)) {
			p.fail("a string runs past the end of the index")
		}
		if p.err != nil {
			break
		}
		at := len(body) - len(p.b)
		ix.strs = append(ix.strs, all[at:at+int(k)])
		p.b = p.b[k:]
	}
	str := func(i uint64) string {
		if i >= uint64(len(ix.strs)) {
			p.fail(fmt.Sprintf("string %d of a table of %d", i, len(ix.strs)))
			return ""
		}
		return ix.strs[i]
	}
	njars := p.count(1)
	if p.err == nil && njars != nlib {
		p.fail(fmt.Sprintf("an index of %d JARs for %d lib JARs", njars, nlib))
	}
	for j := 0; j < njars && p.err == nil; j++ {
		nc := p.count(7)
		jar := IndexJAR{Classes: make(map[string]payload.ClassEntry, nc), bodies: make(map[string]span, nc)}
		for c := 0; c < nc && p.err == nil; c++ {
			name := str(p.uv())
			crc := p.u32()
			size := p.uv()
			bl := p.uv()
			if p.err == nil && bl > uint64(len(p.b)) {
				p.fail("a class runs past the end of the index")
			}
			if p.err != nil {
				break
			}
			jar.Classes[name] = payload.ClassEntry{CRC: crc, Size: size}
			at := len(body) - len(p.b)
			jar.bodies[name] = span{uint32(at), uint32(at) + uint32(bl)}
			p.b = p.b[bl:]
		}
		ix.JARs = append(ix.JARs, jar)
	}
	if p.err == nil && len(p.b) != 0 {
		p.fail(fmt.Sprintf("%d bytes after the index's last class", len(p.b)))
	}
	if p.err != nil {
		return nil, p.err
	}
	ix.data = body
	return ix, nil
}

// Class decodes the body of a class of JAR j.
func (ix *Index) Class(j int, name string) (*classfile.Class, error) {
	if j < 0 || j >= len(ix.JARs) {
		return nil, fmt.Errorf("no JAR %d in the index", j)
	}
	sp, ok := ix.JARs[j].bodies[name]
	if !ok {
		return nil, fmt.Errorf("no class %s in the index", name)
	}
	if sp.start == sp.end {
		return nil, fmt.Errorf("class %s was unreadable when the index was made", name)
	}
	r := &reader{b: ix.data[sp.start:sp.end]}
	str := func(i uint64) string {
		if i >= uint64(len(ix.strs)) {
			r.fail(fmt.Sprintf("string %d of a table of %d", i, len(ix.strs)))
			return ""
		}
		return ix.strs[i]
	}
	c := &classfile.Class{Name: name}
	c.Major = uint16(r.uv())
	c.Access = uint16(r.uv())
	if s := r.uv(); s > 0 {
		c.Super = str(s - 1)
	}
	if n := r.count(1); n > 0 {
		c.Interfaces = make([]string, n)
		for i := range c.Interfaces {
			c.Interfaces[i] = str(r.uv())
		}
	}
	members := func() []classfile.Member {
		n := r.count(3)
		if n == 0 {
			return nil
		}
		ms := make([]classfile.Member, n)
		for i := range ms {
			ms[i].Name = str(r.uv())
			ms[i].Descriptor = str(r.uv())
			ms[i].Access = uint16(r.uv())
		}
		return ms
	}
	c.Fields = members()
	c.Methods = members()
	if r.err == nil && len(r.b) != 0 {
		r.fail(fmt.Sprintf("%d bytes after the class's last method", len(r.b)))
	}
	if r.err != nil {
		return nil, fmt.Errorf("class %s: %w", name, r.err)
	}
	return c, nil
}

// The index is compressed with zstd (klauspost/compress, whose flate the
// entrypoint already links): the real 2.2.0 lib's index is 26.6 MB of
// names and descriptors, 5.3 MB compressed, and decompresses in ~40 ms,
// only at a start whose usrlib the verdict does not cover. A window of
// 2 MiB (the default is 8) costs 0.4 % in size, and keeps the bake's
// compressor and the start's decompressor 6 MiB smaller.
const (
	indexLevel  = zstd.SpeedBetterCompression
	indexWindow = 2 << 20
)

func decompressIndex(b []byte) ([]byte, error) {
	d, err := zstd.NewReader(nil, zstd.WithDecoderConcurrency(1), zstd.WithDecoderMaxMemory(MaxIndex), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, err
	}
	defer d.Close()
	out, err := d.DecodeAll(b, nil)
	if err != nil {
		return nil, fmt.Errorf("%w: the class index does not decompress: %w", ErrFormat, err)
	}
	return out, nil
}
