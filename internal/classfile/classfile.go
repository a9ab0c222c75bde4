package classfile

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
)

// MaxSize is the largest class file Parse reads. The JVM has no such limit,
// but its own counts (65,535 constants, methods, fields; 65,535 bytes of
// code per method) keep real class files far below it.
const MaxSize = 16 << 20

// ErrFormat is returned, wrapped with where and what, for bytes that are
// not a class file this package reads.
var ErrFormat = errors.New("malformed class file")

// Constant pool tags (JVMS 4.4).
const (
	tagUtf8               = 1
	tagInteger            = 3
	tagFloat              = 4
	tagLong               = 5
	tagDouble             = 6
	tagClass              = 7
	tagString             = 8
	tagFieldref           = 9
	tagMethodref          = 10
	tagInterfaceMethodref = 11
	tagNameAndType        = 12
	tagMethodHandle       = 15
	tagMethodType         = 16
	tagDynamic            = 17
	tagInvokeDynamic      = 18
	tagModule             = 19
	tagPackage            = 20
)

// Access flags this package names.
const (
	AccPublic    = 0x0001
	AccPrivate   = 0x0002
	AccStatic    = 0x0008
	AccInterface = 0x0200
	AccAbstract  = 0x0400
	AccModule    = 0x8000
)

// RefKind says which constant a member reference is.
type RefKind uint8

// Member reference kinds.
const (
	Field           RefKind = iota + 1 // CONSTANT_Fieldref
	Method                             // CONSTANT_Methodref
	InterfaceMethod                    // CONSTANT_InterfaceMethodref
)

func (k RefKind) String() string {
	switch k {
	case Field:
		return "field"
	case Method:
		return "method"
	case InterfaceMethod:
		return "interface method"
	}
	return "?"
}

// Ref is a member reference some instruction uses.
type Ref struct {
	Kind       RefKind
	Owner      string // internal name (a/b/C), or an array descriptor
	Name       string
	Descriptor string
}

// Member is a field or method a class declares.
type Member struct {
	Name       string
	Descriptor string
	Access     uint16
}

// Insn is one instruction of a static initializer that uses the constant
// pool, resolved to names: the opcode, and the class, member or string
// constant it names.
type Insn struct {
	Op     byte
	Owner  string // class of a class or member constant
	Name   string // member name
	String string // an ldc'd string constant
}

// Class is what linkage needs of one class file.
type Class struct {
	Major, Minor uint16
	Access       uint16
	Name         string // internal name
	Super        string // "" for java/lang/Object and module-info
	Interfaces   []string
	Fields       []Member
	Methods      []Member

	// Classes are the classes instructions name (new, checkcast,
	// instanceof, anewarray, multianewarray, ldc, bootstrap arguments),
	// each once, as internal names or array descriptors.
	Classes []string
	// Refs are the member references instructions use, each once.
	Refs []Ref

	// Init is the static initializer's constant-using instructions, in
	// order, when Options.Init asks for them.
	Init []Insn

	// Returns is the string constant the method Options.Returns names
	// returns, when its whole code is `ldc "..."; areturn` (how javac
	// compiles `return "s3";` and `return SCHEME;` for a constant SCHEME);
	// "" when the class does not declare it or its code is anything else.
	Returns string
}

// Options say what Parse keeps beyond the defaults.
type Options struct {
	Init bool // keep <clinit>'s instructions (Class.Init)
	// MembersOnly skips the instructions: no Classes, Refs or Init (a
	// class only resolved against, never judged).
	MembersOnly bool
	// Returns names a method NAME()Ljava/lang/String; whose constant
	// result Class.Returns gives (a FileSystemFactory's getScheme).
	Returns string
}

// Interface reports whether the class is an interface.
func (c *Class) Interface() bool { return c.Access&AccInterface != 0 }

// constant is one constant pool entry: its tag and its one or two u2
// operands, or for Utf8 the span of its bytes.
type constant struct {
	tag  uint8
	a, b uint32
}

type parser struct {
	data  []byte
	pos   int
	cp    []constant
	used  []bool   // constant pool indices an instruction (or bootstrap method) uses
	strs  []string // the Utf8 constants made into strings so far
	bsms  []int    // offsets of the bootstrap method entries, when read
	codes []code   // the methods' bytecode
	// returns is Options.Returns; returned the constant its method returns.
	returns, returned string
	err               error
}

// scratch are a parser's tables, kept between parses.
var scratch = sync.Pool{New: func() any { return &parser{} }}

func (p *parser) fail(format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s (at byte %d)", ErrFormat, fmt.Sprintf(format, args...), p.pos)
	}
}

func (p *parser) need(n int) bool {
	if p.err != nil {
		return false
	}
	if n < 0 || len(p.data)-p.pos < n {
		p.fail("needs %d more bytes, %d remain", n, len(p.data)-p.pos)
		return false
	}
	return true
}

