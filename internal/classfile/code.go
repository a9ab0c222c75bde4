package classfile

import "encoding/binary"

// Opcodes that name constants.
const (
	opLdc             = 0x12
	opLdcW            = 0x13
	opLdc2W           = 0x14
	opAreturn         = 0xb0
	opGetstatic       = 0xb2
	opPutstatic       = 0xb3
	opInvokeinterface = 0xb9
	opInvokedynamic   = 0xba
	opNew             = 0xbb
	opAnewarray       = 0xbd
	opCheckcast       = 0xc0
	opInstanceof      = 0xc1
	opWide            = 0xc4
	opMultianewarray  = 0xc5
	opTableswitch     = 0xaa
	opLookupswitch    = 0xab
)

// length is each fixed-length instruction's size in bytes, opcode
// included; 0 for the variable ones and for opcodes that do not exist.
var length = func() (l [256]uint8) {
	for op := 0x00; op <= 0xc9; op++ {
		l[op] = 1
	}
	for _, op := range []int{0x10, 0x12, 0xa9, 0xbc} {
		l[op] = 2
	}
	for op := 0x15; op <= 0x19; op++ {
		l[op] = 2
	}
	for op := 0x36; op <= 0x3a; op++ {
		l[op] = 2
	}
	for _, op := range []int{0x11, 0x13, 0x14, 0x84, 0xbb, 0xbd, 0xc0, 0xc1, 0xc6, 0xc7} {
		l[op] = 3
	}
	for op := 0x99; op <= 0xa8; op++ {
		l[op] = 3
	}
	for op := 0xb2; op <= 0xb8; op++ {
		l[op] = 3
	}
	l[0xc5] = 4
	for _, op := range []int{0xb9, 0xba, 0xc8, 0xc9} {
		l[op] = 5
	}
	l[opTableswitch], l[opLookupswitch], l[opWide] = 0, 0, 0
	return l
}()

// scan walks the bytecode in data[start:end] and marks the constants its
// instructions use; with init it records them in c.Init too.
func (p *parser) scan(start, end int, init bool, c *Class) {
	code := p.data[start:end]
	for pc := 0; pc < len(code) && p.err == nil; {
		op := code[pc]
		n := int(length[op])
		switch op {
		case opTableswitch, opLookupswitch:
			at := pc + 1 + (3-pc%4+4)%4 // operands are 4-byte aligned from the code's start
			if at+8 > len(code) || op == opTableswitch && at+12 > len(code) {
				p.fail("switch at pc %d runs past the code", pc)
				return
			}
			if op == opTableswitch {
				low := int32(binary.BigEndian.Uint32(code[at+4:]))
				high := int32(binary.BigEndian.Uint32(code[at+8:]))
				if high < low || int64(high)-int64(low) >= int64(len(code)) {
					p.fail("tableswitch at pc %d with low %d and high %d", pc, low, high)
					return
				}
				n = at - pc + 12 + 4*int(high-low+1)
			} else {
				pairs := int32(binary.BigEndian.Uint32(code[at+4:]))
				if pairs < 0 || int64(pairs) > int64(len(code)) {
					p.fail("lookupswitch at pc %d with %d pairs", pc, pairs)
					return
				}
				n = at - pc + 8 + 8*int(pairs)
			}
		case opWide:
			if pc+1 < len(code) && code[pc+1] == 0x84 {
				n = 6
			} else {
				n = 4
			}
		}
		if n == 0 {
			p.fail("unknown opcode 0x%02x at pc %d", op, pc)
			return
		}
		if pc+n > len(code) {
			p.fail("instruction 0x%02x at pc %d runs past the code's %d bytes", op, pc, len(code))
			return
		}
		idx := 0
		switch {
		case op == opLdc:
			idx = int(code[pc+1])
		case op == opLdcW || op == opLdc2W || op >= opGetstatic && op <= opNew || op == opAnewarray ||
			op == opCheckcast || op == opInstanceof || op == opMultianewarray:
			idx = int(binary.BigEndian.Uint16(code[pc+1:]))
		}
		if idx != 0 {
			p.use(idx, op)
			if init {
				c.Init = append(c.Init, p.insn(op, idx))
			}
		}
		pc += n
	}
}

