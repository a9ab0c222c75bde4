package jvm

import (
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Loader is one class loader of the classpath model: its JARs in search
// order, and a parent it delegates to. lib's loader has no parent; usrlib's
// is child-first over lib except for the parent-first patterns; a
// plugin's (Isolated) sees lib only through its parent-first patterns, as
// Flink's ComponentClassLoader is component-only for every other class.
// The planner loader's nested planner is not in lib's JARs: lib cannot
// see it.
type Loader struct {
	Name        string
	JARs        []*payload.Archive
	Parent      *Loader
	ParentFirst []string // binary-name prefixes (a.b.) the parent answers first
	// Isolated: a class no parent-first pattern covers is taken from the
	// loader's own JARs only, never from its parent.
	Isolated bool

	index     map[string]*payload.Archive // class -> the first of JARs holding it, built on first use
	indexOnce sync.Once                   // Find is called from the walk's runahead goroutines too
}

// Find returns the JAR the loader takes a class from (internal name), nil
// when none of the JARs it searches has it.
func (l *Loader) Find(name string) *payload.Archive {
	if l == nil {
		return nil
	}
	if l.Parent != nil && l.ParentFirstFor(name) {
		if a := l.Parent.Find(name); a != nil {
			return a
		}
		return l.own(name)
	}
	if a := l.own(name); a != nil || l.Isolated {
		return a
	}
	return l.Parent.Find(name)
}

func (l *Loader) own(name string) *payload.Archive {
	l.indexOnce.Do(func() {
		// One map for the loader's JARs, the first JAR of a name winning:
		// a lookup is one probe, not one per JAR.
		n := 0
		for _, a := range l.JARs {
			if a != nil {
				n += len(a.Classes)
			}
		}
		l.index = make(map[string]*payload.Archive, n)
		for i := len(l.JARs) - 1; i >= 0; i-- {
			if a := l.JARs[i]; a != nil {
				for c := range a.Classes {
					l.index[c] = a
				}
			}
		}
	})
	return l.index[name]
}

// ParentFirstFor says whether one of the loader's parent-first patterns
// covers a class (internal name): its parent is asked first.
func (l *Loader) ParentFirstFor(name string) bool {
	for _, p := range l.ParentFirst {
		if p != "" && binaryPrefix(name, p) {
			return true
		}
	}
	return false
}

// binaryPrefix says whether the binary name of internal (dots for
// slashes) starts with p, without making it: every Find through usrlib
// asks.
func binaryPrefix(internal, p string) bool {
	if len(internal) < len(p) {
		return false
	}
	for i := 0; i < len(p); i++ {
		c := internal[i]
		if c == '/' {
			c = '.'
		}
		if c != p[i] {
			return false
		}
	}
	return true
}