func (p *parser) u1() uint8 {
	if !p.need(1) {
		return 0
	}
	v := p.data[p.pos]
	p.pos++
	return v
}

func (p *parser) u2() uint16 {
	if !p.need(2) {
		return 0
	}
	v := binary.BigEndian.Uint16(p.data[p.pos:])
	p.pos += 2
	return v
}

func (p *parser) u4() uint32 {
	if !p.need(4) {
		return 0
	}
	v := binary.BigEndian.Uint32(p.data[p.pos:])
	p.pos += 4
	return v
}

// count reads a u2 count of items of at least `least` bytes each, refusing one the
// remaining bytes cannot hold, before anything is allocated for it.
func (p *parser) count(what string, least int) int {
	n := int(p.u2())
	if p.err == nil && n*least > len(p.data)-p.pos {
		p.fail("%d %s cannot fit in the %d bytes that remain", n, what, len(p.data)-p.pos)
		return 0
	}
	return n
}

// Parse reads one class file.
func Parse(data []byte, opt Options) (*Class, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%w: %d bytes, more than the %d this tool reads", ErrFormat, len(data), MaxSize)
	}
	p := scratch.Get().(*parser)
	*p = parser{data: data, cp: p.cp[:0], used: p.used[:0], strs: p.strs[:0], codes: p.codes[:0], bsms: p.bsms[:0], returns: opt.Returns}
	defer func() {
		p.data = nil
		clear(p.strs) // the strings belong to the class now
		if cap(p.cp) <= 1<<16 {
			scratch.Put(p)
		}
	}()
	c := &Class{}
	if magic := p.u4(); p.err == nil && magic != 0xCAFEBABE {
		p.fail("magic 0x%08X is not 0xCAFEBABE", magic)
	}
	c.Minor, c.Major = p.u2(), p.u2()
	p.constants()
	c.Access = p.u2()
	c.Name = p.className(int(p.u2()), false)
	if super := int(p.u2()); super != 0 {
		c.Super = p.className(super, false)
	}
	n := p.count("interfaces", 2)
	if n > 0 {
		c.Interfaces = make([]string, 0, n)
	}
	for range n {
		c.Interfaces = append(c.Interfaces, p.className(int(p.u2()), false))
	}
	c.Fields = p.members(false)
	c.Methods = p.members(true)
	p.classAttributes()
	if p.err != nil {
		return nil, p.err
	}
	c.Returns = p.returned
	if p.pos != len(data) {
		p.fail("%d bytes after the class file's end", len(data)-p.pos)
		return nil, p.err
	}
	// Code is scanned once the bootstrap methods are known.
	if opt.MembersOnly {
		return c, nil
	}
	for _, code := range p.codes {
		p.scan(code.start, code.end, opt.Init && code.init, c)
	}
	p.collect(c)
	if p.err != nil {
		return nil, p.err
	}
	return c, nil
}

func (p *parser) constants() {
	n := int(p.u2())
	if p.err != nil {
		return
	}
	if n == 0 {
		p.fail("constant pool count 0")
		return
	}
	// Every entry takes at least 3 bytes (a tag and a u2).
	if (n-1)*3 > len(p.data)-p.pos {
		p.fail("%d constants cannot fit in the %d bytes that remain", n-1, len(p.data)-p.pos)
		return
	}
	if cap(p.cp) >= n && cap(p.used) >= n && cap(p.strs) >= n {
		p.cp, p.used, p.strs = p.cp[:n], p.used[:n], p.strs[:n]
		clear(p.cp)
		clear(p.used)
		clear(p.strs)
	} else {
		p.cp = make([]constant, n)
		p.used = make([]bool, n)
		p.strs = make([]string, n)
	}
	for i := 1; i < n && p.err == nil; i++ {
		tag := p.u1()
		k := constant{tag: tag}
		switch tag {
		case tagUtf8:
			l := int(p.u2())
			if !p.need(l) {
				return
			}
			k.a, k.b = uint32(p.pos), uint32(p.pos+l)
			p.pos += l
		case tagInteger, tagFloat:
			p.u4()
		case tagLong, tagDouble:
			p.u4()
			p.u4()
			p.cp[i] = k
			i++ // takes two entries
			if i >= n {
				p.fail("a long or double constant at index %d is the pool's last entry", i-1)
				return
			}
			continue
		case tagClass, tagString, tagMethodType, tagModule, tagPackage:
			k.a = uint32(p.u2())
		case tagFieldref, tagMethodref, tagInterfaceMethodref, tagNameAndType, tagDynamic, tagInvokeDynamic:
			k.a, k.b = uint32(p.u2()), uint32(p.u2())
		case tagMethodHandle:
			k.a, k.b = uint32(p.u1()), uint32(p.u2())
		default:
			p.fail("constant %d has unknown tag %d", i, tag)
			return
		}
		p.cp[i] = k
	}
}

