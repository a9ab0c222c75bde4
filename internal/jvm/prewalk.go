package jvm

import (
	"sync"
	"sync/atomic"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Prewalk parses, on one goroutine, the classes of usrlib's JARs that a
// walk from their roots reaches through usrlib alone: the names no
// parent-first pattern covers, which usrlib's loader takes from its own
// JARs whatever lib holds. It runs while what the real walk needs first
// is still being made (lib's baked class index decoded, its loader's
// index built), on the core that work leaves idle. It only parses: a
// Classpath adopting it (Adopt) takes its classes as its own parse
// cache, so the walk and every finding are the same with or without it,
// and whatever it had not reached is parsed as before. It stops at
// Adopt's first walk, or Stop; what it holds is bounded by the time
// until then and by the JARs' classes.
type Prewalk struct {
	usrlib *Loader // usrlib's JARs without a parent: the JAR each name is in
	stop   chan struct{}
	done   chan struct{}
	once   sync.Once
	// adopted: one Classpath only takes the classes, as its walk drops
	// what their instructions use once visited.
	adopted atomic.Bool

	// Written by the goroutine, read after done.
	classes map[*payload.Archive]map[string]*parsed
}

// PrewalkScope is a usrlib JAR and its entry points (EntryPoints).
type PrewalkScope struct {
	JAR   *payload.Archive
	Roots []string
}

// StartPrewalk starts parsing from the roots of usrlib's JARs (all of
// usrlib, in order, as its loader searches them) under parentFirst, its
// loader's parent-first patterns.
func StartPrewalk(usrlib []*payload.Archive, scopes []PrewalkScope, parentFirst []string) *Prewalk {
	p := &Prewalk{
		usrlib:  &Loader{Name: "usrlib", JARs: usrlib, ParentFirst: parentFirst},
		stop:    make(chan struct{}),
		done:    make(chan struct{}),
		classes: map[*payload.Archive]map[string]*parsed{},
	}
	go p.run(scopes)
	return p
}

// Stop ends the walk and waits for it; it may be called more than once.
func (p *Prewalk) Stop() {
	if p == nil {
		return
	}
	p.once.Do(func() { close(p.stop) })
	<-p.done
}

func (p *Prewalk) run(scopes []PrewalkScope) {
	defer close(p.done)
	type item struct {
		a    *payload.Archive
		name string
	}
	seen := map[string]bool{}
	var queue []item
	add := func(n string) {
		e, ok := element(n)
		if !ok || e == "" || jdk(e) || seen[e] {
			return
		}
		seen[e] = true
		if p.usrlib.ParentFirstFor(e) {
			return // lib's first: the real walk finds where
		}
		if a := p.usrlib.own(e); a != nil {
			queue = append(queue, item{a, e})
		}
	}
	for _, s := range scopes {
		for _, r := range s.Roots {
			add(r)
		}
	}
	bp := classBuffers.Get().(*[]byte)
	defer classBuffers.Put(bp)
	for i := 0; i < len(queue); i++ {
		select {
		case <-p.stop:
			return
		default:
		}
		it := queue[i]
		pr := &parsed{}
		data, err := it.a.Class(it.name, *bp)
		if err == nil {
			if cap(data) > cap(*bp) && cap(data) <= 1<<20 {
				*bp = data[:0]
			}
			pr.c, err = classfile.Parse(data, classfile.Options{})
		}
		pr.err = err
		m := p.classes[it.a]
		if m == nil {
			m = map[string]*parsed{}
			p.classes[it.a] = m
		}
		m[it.name] = pr
		if c := pr.c; c != nil {
			named(c, add)
		}
	}
}

// Adopt takes a prewalk's classes as parsed, at the first walk
// (Reachable) or Settle: until then the prewalk goes on. Only the first
// classpath to adopt a prewalk takes its classes.
func (cp *Classpath) Adopt(p *Prewalk) {
	if p != nil && p.adopted.CompareAndSwap(false, true) {
		cp.prewalks = append(cp.prewalks, p)
	}
}

// Settle stops the prewalks Adopt took and keeps their classes, those
// of JARs the classpath judges (not ResolveOnly) and not parsed already.
func (cp *Classpath) Settle() {
	ps := cp.prewalks
	cp.prewalks = nil
	for _, p := range ps {
		p.Stop()
		cp.mu.Lock()
		for a, got := range p.classes {
			if cp.resolvedOnly[a] || cp.Usrlib == nil || cp.loaderOf(a) != cp.Usrlib {
				continue
			}
			m := cp.classes[a]
			if m == nil {
				m = make(map[string]*parsed, len(got))
				cp.classes[a] = m
			}
			for name, pr := range got {
				if _, ok := m[name]; !ok {
					m[name] = pr
				}
			}
		}
		cp.mu.Unlock()
	}
}
