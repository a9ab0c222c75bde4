package jvm

import (
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

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

	mu sync.Mutex // guards classes: prefetch parses on several goroutines
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

type parsed struct {
	c   *classfile.Class
	err error
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
		return p.c, p.err
	}
	cp.mu.Unlock()
	p := &parsed{}
	if cp.indexed != nil {
		if c, err, ok := cp.indexed(a, name); ok {
			p.c, p.err = c, err
			cp.mu.Lock()
			m[name] = p
			cp.mu.Unlock()
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
	cp.mu.Lock()
	if q, ok := m[name]; ok { // parsed meanwhile by another goroutine
		p = q
	} else {
		m[name] = p
	}
	cp.mu.Unlock()
	return p.c, p.err
}

// want is a class of a JAR to parse ahead of its use.
type want struct {
	a    *payload.Archive
	name string
}

// prefetch parses classes of a JAR on a few goroutines, so that the
// inflating and parsing of a large JAR's reachable classes use every CPU.
func (cp *Classpath) prefetch(a *payload.Archive, names []string) {
	ws := make([]want, len(names))
	for i, n := range names {
		ws[i] = want{a, n}
	}
	cp.prefetchAll(ws)
}

// prefetchAll parses classes of any JARs on a few goroutines; those
// already parsed are skipped. Class keeps each result, so the order of
// the parsing does not show in any answer.
func (cp *Classpath) prefetchAll(ws []want) {
	workers := min(runtime.GOMAXPROCS(0), 4, len(ws)/8)
	if workers < 2 {
		return
	}
	// The workers take the next class by an index, not through a channel:
	// a hand-off per class woke a goroutine per class.
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := next.Add(1) - 1; i < int64(len(ws)); i = next.Add(1) - 1 {
				cp.Class(ws[i].a, ws[i].name) //nolint:errcheck // the error is kept with the class
			}
		}()
	}
	wg.Wait()
}

// isParsed reports whether a class of a JAR has been parsed already.
func (cp *Classpath) isParsed(a *payload.Archive, name string) bool {
	cp.mu.Lock()
	defer cp.mu.Unlock()
	_, ok := cp.classes[a][name]
	return ok
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
