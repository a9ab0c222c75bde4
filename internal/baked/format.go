package baked

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Magic starts every verdict file; Version is the format this build
// writes and reads (a file of another version is foreign: a full check).
const (
	Magic   = "SFDEEPV\n"
	Version = 1
)

// Bounds a reader holds a file to.
const (
	MaxHeader = 16 << 20  // bytes of the header section
	MaxIndex  = 512 << 20 // bytes of the index section
)

// ErrFormat is a verdict file that is not one this build reads: damaged,
// truncated, or of another format version.
var ErrFormat = errors.New("not a deep verdict this entrypoint reads")

// JAR is one JAR the verdict covers: its path in the image, as the facts
// name it, and its fingerprint.
type JAR struct {
	Path        string
	Fingerprint payload.Fingerprint
}

// Verdict is the header: what a start compares and applies.
type Verdict struct {
	Rules    string // admission.RulesStamp() of the rules that judged
	JDKMajor int    // the JDK the bytecode versions were judged against
	Flink    string // the planner's version (for messages)
	// Home is the directory lib and usrlib were in when the verdict was
	// made (lib's parent): Moved gives the verdict of the same files below
	// another directory.
	Home string
	// ParentFirst is classloader.parent-first-patterns.default as the
	// image's flink-dist defines it (no .additional: the config file is
	// read at start).
	ParentFirst     []string
	ParentFirstFrom string
	Lib             []JAR // in classpath order
	Usrlib          []JAR
	// Findings are the deep rules' findings (classpath-shadowed,
	// linkage-*, bytecode-version) as the rules raised them, before
	// STREAMFUSION_STRICT.
	Findings []admission.Finding

	indexAt int64 // where the index section starts in the file
}

// IndexAt is the offset of the index section in the file the header was
// read from.
func (v *Verdict) IndexAt() int64 { return v.indexAt }

// Class is what the index keeps of one class.
type Class struct {
	Name       string
	CRC        uint32
	Size       uint64
	Major      uint16
	Access     uint16
	Super      string
	Interfaces []string
	Fields     []classfile.Member
	Methods    []classfile.Member
	// Unreadable is a class whose bytes did not parse: the index keeps
	// its name, CRC and size, and the linkage rules treat it as they treat
	// an unreadable class file.
	Unreadable bool
}

// writer appends the encoding.
type writer struct{ b []byte }

func (w *writer) uv(x uint64)  { w.b = binary.AppendUvarint(w.b, x) }
func (w *writer) str(s string) { w.uv(uint64(len(s))); w.b = append(w.b, s...) }
func (w *writer) u32(x uint32) { w.b = binary.LittleEndian.AppendUint32(w.b, x) }
func (w *writer) strs(s []string) {
	w.uv(uint64(len(s)))
	for _, x := range s {
		w.str(x)
	}
}

// reader decodes, every read bounded by what is left.
type reader struct {
	b   []byte
	err error
}

func (r *reader) fail(what string) {
	if r.err == nil {
		r.err = fmt.Errorf("%w: %s", ErrFormat, what)
	}
}

func (r *reader) uv() uint64 {
	if r.err != nil {
		return 0
	}
	x, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.fail("a number runs past the end")
		return 0
	}
	r.b = r.b[n:]
	return x
}

// count reads a list's length; each element takes at least least bytes.
func (r *reader) count(least int) int {
	n := r.uv()
	if r.err == nil && n > uint64(len(r.b)/least) {
		r.fail(fmt.Sprintf("a list of %d elements in %d bytes", n, len(r.b)))
		return 0
	}
	return int(n)
}

func (r *reader) str() string {
	n := r.uv()
	if r.err != nil {
		return ""
	}
	if n > uint64(len(r.b)) {
		r.fail(fmt.Sprintf("a %d-byte string in %d bytes", n, len(r.b)))
		return ""
	}
	s := string(r.b[:n])
	r.b = r.b[n:]
	return s
}

