package jvm

import (
	"slices"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Classpath is the model every caller uses: lib's loader and usrlib's,
// and the classes of their JARs, each parsed once.
type Classpath struct {
	Lib, Usrlib *Loader
	Plugins     []*Loader // one per plugin folder (Plugin)
	classes     map[*payload.Archive]map[string]*parsed
	indexed     Indexed         // answers for the classes of a baked class index
	loads       perLoader[Edge] // class -> the first edge of its hierarchy to a missing class (zero when it loads)

	mu sync.Mutex // guards classes, and a parsed class's Classes and Refs (uses, drop): the runahead parses on several goroutines
	// resolvedOnly are the JARs whose classes are only resolved against
	// (the host's own), never judged: parsed without their instructions.
	// Set before the first Class.
	resolvedOnly map[*payload.Archive]bool
	prewalks     []*Prewalk // adopted, settled at the first walk
}

// Indexed answers for the classes of JARs whose class index holds them
// parsed (a baked index, no bytes): the class, or ok false for a class
// the index does not hold (it is then read from the JAR).
type Indexed func(a *payload.Archive, name string) (c *classfile.Class, err error, ok bool)

var classBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// parsed is a class of the parse cache. ready is closed once c and err
// are set, by the one goroutine that parses it (nil when they were set
// before the entry was kept): a class asked for while it is parsed is
// waited for, not parsed twice.
type parsed struct {
	c     *classfile.Class
	err   error
	ready chan struct{}
}

// NewClasspath arranges lib and usrlib as Flink's class loaders do: lib's
// loader searches lib in classpath order (flink-dist last); usrlib's,
// when usrlib has JARs, is lib's child, child-first except for the
// parentFirst patterns. indexed, when not nil, answers for the classes it
// holds.
func NewClasspath(lib, usrlib []*payload.Archive, parentFirst []string, indexed Indexed) *Classpath {
	l := &Loader{Name: "lib", JARs: lib}
	cp := &Classpath{Lib: l, classes: map[*payload.Archive]map[string]*parsed{}, indexed: indexed, resolvedOnly: map[*payload.Archive]bool{}}
	if len(usrlib) > 0 {
		cp.Usrlib = &Loader{Name: "usrlib", JARs: usrlib, Parent: l, ParentFirst: parentFirst}
	}
	return cp
}

// ResolveOnly marks a JAR whose classes are only resolved against (the
// host's own), never judged: they are parsed without their instructions.
// Call it before the first Class.
func (cp *Classpath) ResolveOnly(a *payload.Archive) { cp.resolvedOnly[a] = true }

// IsResolvedOnly says whether ResolveOnly marked a JAR.
func (cp *Classpath) IsResolvedOnly(a *payload.Archive) bool { return cp.resolvedOnly[a] }

// Class parses a class of a JAR once.
func (cp *Classpath) Class(a *payload.Archive, name string) (*classfile.Class, error) {
	cp.mu.Lock()
	m := cp.classes[a]
	if m == nil {
		m = map[string]*parsed{}
		cp.classes[a] = m
	}
	if p, ok := m[name]; ok {
		cp.mu.Unlock()
		if p.ready != nil {
			<-p.ready
		}
		return p.c, p.err
	}
	p := &parsed{ready: make(chan struct{})}
	m[name] = p
	cp.mu.Unlock()
	defer close(p.ready)
	if cp.indexed != nil {
		if c, err, ok := cp.indexed(a, name); ok {
			p.c, p.err = c, err
			return p.c, p.err
		}
	}
	bp := classBuffers.Get().(*[]byte)
	data, err := a.Class(name, *bp)
	if err == nil {
		if cap(data) > cap(*bp) && cap(data) <= 1<<20 {
			*bp = data[:0]
		}
		p.c, err = classfile.Parse(data, classfile.Options{MembersOnly: cp.resolvedOnly[a]})
	}
	classBuffers.Put(bp)
	p.err = err
	return p.c, p.err
}

// uses returns what a parsed class's instructions use, the classes and
// the member references, as they are now: nil once the walk has judged
// the class and dropped them (drop). The runahead reads them beside the
// walk.
func (cp *Classpath) uses(c *classfile.Class) ([]string, []classfile.Ref) {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	return c.Classes, c.Refs
}

// drop forgets what a judged class's instructions use: only its members
// stay, for the resolution of other classes' references.
func (cp *Classpath) drop(c *classfile.Class) {
	cp.mu.Lock()
	c.Classes, c.Refs = nil, nil
	cp.mu.Unlock()
}

// Plugin adds the class loader of one plugin folder, as Flink's
// PluginLoader makes it: its JARs, and lib for the classes the plugin
// parent-first patterns cover (owner first), nothing else of lib. Add
// plugins before the first walk.
func (cp *Classpath) Plugin(name string, jars []*payload.Archive, parentFirst []string) *Loader {
	l := &Loader{Name: name, JARs: jars, Parent: cp.Lib, ParentFirst: parentFirst, Isolated: true}
	cp.Plugins = append(cp.Plugins, l)
	return l
}

// loaderOf is the loader that defines a JAR's classes.
func (cp *Classpath) loaderOf(a *payload.Archive) *Loader {
	if cp.Usrlib != nil && slices.Contains(cp.Usrlib.JARs, a) {
		return cp.Usrlib
	}
	for _, l := range cp.Plugins {
		if slices.Contains(l.JARs, a) {
			return l
		}
	}
	return cp.Lib
}
