package classfile

import "sync"

// Interner hands out one copy of each string, so that the names and
// descriptors thousands of classes share ("<init>", "()V", the owners of
// common calls) are held once: a deep check keeps the members of every
// class it parses, and the garbage collector scans what it keeps. Safe
// for concurrent use; the zero value is ready. It grows without bound:
// one per check, dropped with it.
type Interner struct {
	shards [16]struct {
		mu sync.Mutex
		m  map[string]string
	}
}

func (in *Interner) intern(b []byte) string {
	if len(b) == 0 {
		return ""
	}
	s := &in.shards[(len(b)+int(b[len(b)-1])+int(b[len(b)/2]))&15]
	s.mu.Lock()
	v, ok := s.m[string(b)] // no allocation for the lookup
	if !ok {
		if s.m == nil {
			s.m = map[string]string{}
		}
		v = string(b)
		s.m[v] = v
	}
	s.mu.Unlock()
	return v
}
