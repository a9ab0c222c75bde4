package admission

import (
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Deep are the facts the shadowing and linkage rules read, gathered only
// when asked for (host.Settings.Deep): every JAR of lib and usrlib indexed
// for its classes, and the parent-first patterns of the user class loader.
// The indexes read a class's bytes when a rule asks for it.
type Deep struct {
	Lib    []*payload.Archive // parallel to Facts.Classpath; nil where the JAR is unreadable
	Usrlib []*payload.Archive // parallel to Facts.Usrlib
	// ParentFirst are the patterns usrlib's class loader leaves to lib:
	// classloader.parent-first-patterns.default as the host's flink-dist
	// defines it, then .additional from the config file.
	ParentFirst     []string
	ParentFirstFrom string // where the default came from
	// ParentFirstDefault is how many of ParentFirst are the default's
	// (the rest are .additional).
	ParentFirstDefault int
	Err                error // the deep facts could not be gathered; the rules say so

	// Baked is the image's baked deep verdict when it applies (Lib is
	// then its class index); VerdictErr says why the image's verdict file
	// could not be used (the rules ran in full), at VerdictPath.
	Baked       *Baked
	VerdictErr  error
	VerdictPath string
}

// Close releases the JARs the indexes keep open.
func (d *Deep) Close() {
	if d == nil {
		return
	}
	for _, a := range append(append([]*payload.Archive(nil), d.Lib...), d.Usrlib...) {
		_ = a.Close() // read-only files: nothing is lost on a failed close
	}
}

// searched says where a loader looks for a class, for a finding.
func searched(l *jvm.Loader, name string) string {
	switch {
	case l.Parent == nil:
		return "lib (" + plural(len(l.JARs), "JAR") + ", flink-dist last)"
	case l.ParentFirstFor(name):
		return "lib, then usrlib (parent-first pattern)"
	default:
		return "usrlib, then lib (child-first)"
	}
}

// Classpath is the model every caller uses: lib's loader and usrlib's.
type Classpath struct {
	Lib, Usrlib *jvm.Loader
	classes     map[*payload.Archive]map[string]*parsed
	parentFirst []string
	baked       *Baked // answers for the classes of a baked class index

	mu sync.Mutex // guards classes: prefetch parses on several goroutines
	// resolvedOnly are the JARs whose classes are only resolved against
	// (the host's own), never judged: parsed without their instructions.
	// Set before the first Class.
	resolvedOnly map[*payload.Archive]bool
}

var classBuffers = sync.Pool{New: func() any { b := make([]byte, 0, 64<<10); return &b }}

// clusterProvided: a class of a package the parent-first patterns leave to
// the cluster's class path beyond lib, java. and the ones lib already has
// aside: Hadoop (HADOOP_CLASSPATH), which Flink's docs tell users to add
// outside lib. A library there that nothing in lib provides is not judged
// missing.
func (cp *Classpath) clusterProvided(class string) bool {
	binary := strings.ReplaceAll(class, "/", ".")
	for _, p := range cp.parentFirst {
		if strings.HasPrefix(p, "org.apache.hadoop") && strings.HasPrefix(binary, p) {
			return true
		}
	}
	return false
}

type parsed struct {
	c   *classfile.Class
	err error
}

// NewClasspath arranges the deep facts as Flink's class loaders do.
func NewClasspath(d *Deep) *Classpath {
	lib := &jvm.Loader{Name: "lib", JARs: d.Lib}
	cp := &Classpath{Lib: lib, classes: map[*payload.Archive]map[string]*parsed{}, baked: d.Baked}
	if len(d.Usrlib) > 0 {
		cp.Usrlib = &jvm.Loader{Name: "usrlib", JARs: d.Usrlib, Parent: lib, ParentFirst: d.ParentFirst}
	}
	return cp
}

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
	if cp.baked != nil && cp.baked.Classes != nil {
		if c, err, ok := cp.baked.Classes(a, name); ok {
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

// loaderOf is the loader that defines a JAR's classes.
func (cp *Classpath) loaderOf(a *payload.Archive) *jvm.Loader {
	if cp.Usrlib != nil {
		for _, u := range cp.Usrlib.JARs {
			if u == a {
				return cp.Usrlib
			}
		}
	}
	return cp.Lib
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