func (r *reader) u32() uint32 {
	if r.err != nil {
		return 0
	}
	if len(r.b) < 4 {
		r.fail("a checksum runs past the end")
		return 0
	}
	x := binary.LittleEndian.Uint32(r.b)
	r.b = r.b[4:]
	return x
}

func (r *reader) strs() []string {
	n := r.count(1)
	if n == 0 {
		return nil
	}
	out := make([]string, n)
	for i := range out {
		out[i] = r.str()
	}
	return out
}

func (w *writer) jars(js []JAR) {
	w.uv(uint64(len(js)))
	for _, j := range js {
		w.str(j.Path)
		w.uv(uint64(j.Fingerprint.Size))
		w.uv(uint64(j.Fingerprint.Length))
		w.u32(j.Fingerprint.CRC)
	}
}

func (r *reader) jars() []JAR {
	n := r.count(7)
	if n == 0 {
		return nil
	}
	out := make([]JAR, n)
	for i := range out {
		out[i].Path = r.str()
		out[i].Fingerprint.Size = int64(r.uv() & (1<<62 - 1))
		out[i].Fingerprint.Length = int64(r.uv() & (1<<62 - 1))
		out[i].Fingerprint.CRC = r.u32()
	}
	return out
}

func (w *writer) finding(f admission.Finding) {
	for _, s := range []string{f.Rule, string(f.Severity), f.Path, f.Message, f.Found, f.Required, f.Fix} {
		w.str(s)
	}
	if f.Symbol == nil {
		w.uv(0)
		return
	}
	w.uv(1)
	s := f.Symbol
	for _, x := range []string{s.Kind, s.From, s.Owner, s.Name, s.Descriptor, s.JAR} {
		w.str(x)
	}
	w.strs(s.Classes)
}

func (r *reader) finding() admission.Finding {
	var f admission.Finding
	f.Rule, f.Severity, f.Path = r.str(), admission.Severity(r.str()), r.str()
	f.Message, f.Found, f.Required, f.Fix = r.str(), r.str(), r.str(), r.str()
	switch r.uv() {
	case 0:
	case 1:
		s := &admission.Symbol{}
		s.Kind, s.From, s.Owner, s.Name, s.Descriptor, s.JAR = r.str(), r.str(), r.str(), r.str(), r.str(), r.str()
		s.Classes = r.strs()
		f.Symbol = s
	default:
		r.fail("a finding's symbol marker is neither 0 nor 1")
	}
	if r.err == nil && f.Severity != admission.Error && f.Severity != admission.Warning {
		r.fail(fmt.Sprintf("a finding of severity %q", f.Severity))
	}
	return f
}

// Encode writes the file: magic, version, header section, index section;
// each section is its length, its bytes and their CRC-32. index is
// parallel to v.Lib.
func Encode(v *Verdict, index [][]Class) ([]byte, error) {
	if len(index) != len(v.Lib) {
		return nil, fmt.Errorf("an index of %d JARs for %d lib JARs", len(index), len(v.Lib))
	}
	ix, err := encodeIndex(index)
	if err != nil {
		return nil, err
	}
	return encode(v, ix)
}

// encode is Encode of an index already encoded and compressed
// (encodeIndex, or an indexEncoder's compressed).
func encode(v *Verdict, ix []byte) ([]byte, error) {
	var h writer
	h.str(v.Rules)
	h.uv(uint64(v.JDKMajor))
	h.str(v.Flink)
	h.str(v.Home)
	h.strs(v.ParentFirst)
	h.str(v.ParentFirstFrom)
	h.jars(v.Lib)
	h.jars(v.Usrlib)
	h.uv(uint64(len(v.Findings)))
	for _, f := range v.Findings {
		h.finding(f)
	}
	out := writer{b: []byte(Magic)}
	out.uv(Version)
	out.uv(uint64(len(h.b)))
	out.b = append(out.b, h.b...)
	out.u32(crc32.ChecksumIEEE(h.b))
	out.uv(uint64(len(ix)))
	out.b = append(out.b, ix...)
	out.u32(crc32.ChecksumIEEE(ix))
	return out.b, nil
}

