package baked

import (
	"fmt"
	"hash/crc32"
	"unsafe"

	"github.com/klauspost/compress/zstd"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// encodeIndex writes the class index: one table of strings, then per JAR
// its classes, each its name, CRC and size, then its body (major, access,
// supertypes, members) prefixed with its length, so a reader can leave
// the body undecoded until a rule asks for the class.
func encodeIndex(index [][]Class) []byte {
	ids := map[string]uint64{}
	var table []string
	id := func(s string) uint64 {
		if i, ok := ids[s]; ok {
			return i
		}
		ids[s] = uint64(len(table))
		table = append(table, s)
		return ids[s]
	}
	var jars writer
	jars.uv(uint64(len(index)))
	var body writer
	members := func(ms []classfile.Member) {
		body.uv(uint64(len(ms)))
		for _, m := range ms {
			body.uv(id(m.Name))
			body.uv(id(m.Descriptor))
			body.uv(uint64(m.Access))
		}
	}
	for _, classes := range index {
		jars.uv(uint64(len(classes)))
		for _, c := range classes {
			jars.uv(id(c.Name))
			jars.u32(c.CRC)
			jars.uv(c.Size)
			body.b = body.b[:0]
			if c.Unreadable {
				jars.uv(0)
				continue
			}
			body.uv(uint64(c.Major))
			body.uv(uint64(c.Access))
			if c.Super == "" {
				body.uv(0)
			} else {
				body.uv(id(c.Super) + 1)
			}
			body.uv(uint64(len(c.Interfaces)))
			for _, i := range c.Interfaces {
				body.uv(id(i))
			}
			members(c.Fields)
			members(c.Methods)
			jars.uv(uint64(len(body.b)))
			jars.b = append(jars.b, body.b...)
		}
	}
	var out writer
	out.strs(table)
	out.b = append(out.b, jars.b...)
	return out.b
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
// only at a start whose usrlib the verdict does not cover.
func compressIndex(b []byte) ([]byte, error) {
	e, err := zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedBetterCompression), zstd.WithEncoderConcurrency(1))
	if err != nil {
		return nil, err
	}
	out := e.EncodeAll(b, nil)
	if err := e.Close(); err != nil {
		return nil, err
	}
	return out, nil
}

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
