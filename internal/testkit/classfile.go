package testkit

import (
	"bytes"
	"encoding/binary"
	"maps"
	"slices"
)

// Class describes a class file for tests of the linkage rules: its header,
// the members it declares, and what one method's bytecode uses. Class
// writes it as javac would lay it out, as far as the parser reads.
type Class struct {
	Name       string // internal name, a/b/C
	Super      string // "" writes java/lang/Object
	Interfaces []string
	Interface  bool
	Abstract   bool   // an abstract class (ACC_ABSTRACT)
	Major      uint16 // 0: 61 (Java 17)
	Fields     []Member
	Methods    []Member
	// What the bytecode of a method "run" uses: classes by new, members
	// by getstatic/invokevirtual/invokeinterface/invokespecial (<init>).
	News  []string
	Calls []Call
	// Unused are class names only in the constant pool: no instruction
	// names them.
	Unused []string
	// Returns are methods NAME()Ljava/lang/String; returning a constant,
	// as javac compiles `return "s3";` (ldc, areturn); a value starting
	// with "ldc_w:" is written with ldc_w, and "" returns null.
	Returns map[string]string
}

// Member is a declared field or method.
type Member struct{ Name, Descriptor string }

// Call is a member reference an instruction uses.
type Call struct {
	Field, Interface bool
	Owner, Name      string
	Descriptor       string
}

type pool struct {
	buf   bytes.Buffer
	n     uint16
	index map[string]uint16
}

func (p *pool) add(key string, write func()) uint16 {
	if i, ok := p.index[key]; ok {
		return i
	}
	write()
	p.n++
	p.index[key] = p.n
	return p.n
}

func (p *pool) utf8(s string) uint16 {
	return p.add("u"+s, func() {
		p.buf.WriteByte(1)
		binary.Write(&p.buf, binary.BigEndian, uint16(len(s)))
		p.buf.WriteString(s)
	})
}

func (p *pool) str(s string) uint16 {
	u := p.utf8(s)
	return p.add("s"+s, func() { p.buf.WriteByte(8); binary.Write(&p.buf, binary.BigEndian, u) })
}

func (p *pool) class(name string) uint16 {
	u := p.utf8(name)
	return p.add("c"+name, func() { p.buf.WriteByte(7); binary.Write(&p.buf, binary.BigEndian, u) })
}

func (p *pool) ref(c Call) uint16 {
	cls, n, d := p.class(c.Owner), p.utf8(c.Name), p.utf8(c.Descriptor)
	nt := p.add("n"+c.Name+c.Descriptor, func() {
		p.buf.WriteByte(12)
		binary.Write(&p.buf, binary.BigEndian, []uint16{n, d})
	})
	tag := byte(10)
	switch {
	case c.Field:
		tag = 9
	case c.Interface:
		tag = 11
	}
	return p.add(string(rune('0'+tag))+c.Owner+"."+c.Name+c.Descriptor, func() {
		p.buf.WriteByte(tag)
		binary.Write(&p.buf, binary.BigEndian, []uint16{cls, nt})
	})
}