// Prefix is how many bytes of a file DecodeHeader may need at most for
// the magic, the version and the header's length.
const Prefix = len(Magic) + 2*binary.MaxVarintLen64

// DecodeHeader reads the header from data, which holds the file from its
// start at least through the header section; want, when it is not nil,
// asks for more bytes (the whole header's extent) when data holds too few.
func DecodeHeader(data []byte) (v *Verdict, need int64, err error) {
	if len(data) < len(Magic) || string(data[:len(Magic)]) != Magic {
		return nil, 0, fmt.Errorf("%w: no %q at its start", ErrFormat, strings.TrimSpace(Magic))
	}
	r := &reader{b: data[len(Magic):]}
	ver := r.uv()
	if r.err == nil && ver != Version {
		return nil, 0, fmt.Errorf("%w: format version %d, this entrypoint reads version %d (bake the image again with the streamfusion release of this entrypoint)", ErrFormat, ver, Version)
	}
	n := r.uv()
	if r.err != nil {
		return nil, 0, r.err
	}
	if n > MaxHeader {
		return nil, 0, fmt.Errorf("%w: a %d-byte header, more than %d", ErrFormat, n, MaxHeader)
	}
	start := int64(len(data) - len(r.b))
	end := start + int64(n) + 4
	if int64(len(data)) < end {
		return nil, end, nil
	}
	body := r.b[:n]
	if sum := binaryCRC(r.b[n:]); sum != crc32.ChecksumIEEE(body) {
		return nil, 0, fmt.Errorf("%w: the header's checksum does not match (damaged)", ErrFormat)
	}
	h := &reader{b: body}
	v = &Verdict{indexAt: end}
	v.Rules = h.str()
	v.JDKMajor = int(h.uv() & 0xffff)
	v.Flink = h.str()
	v.Home = h.str()
	v.ParentFirst = h.strs()
	v.ParentFirstFrom = h.str()
	v.Lib = h.jars()
	v.Usrlib = h.jars()
	nf := h.count(9)
	for i := 0; i < nf && h.err == nil; i++ {
		v.Findings = append(v.Findings, h.finding())
	}
	if h.err == nil && len(h.b) != 0 {
		h.fail(fmt.Sprintf("%d bytes after the header's last finding", len(h.b)))
	}
	if h.err != nil {
		return nil, 0, h.err
	}
	return v, 0, nil
}

func binaryCRC(b []byte) uint32 {
	if len(b) < 4 {
		return ^crc32.ChecksumIEEE(nil) // never a match: the section is cut short
	}
	return binary.LittleEndian.Uint32(b)
}

// Moved returns the verdict of the same files below home instead of
// v.Home: every path, in the JARs and in the findings' text, moved.
func (v *Verdict) Moved(home string) *Verdict {
	if v.Home == home || v.Home == "" {
		return v
	}
	from, to := strings.TrimSuffix(v.Home, "/")+"/", strings.TrimSuffix(home, "/")+"/"
	mv := func(s string) string { return strings.ReplaceAll(s, from, to) }
	out := *v
	out.Home = home
	out.Lib, out.Usrlib, out.Findings = nil, nil, nil
	for _, j := range v.Lib {
		out.Lib = append(out.Lib, JAR{Path: mv(j.Path), Fingerprint: j.Fingerprint})
	}
	for _, j := range v.Usrlib {
		out.Usrlib = append(out.Usrlib, JAR{Path: mv(j.Path), Fingerprint: j.Fingerprint})
	}
	for _, f := range v.Findings {
		f.Path, f.Message, f.Found, f.Required, f.Fix = mv(f.Path), mv(f.Message), mv(f.Found), mv(f.Required), mv(f.Fix)
		if f.Symbol != nil {
			s := *f.Symbol
			s.JAR = mv(s.JAR)
			f.Symbol = &s
		}
		out.Findings = append(out.Findings, f)
	}
	return &out
}
