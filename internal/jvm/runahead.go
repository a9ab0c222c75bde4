package jvm

import (
	"runtime"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// ahead parses, on a few goroutines, the classes a walk will ask for,
// before it asks: the classes of the scopes' JARs reachable from the
// roots (the walk visits each), and the classes they name outside the
// scopes with those classes' supertypes (the walk loads them to resolve
// references and hierarchies). It discovers them as the walk does,
// breadth first from the roots, but without waiting for the walk's
// levels: a class is parsed as soon as one that names it is. It only
// fills the parse cache (Class keeps one result per class and waits for
// one being parsed), so what the walk finds does not change.
//
// A class the walk has judged already (and dropped what its instructions
// use) is not followed by the runahead; the walk's own levels follow it.
type ahead struct {
	cp        *Classpath
	scopes    []Scope
	byArchive map[*payload.Archive]int

	mu      sync.Mutex
	cond    sync.Cond
	queue   []aheadClass // first at head
	head    int
	busy    int // workers parsing a class
	stopped bool
	asked   perLoader[bool] // (loader, class) pairs met, under mu
	wg      sync.WaitGroup
}

// aheadClass is a class of a JAR to parse, the loader its names resolve
// through, and whether all its names are followed (a scope's class,
// which the walk visits) or only its supertypes.
type aheadClass struct {
	a     *payload.Archive
	name  string
	l     *Loader
	scope bool
}

// runahead starts parsing from the roots (level: the walk's first
// items) on up to four goroutines, none with fewer than two cores (the
// walk keeps one busy). stop ends it.
func (cp *Classpath) runahead(scopes []Scope, byArchive map[*payload.Archive]int, level []item) *ahead {
	r := &ahead{cp: cp, scopes: scopes, byArchive: byArchive}
	r.cond.L = &r.mu
	workers := min(runtime.GOMAXPROCS(0), 4)
	if workers < 2 {
		return r
	}
	r.mu.Lock()
	for _, it := range level {
		r.addLocked(it.l, it.name)
	}
	r.mu.Unlock()
	for range workers {
		r.wg.Add(1)
		go r.work()
	}
	return r
}

// stop ends the runahead and waits for its goroutines: nothing reads the
// JARs for it once stop returns.
func (r *ahead) stop() {
	r.mu.Lock()
	r.stopped = true
	r.mu.Unlock()
	r.cond.Broadcast()
	r.wg.Wait()
}

// addLocked queues a class l names, once per loader, when a JAR holds it
// (under mu; Find reads only the loaders' indexes).
func (r *ahead) addLocked(l *Loader, n string) {
	e, ok := element(n)
	if !ok || e == "" || jdk(e) {
		return
	}
	sl := r.asked.of(l)
	if sl[e] {
		return
	}
	sl[e] = true
	a := l.Find(e)
	if a == nil {
		return
	}
	ac := aheadClass{a: a, name: e, l: r.cp.loaderOf(a)}
	if si, ok := r.byArchive[a]; ok {
		ac.l, ac.scope = r.scopes[si].Loader, true
	}
	r.queue = append(r.queue, ac)
}

// work parses queued classes until the queue is empty with no worker
// parsing (nothing more can come) or stop.
func (r *ahead) work() {
	defer r.wg.Done()
	r.mu.Lock()
	defer r.mu.Unlock()
	for {
		for r.head == len(r.queue) && r.busy > 0 && !r.stopped {
			r.cond.Wait()
		}
		if r.stopped || r.head == len(r.queue) {
			r.cond.Broadcast() // the others see the end too
			return
		}
		w := r.queue[r.head]
		r.head++
		r.busy++
		r.mu.Unlock()
		c, err := r.cp.Class(w.a, w.name)
		var classes []string
		var refs []classfile.Ref
		if err == nil && w.scope {
			classes, refs = r.cp.uses(c)
		}
		r.mu.Lock()
		r.busy--
		if err == nil {
			before := len(r.queue)
			r.addLocked(w.l, c.Super)
			for _, i := range c.Interfaces {
				r.addLocked(w.l, i)
			}
			for _, k := range classes {
				r.addLocked(w.l, k)
			}
			for _, ref := range refs {
				r.addLocked(w.l, ref.Owner)
			}
			if len(r.queue) > before {
				r.cond.Broadcast()
			}
		}
		if r.busy == 0 && r.head == len(r.queue) {
			r.cond.Broadcast()
		}
	}
}
