package jvm

import (
	"slices"

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

func (cp *Classpath) shadowed(lib bool) (within, between []Hidden) {
	type pair struct{ winner, loser *payload.Archive }
	byPair := map[pair]int{} // index into out
	var out []Hidden
	hide := func(w, l *payload.Archive, name string) {
		k := pair{w, l}
		i, ok := byPair[k]
		if !ok {
			i = len(out)
			byPair[k] = i
			out = append(out, Hidden{Winner: w, Loser: l})
		}
		out[i].Classes = append(out[i].Classes, name)
	}
	differ := func(a, b *payload.Archive, name string) bool {
		x, y := a.Classes[name], b.Classes[name]
		return x.CRC != y.CRC || x.Size != y.Size
	}
	for _, l := range []*Loader{cp.Lib, cp.Usrlib} {
		if l == nil || (l == cp.Lib && !lib) {
			continue
		}
		first := map[string]*payload.Archive{}
		for _, a := range l.JARs {
			if a == nil {
				continue
			}
			for _, name := range sortedClasses(a) {
				w, ok := first[name]
				if !ok {
					first[name] = a
					continue
				}
				if differ(w, a, name) {
					hide(w, a, name)
				}
			}
		}
	}
	within = out
	if cp.Usrlib == nil {
		return within, nil
	}
	byPair, out = map[pair]int{}, nil
	for _, a := range cp.Usrlib.JARs {
		if a == nil {
			continue
		}
		for _, name := range sortedClasses(a) {
			if cp.Usrlib.Find(name) != a && !cp.Usrlib.ParentFirstFor(name) {
				continue // an earlier usrlib JAR's copy: within usrlib
			}
			la := cp.Lib.Find(name)
			if la == nil || !differ(a, la, name) {
				continue
			}
			if cp.Usrlib.ParentFirstFor(name) {
				hide(la, a, name)
			} else {
				hide(a, la, name)
			}
		}
	}
	return within, out
}

func sortedClasses(a *payload.Archive) []string {
	names := make([]string, 0, len(a.Classes))
	for n := range a.Classes {
		names = append(names, n)
	}
	slices.Sort(names)
	return names
}