// Bytes writes the class file.
func (c Class) Bytes() []byte {
	p := &pool{index: map[string]uint16{}}
	be := binary.BigEndian
	var code bytes.Buffer
	for _, n := range c.News {
		code.WriteByte(0xbb) // new
		binary.Write(&code, be, p.class(n))
	}
	for _, call := range c.Calls {
		switch {
		case call.Field:
			code.WriteByte(0xb2) // getstatic
			binary.Write(&code, be, p.ref(call))
		case call.Interface:
			code.WriteByte(0xb9) // invokeinterface
			binary.Write(&code, be, p.ref(call))
			code.Write([]byte{1, 0})
		case call.Name == "<init>":
			code.WriteByte(0xb7) // invokespecial
			binary.Write(&code, be, p.ref(call))
		default:
			code.WriteByte(0xb6) // invokevirtual
			binary.Write(&code, be, p.ref(call))
		}
	}
	code.WriteByte(0xb1) // return
	for _, u := range c.Unused {
		p.class(u)
	}
	this := p.class(c.Name)
	super := p.class(cmpOr(c.Super, "java/lang/Object"))
	var ifaces []uint16
	for _, i := range c.Interfaces {
		ifaces = append(ifaces, p.class(i))
	}
	codeName, run, void := p.utf8("Code"), p.utf8("run"), p.utf8("()V")
	member := func(out *bytes.Buffer, m Member) {
		binary.Write(out, be, []uint16{1, p.utf8(m.Name), p.utf8(m.Descriptor), 0})
	}
	var fields, methods bytes.Buffer
	for _, f := range c.Fields {
		member(&fields, f)
	}
	for _, m := range c.Methods {
		member(&methods, m)
	}
	c.writeReturns(p, &methods, codeName)
	// run()V with the code above.
	binary.Write(&methods, be, []uint16{1, run, void, 1, codeName})
	binary.Write(&methods, be, uint32(12+code.Len()))
	binary.Write(&methods, be, []uint16{8, 8})
	binary.Write(&methods, be, uint32(code.Len()))
	methods.Write(code.Bytes())
	binary.Write(&methods, be, []uint16{0, 0})

	var out bytes.Buffer
	major := c.Major
	if major == 0 {
		major = 61
	}
	binary.Write(&out, be, uint32(0xCAFEBABE))
	binary.Write(&out, be, []uint16{0, major, p.n + 1})
	out.Write(p.buf.Bytes())
	access := uint16(0x0021)
	if c.Abstract {
		access |= 0x0400
	}
	if c.Interface {
		access = 0x0601
	}
	binary.Write(&out, be, []uint16{access, this, super, uint16(len(ifaces))})
	binary.Write(&out, be, ifaces)
	binary.Write(&out, be, uint16(len(c.Fields)))
	out.Write(fields.Bytes())
	binary.Write(&out, be, uint16(len(c.Methods)+len(c.Returns)+1))
	out.Write(methods.Bytes())
	binary.Write(&out, be, uint16(0)) // class attributes
	return out.Bytes()
}

// writeReturns writes the Returns methods: ldc (or ldc_w) and areturn.
func (c Class) writeReturns(p *pool, methods *bytes.Buffer, codeName uint16) {
	be := binary.BigEndian
	for _, name := range slices.Sorted(maps.Keys(c.Returns)) {
		var body []byte
		switch v := c.Returns[name]; {
		case v == "":
			body = []byte{0x01, 0xb0} // aconst_null, areturn
		case len(v) > 6 && v[:6] == "ldc_w:":
			i := p.str(v[6:])
			body = []byte{0x13, byte(i >> 8), byte(i), 0xb0}
		default:
			i := p.str(v)
			if i > 0xff {
				panic("testkit: constant pool too large for ldc")
			}
			body = []byte{0x12, byte(i), 0xb0}
		}
		binary.Write(methods, be, []uint16{1, p.utf8(name), p.utf8("()Ljava/lang/String;"), 1, codeName})
		binary.Write(methods, be, uint32(12+len(body)))
		binary.Write(methods, be, []uint16{1, 1})
		binary.Write(methods, be, uint32(len(body)))
		methods.Write(body)
		binary.Write(methods, be, []uint16{0, 0})
	}
}

func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}

// ClassJAR is a JAR of classes, with service files (service name to
// implementation classes, binary names) and extra entries.
func ClassJAR(manifest string, classes []Class, services map[string][]string, extra ...Entry) []byte {
	var entries []Entry
	for _, c := range classes {
		entries = append(entries, Entry{Name: c.Name + ".class", Data: c.Bytes()})
	}
	for _, svc := range slices.Sorted(maps.Keys(services)) {
		impls := services[svc]
		var b bytes.Buffer
		for _, i := range impls {
			b.WriteString(i + "\n")
		}
		entries = append(entries, Entry{Name: "META-INF/services/" + svc, Data: b.Bytes()})
	}
	return JAR(manifest, append(entries, extra...)...)
}