// use marks constant idx, used by instruction op, checking it is a constant
// that instruction may name.
func (p *parser) use(idx int, op byte) {
	var k constant
	var ok bool
	switch {
	case op == opLdc || op == opLdcW:
		k, ok = p.at(idx, tagInteger, tagFloat, tagString, tagClass, tagMethodHandle, tagMethodType, tagDynamic)
	case op == opLdc2W:
		k, ok = p.at(idx, tagLong, tagDouble, tagDynamic)
	case op >= opGetstatic && op <= 0xb5:
		k, ok = p.at(idx, tagFieldref)
	case op == opInvokeinterface:
		k, ok = p.at(idx, tagInterfaceMethodref)
	case op == opInvokedynamic:
		k, ok = p.at(idx, tagInvokeDynamic)
	case op > 0xb5 && op < opInvokeinterface:
		k, ok = p.at(idx, tagMethodref, tagInterfaceMethodref)
	default: // new, anewarray, checkcast, instanceof, multianewarray
		k, ok = p.at(idx, tagClass)
	}
	if !ok {
		return
	}
	p.mark(idx, k, 0)
}

// mark records constant idx as used, and what it brings with it: the
// reference of a method handle, the bootstrap method and arguments of a
// dynamic constant or call site.
func (p *parser) mark(idx int, k constant, depth int) {
	if p.used[idx] || p.err != nil {
		return
	}
	p.used[idx] = true
	switch k.tag {
	case tagMethodHandle:
		if r, ok := p.at(int(k.b), tagFieldref, tagMethodref, tagInterfaceMethodref); ok {
			p.mark(int(k.b), r, depth)
		}
	case tagDynamic, tagInvokeDynamic:
		if depth > 8 {
			p.fail("dynamic constants nest deeper than 8")
			return
		}
		p.bootstrapUse(int(k.a), depth+1)
	}
}

// bootstrapUse marks bootstrap method i's handle and its arguments that
// resolve to classes or members.
func (p *parser) bootstrapUse(i, depth int) {
	if i >= len(p.bsms) {
		p.fail("bootstrap method %d of %d", i, len(p.bsms))
		return
	}
	at := p.bsms[i]
	handle := int(binary.BigEndian.Uint16(p.data[at:]))
	args := int(binary.BigEndian.Uint16(p.data[at+2:]))
	if k, ok := p.at(handle, tagMethodHandle); ok {
		p.mark(handle, k, depth)
	}
	for a := range args {
		idx := int(binary.BigEndian.Uint16(p.data[at+4+2*a:]))
		if idx <= 0 || idx >= len(p.cp) {
			p.fail("bootstrap argument index %d outside the pool of %d", idx, len(p.cp))
			return
		}
		switch k := p.cp[idx]; k.tag {
		case tagClass, tagMethodHandle, tagDynamic:
			p.mark(idx, k, depth)
		}
	}
}

// insn names the constant an instruction of the static initializer uses.
func (p *parser) insn(op byte, idx int) Insn {
	in := Insn{Op: op}
	if idx <= 0 || idx >= len(p.cp) {
		return in // use has refused the index already
	}
	switch k := p.cp[idx]; k.tag {
	case tagString:
		in.String = p.utf8(int(k.a))
	case tagClass:
		in.Owner = p.className(idx, true)
	case tagFieldref, tagMethodref, tagInterfaceMethodref:
		in.Owner = p.className(int(k.a), true)
		if nt, ok := p.at(int(k.b), tagNameAndType); ok {
			in.Name = p.utf8(int(nt.a))
		}
	}
	return in
}

// collect turns the used constants into the class's references.
func (p *parser) collect(c *Class) {
	classes, refs := 0, 0
	for i, u := range p.used {
		if u {
			switch p.cp[i].tag {
			case tagClass:
				classes++
			case tagFieldref, tagMethodref, tagInterfaceMethodref:
				refs++
			}
		}
	}
	if classes > 0 {
		c.Classes = make([]string, 0, classes)
	}
	if refs > 0 {
		c.Refs = make([]Ref, 0, refs)
	}
	for i, u := range p.used {
		if !u || p.err != nil {
			continue
		}
		k := p.cp[i]
		switch k.tag {
		case tagClass:
			c.Classes = append(c.Classes, p.className(i, true))
		case tagFieldref, tagMethodref, tagInterfaceMethodref:
			r := Ref{Kind: RefKind(k.tag - tagFieldref + 1), Owner: p.className(int(k.a), true)}
			if nt, ok := p.at(int(k.b), tagNameAndType); ok {
				r.Name, r.Descriptor = p.utf8(int(nt.a)), p.utf8(int(nt.b))
			}
			c.Refs = append(c.Refs, r)
		}
	}
}
