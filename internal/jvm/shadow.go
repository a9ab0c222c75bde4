package jvm

import (
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Hidden are classes two JARs hold with different contents (CRC and size
// of the central directory) of which the loaders take Winner's copies and
// never Loser's. Classes are in name order.
type Hidden struct {
	Winner, Loser *payload.Archive
	Classes       []string
}

// Shadowed says which copies the loaders take, the way they pick: in one
// loader the first JAR in its order hides the later ones (lib's, then
// usrlib's: within); a usrlib class hides lib's copy child-first, and is
// itself hidden by lib's copy where a parent-first pattern leaves the
// class to lib (between). Identical copies hide nothing. One Hidden per
// pair of JARs, in the order found.
func (cp *Classpath) Shadowed() (within, between []Hidden) { return cp.shadowed(true) }

// UsrlibShadowed is Shadowed without lib's own shadowing (within holds
// only usrlib's): what a start whose lib a baked verdict covers still
// has to find, without sorting every class of lib.
func (cp *Classpath) UsrlibShadowed() (within, between []Hidden) { return cp.shadowed(false) }

// shadowed finds the hidden copies without sorting every class of every
// JAR: a loader's index (Find's) already names the first JAR of each
// class, so a copy is hidden where the index names another JAR. Only
// what is hidden is sorted, and each JAR's pairs are put in the order a
// pass over its classes in name order finds them (a pair's first class),
// so the result does not depend on the maps' order. The archives are
// distinct (each JAR path is opened once); nil ones are skipped.
func (cp *Classpath) shadowed(lib bool) (within, between []Hidden) {
	for _, l := range []*Loader{cp.Lib, cp.Usrlib} {
		if l == nil || (l == cp.Lib && !lib) {
			continue
		}
		for _, a := range l.JARs {
			if a == nil {
				continue
			}
			var p pairs
			for name, x := range a.Classes {
				if w := l.own(name); w != a && differs(x, w, name) {
					p.hide(w, a, name)
				}
			}
			within = append(within, p.found()...)
		}
	}
	if cp.Usrlib == nil {
		return within, nil
	}
	for _, a := range cp.Usrlib.JARs {
		if a == nil {
			continue
		}
		var p pairs
		for name, x := range a.Classes {
			parentFirst := cp.Usrlib.ParentFirstFor(name)
			if !parentFirst && cp.Usrlib.own(name) != a {
				continue // an earlier usrlib JAR's copy: within usrlib
			}
			la := cp.Lib.Find(name)
			if la == nil || !differs(x, la, name) {
				continue
			}
			if parentFirst {
				p.hide(la, a, name)
			} else {
				p.hide(a, la, name)
			}
		}
		between = append(between, p.found()...)
	}
	return within, between
}

// differs says whether JAR b's copy of a class differs from x, another
// JAR's (CRC and size of the central directory).
func differs(x payload.ClassEntry, b *payload.Archive, name string) bool {
	y := b.Classes[name]
	return x.CRC != y.CRC || x.Size != y.Size
}

// pairs are the hidden classes of one JAR's pass, by the pair of JARs.
type pairs struct{ out []Hidden }

func (p *pairs) hide(w, l *payload.Archive, name string) {
	for i := range p.out {
		if p.out[i].Winner == w && p.out[i].Loser == l {
			p.out[i].Classes = append(p.out[i].Classes, name)
			return
		}
	}
	p.out = append(p.out, Hidden{Winner: w, Loser: l, Classes: []string{name}})
}

// found is the pairs with their classes in name order, ordered by their
// first class: the order a pass in name order meets them.
func (p *pairs) found() []Hidden {
	for i := range p.out {
		slices.Sort(p.out[i].Classes)
	}
	slices.SortFunc(p.out, func(x, y Hidden) int { return strings.Compare(x.Classes[0], y.Classes[0]) })
	return p.out
}