// at returns constant i when it has one of the tags given.
func (p *parser) at(i int, tags ...uint8) (constant, bool) {
	if p.err != nil {
		return constant{}, false
	}
	if i <= 0 || i >= len(p.cp) {
		p.fail("constant index %d outside the pool of %d", i, len(p.cp))
		return constant{}, false
	}
	k := p.cp[i]
	for _, t := range tags {
		if k.tag == t {
			return k, true
		}
	}
	p.fail("constant %d has tag %d, expected one of %v", i, k.tag, tags)
	return constant{}, false
}

// utf8Is says whether constant i is the Utf8 s, without allocating (the
// attribute names every member carries).
func (p *parser) utf8Is(i int, s string) bool {
	k, ok := p.at(i, tagUtf8)
	return ok && string(p.data[k.a:k.b]) == s
}

// utf8 is constant i's string, made once per class however many times the
// class names it (an owner every call to it repeats).
func (p *parser) utf8(i int) string {
	k, ok := p.at(i, tagUtf8)
	if !ok {
		return ""
	}
	if s := p.strs[i]; s != "" {
		return s
	}
	s := string(p.data[k.a:k.b])
	p.strs[i] = s
	return s
}

// className is the name of Class constant i; an array descriptor is
// refused unless arrays are allowed.
func (p *parser) className(i int, arrays bool) string {
	k, ok := p.at(i, tagClass)
	if !ok {
		return ""
	}
	name := p.utf8(int(k.a))
	if p.err == nil && (name == "" || !arrays && name[0] == '[') {
		p.fail("constant %d names class %q", i, name)
	}
	return name
}

// code is where one method's bytecode lies.
type code struct {
	start, end int
	init       bool // the static initializer
}

func (p *parser) members(methods bool) []Member {
	n := p.count("members", 8)
	if p.err != nil || n == 0 {
		return nil
	}
	out := make([]Member, 0, n)
	for range n {
		m := Member{Access: p.u2()}
		m.Name = p.utf8(int(p.u2()))
		m.Descriptor = p.utf8(int(p.u2()))
		attrs := p.count("attributes", 6)
		for range attrs {
			code := p.utf8Is(int(p.u2()), "Code")
			length := int(p.u4())
			if !p.need(length) {
				return nil
			}
			end := p.pos + length
			if methods && code {
				p.code(end, m.Name == "<clinit>")
				if p.returns != "" && m.Name == p.returns && m.Descriptor == "()Ljava/lang/String;" && p.err == nil {
					p.returned = p.constantReturn(p.codes[len(p.codes)-1])
				}
			}
			p.pos = end
		}
		out = append(out, m)
	}
	return out
}

// code notes where a Code attribute's bytecode lies; the attribute ends at
// end.
func (p *parser) code(end int, init bool) {
	if end-p.pos < 8 {
		p.fail("Code attribute of %d bytes", end-p.pos)
		return
	}
	p.pos += 4 // max_stack, max_locals
	n := int(p.u4())
	if n <= 0 || n > 65535 || n > end-p.pos {
		p.fail("code length %d in a Code attribute with %d bytes left", n, end-p.pos)
		return
	}
	p.codes = append(p.codes, code{p.pos, p.pos + n, init})
}

// constantReturn is the string a method returns when its whole code is
// one ldc or ldc_w of a String constant and areturn; "" otherwise.
func (p *parser) constantReturn(c code) string {
	b := p.data[c.start:c.end]
	var idx int
	switch {
	case len(b) == 3 && b[0] == opLdc && b[2] == opAreturn:
		idx = int(b[1])
	case len(b) == 4 && b[0] == opLdcW && b[3] == opAreturn:
		idx = int(b[1])<<8 | int(b[2])
	default:
		return ""
	}
	// A method whose constant is not a String does not verify; it says
	// nothing of a scheme, and the class is still read.
	if idx <= 0 || idx >= len(p.cp) || p.cp[idx].tag != tagString {
		return ""
	}
	if s := int(p.cp[idx].a); s <= 0 || s >= len(p.cp) || p.cp[s].tag != tagUtf8 {
		return ""
	}
	return p.utf8(int(p.cp[idx].a))
}

func (p *parser) classAttributes() {
	n := p.count("attributes", 6)
	for range n {
		bsm := p.utf8Is(int(p.u2()), "BootstrapMethods")
		length := int(p.u4())
		if !p.need(length) {
			return
		}
		end := p.pos + length
		if bsm {
			p.bootstrap(end)
		}
		p.pos = end
	}
}

// bootstrap notes where each bootstrap method entry starts.
func (p *parser) bootstrap(end int) {
	n := p.count("bootstrap methods", 4)
	p.bsms = make([]int, 0, n)
	for range n {
		p.bsms = append(p.bsms, p.pos)
		p.u2()
		args := p.count("bootstrap arguments", 2)
		if !p.need(2 * args) {
			return
		}
		p.pos += 2 * args
	}
	if p.err == nil && p.pos > end {
		p.fail("BootstrapMethods attribute runs past its length")
	}
}
