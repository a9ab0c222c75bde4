package jvm

import (
	"math/rand/v2"
	"reflect"
	"slices"
	"strconv"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// shadowedInNameOrder is what Shadowed must give, spelled out the slow
// way: every JAR's classes in name order, the first JAR of a loader
// holding a name winning, one Hidden per pair in the order first met.
func shadowedInNameOrder(cp *Classpath, lib bool) (within, between []Hidden) {
	type pair struct{ winner, loser *payload.Archive }
	var out []Hidden
	byPair := map[pair]int{}
	hide := func(w, l *payload.Archive, name string) {
		i, ok := byPair[pair{w, l}]
		if !ok {
			i = len(out)
			byPair[pair{w, l}] = i
			out = append(out, Hidden{Winner: w, Loser: l})
		}
		out[i].Classes = append(out[i].Classes, name)
	}
	sorted := func(a *payload.Archive) []string {
		var names []string
		for n := range a.Classes {
			names = append(names, n)
		}
		slices.Sort(names)
		return names
	}
	differ := func(a, b *payload.Archive, name string) bool {
		x, y := a.Classes[name], b.Classes[name]
		return x.CRC != y.CRC || x.Size != y.Size
	}
	for _, l := range []*Loader{cp.Lib, cp.Usrlib} {
		if l == nil || l == cp.Lib && !lib {
			continue
		}
		first := map[string]*payload.Archive{}
		for _, a := range l.JARs {
			if a == nil {
				continue
			}
			for _, name := range sorted(a) {
				if w, ok := first[name]; !ok {
					first[name] = a
				} else if differ(w, a, name) {
					hide(w, a, name)
				}
			}
		}
	}
	within, out, byPair = out, nil, map[pair]int{}
	if cp.Usrlib == nil {
		return within, nil
	}
	for _, a := range cp.Usrlib.JARs {
		if a == nil {
			continue
		}
		for _, name := range sorted(a) {
			pf := cp.Usrlib.ParentFirstFor(name)
			if cp.Usrlib.Find(name) != a && !pf {
				continue
			}
			la := cp.Lib.Find(name)
			if la == nil || !differ(a, la, name) {
				continue
			}
			if pf {
				hide(la, a, name)
			} else {
				hide(a, la, name)
			}
		}
	}
	return within, out
}

// Shadowed, which reads the loaders' indexes and sorts only what is
// hidden, gives what the pass in name order gives, pairs and classes in
// the same order, on classpaths of random overlapping JARs (same and
// different copies, parent-first patterns, several usrlib JARs, JARs
// that could not be opened).
func TestShadowedAsInNameOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 7))
	jar := func() *payload.Archive {
		if rng.IntN(8) == 0 {
			return nil // a JAR that could not be opened
		}
		a := &payload.Archive{Classes: map[string]payload.ClassEntry{}}
		for range rng.IntN(40) {
			pkg := []string{"com/acme/", "org/apache/flink/", "org/apache/kafka/"}[rng.IntN(3)]
			a.Classes[pkg+"C"+strconv.Itoa(rng.IntN(30))] = payload.ClassEntry{CRC: uint32(rng.IntN(3)), Size: uint64(rng.IntN(2))}
		}
		return a
	}
	hidden := 0
	for round := range 300 {
		var lib, usrlib []*payload.Archive
		for range 1 + rng.IntN(4) {
			lib = append(lib, jar())
		}
		for range rng.IntN(3) {
			usrlib = append(usrlib, jar())
		}
		cp := NewClasspath(lib, usrlib, []string{"org.apache.flink."}, nil)
		for _, withLib := range []bool{true, false} {
			wantWithin, wantBetween := shadowedInNameOrder(cp, withLib)
			within, between := cp.shadowed(withLib)
			if !reflect.DeepEqual(within, wantWithin) || !reflect.DeepEqual(between, wantBetween) {
				t.Fatalf("round %d (lib %v):\nwithin  %v\nwant    %v\nbetween %v\nwant    %v", round, withLib, within, wantWithin, between, wantBetween)
			}
			hidden += len(within) + len(between)
		}
	}
	if hidden < 300 {
		t.Fatalf("only %d hidden pairs in 300 rounds: the classpaths hardly overlap", hidden)
	}
}
