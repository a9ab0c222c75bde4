package jvm

import (
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// EntryPoints are a JAR's entry points (internal names): its service
// implementations (META-INF/services, as java.util.ServiceLoader reads
// them), its manifest's Main-Class and Flink's Program-Class.
func EntryPoints(j *payload.JAR, a *payload.Archive) []string {
	var out []string
	for _, s := range a.Services {
		data, err := a.File(s)
		if err != nil {
			continue
		}
		out = append(out, payload.ServiceClasses(data)...)
	}
	for _, attr := range []string{"Main-Class", "Program-Class"} {
		if m := j.ManifestValue(attr); m != "" {
			out = append(out, strings.ReplaceAll(strings.TrimSpace(m), ".", "/"))
		}
	}
	return out
}

// Scope is a JAR a walk enters: its classes, as Loader resolves them,
// from its entry points Roots (internal names).
type Scope struct {
	JAR    *payload.Archive
	Loader *Loader
	Roots  []string
}

// reachClass is a class of a scope the walk reached.
type reachClass struct {
	scope int
	name  string
}

// Reachable walks the classes the JVM can reach from the roots of every
// scope, as the loaders resolve them (the superclass, the interfaces, the
// classes the instructions name and the owners of the members they use):
// through the classes of any scope's JAR (a connector's calls into the
// kafka-clients beside it), never into other JARs (the host's own) or the
// JDK. Each class is visited once, with the index of the scope whose JAR
// holds it; breadth first, in the order the classes are named. The
// parsing runs ahead of the visit (runahead): while the walk judges a
// class, the classes the walk will meet, and those their resolution
// loads, are parsed on other goroutines, with no wait between levels.
// After visit returns, the class keeps only its members: what its
// instructions use (Classes, Refs) is dropped, as the resolution of
// other classes' references does not need it.
func (cp *Classpath) Reachable(scopes []Scope, visit func(scope int, c *classfile.Class)) {
	cp.Settle()
	byArchive := make(map[*payload.Archive]int, len(scopes))
	for i, s := range scopes {
		byArchive[s.JAR] = i
	}
	w := &walk{cp: cp, scopes: scopes, byArchive: byArchive, visited: map[*payload.Archive]map[string]bool{}}
	var level []item
	for _, s := range scopes {
		for _, root := range s.Roots {
			level = append(level, item{root, s.Loader})
		}
	}
	ahead := cp.runahead(scopes, byArchive, level)
	defer ahead.stop()
	mine := w.enter(level)
	for len(mine) > 0 {
		// The next level is what this level's classes name, whatever the
		// visit finds of them: known before the visit.
		next := w.enter(w.named(mine))
		for _, m := range mine {
			c, err := cp.Class(scopes[m.scope].JAR, m.name)
			if err != nil {
				continue
			}
			visit(m.scope, c)
			cp.drop(c)
		}
		mine = next
	}
}

// item is a class a walk reaches, by the loader naming it.
type item struct {
	name string
	l    *Loader
}

// walk is the state of Reachable: the classes each loader has been
// asked for, and those of each JAR entered.
type walk struct {
	cp        *Classpath
	scopes    []Scope
	byArchive map[*payload.Archive]int
	seen      perLoader[bool]
	visited   map[*payload.Archive]map[string]bool
}

// enter keeps of a level the classes of the scopes not seen before, in
// order.
func (w *walk) enter(level []item) []reachClass {
	var mine []reachClass
	for _, it := range level {
		sl := w.seen.of(it.l)
		if sl[it.name] || jdk(it.name) {
			continue
		}
		sl[it.name] = true
		a := it.l.Find(it.name)
		si, ok := w.byArchive[a]
		if !ok {
			continue // outside the scopes, or no class file (reported at the edge naming it)
		}
		v := w.visited[a]
		if v == nil {
			v = map[string]bool{}
			w.visited[a] = v
		}
		if v[it.name] {
			continue
		}
		v[it.name] = true
		mine = append(mine, reachClass{si, it.name})
	}
	return mine
}

// named is what a level's classes name, in order: the next level before
// enter filters it.
func (w *walk) named(mine []reachClass) []item {
	var next []item
	for _, m := range mine {
		c, err := w.cp.Class(w.scopes[m.scope].JAR, m.name)
		if err != nil {
			continue
		}
		l := w.scopes[m.scope].Loader
		sl := w.seen.of(l)
		add := func(n string) {
			if e, ok := element(n); ok && e != "" && !jdk(e) && !sl[e] {
				next = append(next, item{e, l})
			}
		}
		named(c, add)
	}
	return next
}

// named calls add with every class c names: its supertypes, the classes of
// its constant pool and the owners of its member references.
func named(c *classfile.Class, add func(string)) {
	add(c.Super)
	for _, n := range c.Interfaces {
		add(n)
	}
	for _, n := range c.Classes {
		add(n)
	}
	for _, r := range c.Refs {
		add(r.Owner)
	}
}
