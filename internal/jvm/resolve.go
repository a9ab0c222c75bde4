package jvm

import (
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// perLoader is a map from (loader, class name) to V kept as one string
// map per loader: a check has two or three loaders, and a lookup by the
// name alone hashes only the string (a (loader, name) struct key took the
// generic map path, its hash and equality a twentieth of the CPU).
type perLoader[V any] struct {
	ls []*Loader
	ms []map[string]V
}

// of returns l's map, made on first use.
func (p *perLoader[V]) of(l *Loader) map[string]V {
	for i, x := range p.ls {
		if x == l {
			return p.ms[i]
		}
	}
	m := map[string]V{}
	p.ls, p.ms = append(p.ls, l), append(p.ms, m)
	return m
}

// jdk says whether a class is the JDK's: its modules are not read, so a
// reference to them is taken to link, and a hierarchy that reaches one may
// hold any member.
//
// It dispatches on the first letter: every class a walk meets is asked,
// and most are org/apache/..., which the JDK's prefixes rule out at once.
func jdk(name string) bool {
	if name == "" {
		return false
	}
	switch name[0] {
	case 'j':
		return strings.HasPrefix(name, "java/") || strings.HasPrefix(name, "javax/") || strings.HasPrefix(name, "jdk/")
	case 's':
		return strings.HasPrefix(name, "sun/")
	case 'c':
		return strings.HasPrefix(name, "com/sun/")
	case 'o':
		if !strings.HasPrefix(name, "org/") {
			return false
		}
		rest := name[len("org/"):]
		return strings.HasPrefix(rest, "w3c/") || strings.HasPrefix(rest, "xml/") || strings.HasPrefix(rest, "ietf/") || strings.HasPrefix(rest, "omg/")
	}
	return false
}

// jdkPrefixes are the packages jdk answers for, as a list (its test).
var jdkPrefixes = []string{"java/", "javax/", "jdk/", "sun/", "com/sun/", "org/w3c/", "org/xml/", "org/ietf/", "org/omg/"}

// element strips array dimensions: the class an array type resolves.
func element(name string) (string, bool) {
	if !strings.HasPrefix(name, "[") {
		return name, true
	}
	d := strings.TrimLeft(name, "[")
	if strings.HasPrefix(d, "L") && strings.HasSuffix(d, ";") {
		return d[1 : len(d)-1], true
	}
	return "", false // an array of primitives
}

// Edge is why a class does not load, as the JVM's NoClassDefFoundError
// names it: the class with no class file (Missing) and the class whose
// superclass, interface or instruction names it (From; "" when the class
// asked for is itself the missing one, so the caller is the namer). The
// zero Edge: the class loads.
type Edge struct{ From, Missing string }

// Load resolves a class through l (JVMS 5.3, 5.4.3.1: the class, then its
// superclass and interfaces, recursively) and returns the first edge of
// its hierarchy (superclass first, then interfaces, depth first) to a
// class with no class file; the zero Edge when every class of it loads.
func (cp *Classpath) Load(l *Loader, name string) Edge {
	if jdk(name) {
		return Edge{}
	}
	loads := cp.loads.of(l)
	if e, ok := loads[name]; ok {
		return e
	}
	loads[name] = Edge{} // a cycle is the JVM's ClassCircularityError, not ours to report
	a := l.Find(name)
	if a == nil {
		loads[name] = Edge{Missing: name}
		return loads[name]
	}
	c, err := cp.Class(a, name)
	if err != nil {
		return Edge{} // an unreadable class is not resolution's to report: the layout rules say it
	}
	dl := cp.loaderOf(a)
	for i := -1; i < len(c.Interfaces); i++ {
		s := c.Super
		if i >= 0 {
			s = c.Interfaces[i]
		}
		if s == "" {
			continue
		}
		if e := cp.Load(dl, s); e.Missing != "" {
			if e.From == "" {
				e.From = name
			}
			loads[name] = e
			return e
		}
	}
	return Edge{}
}

// class returns the class l resolves name to, parsed, with its defining
// loader; nil for a JDK class or one that does not load.
func (cp *Classpath) class(l *Loader, name string) (*classfile.Class, *Loader, *payload.Archive) {
	if jdk(name) {
		return nil, nil, nil
	}
	a := l.Find(name)
	if a == nil {
		return nil, nil, nil
	}
	c, err := cp.Class(a, name)
	if err != nil {
		return nil, nil, nil
	}
	return c, cp.loaderOf(a), a
}

// Lookup is the JVMS 5.4.3 search for a member of the class ref.Owner as
// l resolves it: a field as 5.4.3.2 finds it, a method as 5.4.3.3, an
// interface method as 5.4.3.4 (java.lang.Object's public methods
// included). found is true also when the class does not load (Load says
// why) or the search reaches a class it cannot see into (the JDK's,
// jdkMembers aside); looked are the classes it searched, in order.
//
// It is long because it follows JVMS 5.4.3.2-4 step by step, in one place,
// to be read beside the specification.
func (cp *Classpath) Lookup(l *Loader, ref classfile.Ref) (found bool, looked []string) {
	declares := func(c *classfile.Class) bool {
		ms := c.Methods
		if ref.Kind == classfile.Field {
			ms = c.Fields
		}
		for _, m := range ms {
			if m.Name == ref.Name && m.Descriptor == ref.Descriptor {
				return true
			}
		}
		return false
	}
	c, cl, _ := cp.class(l, ref.Owner)
	if c == nil {
		return true, nil
	}
	if ref.Name == "<init>" || ref.Name == "<clinit>" {
		return declares(c), []string{ref.Owner}
	}
	// supers walks the superclass chain from c; unknown when it reaches a
	// JDK class whose members are not known here.
	supers := func(c *classfile.Class, l *Loader, visit func(*classfile.Class, *Loader) bool) (hit, unknown bool) {
		for c != nil {
			looked = append(looked, c.Name)
			if visit(c, l) {
				return true, false
			}
			if c.Super == "" {
				return false, false
			}
			if jdk(c.Super) {
				members, known := jdkMembers[c.Super]
				if !known {
					return false, true
				}
				looked = append(looked, c.Super)
				return ref.Kind != classfile.Field && slices.Contains(members, ref.Name+ref.Descriptor), false
			}
			c, l, _ = cp.class(l, c.Super)
		}
		return false, true
	}
	var ifaces func(c *classfile.Class, l *Loader, seen map[string]bool) (hit, unknown bool)
	ifaces = func(c *classfile.Class, l *Loader, seen map[string]bool) (bool, bool) {
		unknown := false
		for _, i := range c.Interfaces {
			if seen[i] {
				continue
			}
			seen[i] = true
			if jdk(i) {
				members, known := jdkMembers[i]
				if !known {
					unknown = true
				} else if ref.Kind != classfile.Field && slices.Contains(members, ref.Name+ref.Descriptor) {
					return true, false
				}
				continue
			}
			ic, il, _ := cp.class(l, i)
			if ic == nil {
				unknown = true
				continue
			}
			looked = append(looked, ic.Name)
			if declares(ic) {
				return true, false
			}
			if h, u := ifaces(ic, il, seen); h {
				return true, false
			} else if u {
				unknown = true
			}
		}
		return false, unknown
	}
	// allInterfaces searches the superinterfaces of c and of every superclass.
	allInterfaces := func() (bool, bool) {
		seen := map[string]bool{}
		unknown := false
		hit, u := supers(c, cl, func(k *classfile.Class, kl *Loader) bool {
			h, uu := ifaces(k, kl, seen)
			unknown = unknown || uu
			return h
		})
		return hit, unknown || u
	}
	switch ref.Kind {
	case classfile.Field:
		// The class, its superinterfaces, then its superclass, recursively:
		// the order differs, the set searched does not.
		if hit, u := supers(c, cl, func(k *classfile.Class, _ *Loader) bool { return declares(k) }); hit || u {
			return true, looked
		}
		hit, u := allInterfaces()
		return hit || u, uniq(looked)
	case classfile.InterfaceMethod:
		if declares(c) || objectMethod(ref) {
			return true, []string{c.Name}
		}
		looked = []string{c.Name}
		hit, u := ifaces(c, cl, map[string]bool{})
		return hit || u, uniq(looked)
	default:
		if hit, u := supers(c, cl, func(k *classfile.Class, _ *Loader) bool { return declares(k) }); hit || u {
			return true, looked
		}
		hit, u := allInterfaces()
		return hit || u, uniq(looked)
	}
}

func uniq(s []string) []string {
	seen := map[string]bool{}
	var out []string
	for _, x := range s {
		if !seen[x] {
			seen[x] = true
			out = append(out, x)
		}
	}
	return out
}

// jdkMembers are the complete member sets (name and descriptor, with
// inherited ones) of the JDK types most hierarchies end in: reaching one of
// these, a search knows a member is missing; reaching any other JDK type,
// it cannot tell and takes the member to exist.
var jdkMembers = map[string][]string{
	"java/lang/Object": {"hashCode()I", "equals(Ljava/lang/Object;)Z", "toString()Ljava/lang/String;", "getClass()Ljava/lang/Class;",
		"notify()V", "notifyAll()V", "wait()V", "wait(J)V", "wait(JI)V", "clone()Ljava/lang/Object;", "finalize()V"},
	"java/io/Serializable":    nil,
	"java/lang/Cloneable":     nil,
	"java/lang/AutoCloseable": {"close()V"},
	"java/io/Closeable":       {"close()V"},
	"java/lang/Runnable":      {"run()V"},
	"java/lang/Comparable":    {"compareTo(Ljava/lang/Object;)I"},
}

// objectMethod: an interface method reference java.lang.Object's public
// methods answer (JVMS 5.4.3.4 step 3).
func objectMethod(ref classfile.Ref) bool {
	switch ref.Name + ref.Descriptor {
	case "hashCode()I", "equals(Ljava/lang/Object;)Z", "toString()Ljava/lang/String;", "getClass()Ljava/lang/Class;",
		"notify()V", "notifyAll()V", "wait()V", "wait(J)V", "wait(JI)V":
		return true
	}
	return false
}

// Unresolved is a symbolic reference of a class that does not resolve
// (JVMS 5.4.3): a class that does not load, or a member its class does not
// have.
type Unresolved struct {
	// Class is why a class the reference names does not load (a member's
	// class included); zero for a member that is missing.
	Class Edge
	// Super says the class resolved names Class.Missing as its superclass
	// or an interface (else an instruction names it; Class.From set means
	// a supertype deeper in the hierarchy).
	Super bool
	// Ref is the member reference whose class loads but has no such
	// member; Looked are the classes the search looked in, In the JAR the
	// loader takes the member's class from.
	Ref    *classfile.Ref
	Looked []string
	In     *payload.Archive
}

// Resolve resolves the symbolic references of c through l, as the JVM
// would when c is linked and its instructions run: its superclass and
// interfaces, the classes its instructions name (their element type for
// an array), then the class of every field and method reference and, when
// that loads and member(owner) says so, the member itself (Lookup). A
// member of an array type (clone() and Object's) always resolves. Each
// reference that does not resolve is reported, in that order.
func (cp *Classpath) Resolve(l *Loader, c *classfile.Class, member func(owner string) bool, report func(Unresolved)) {
	for _, s := range append([]string{c.Super}, c.Interfaces...) {
		if s == "" {
			continue
		}
		if e := cp.Load(l, s); e.Missing != "" {
			report(Unresolved{Class: e, Super: true})
		}
	}
	for _, k := range c.Classes {
		e, ok := element(k)
		if !ok {
			continue
		}
		if ed := cp.Load(l, e); ed.Missing != "" {
			report(Unresolved{Class: ed})
		}
	}
	for _, ref := range c.Refs {
		owner, ok := element(ref.Owner)
		if !ok || owner != ref.Owner {
			continue // a member of an array type: clone() and Object's
		}
		if e := cp.Load(l, owner); e.Missing != "" {
			report(Unresolved{Class: e})
			continue
		}
		if !member(owner) {
			continue
		}
		found, looked := cp.Lookup(l, ref)
		if found {
			continue
		}
		report(Unresolved{Ref: &ref, Looked: looked, In: l.Find(owner)})
	}
}
