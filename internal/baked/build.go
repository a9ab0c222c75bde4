package baked

import (
	"fmt"
	"path"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Build makes the verdict file of a deep check: facts gathered with
// host.Settings.Deep (their archives still open) and the decision on
// them. It parses every class of lib for the index (members only).
func Build(f *admission.Facts, d *admission.Decision) ([]byte, error) {
	if f.Deep == nil || f.Deep.Err != nil {
		return nil, fmt.Errorf("no deep facts to bake a verdict from")
	}
	if f.Deep.Baked != nil {
		return nil, fmt.Errorf("deep facts from a baked verdict: bake from a full check")
	}
	jv, err := admission.ParseJava(f.JDK.Version)
	if err != nil {
		return nil, fmt.Errorf("bake a deep verdict: the JDK is not known: %w", err)
	}
	v := &Verdict{Rules: admission.RulesStamp(), JDKMajor: jv.Major, Flink: d.Flink, Home: path.Dir(path.Clean(f.LibDir)), ParentFirstFrom: f.Deep.ParentFirstFrom}
	v.ParentFirst = slices.Clone(f.Deep.ParentFirst[:min(f.Deep.ParentFirstDefault, len(f.Deep.ParentFirst))])
	jars := func(js []*payload.JAR, as []*payload.Archive) ([]JAR, error) {
		out := make([]JAR, 0, len(js))
		for i, j := range js {
			if i >= len(as) || as[i] == nil {
				return nil, fmt.Errorf("bake a deep verdict: %s was not read for its classes", j.Path)
			}
			fp, err := as[i].Fingerprint()
			if err != nil {
				return nil, fmt.Errorf("bake a deep verdict: fingerprint of %s: %w", j.Path, err)
			}
			out = append(out, JAR{Path: j.Path, Fingerprint: fp})
		}
		return out, nil
	}
	if v.Lib, err = jars(f.Classpath, f.Deep.Lib); err != nil {
		return nil, err
	}
	if v.Usrlib, err = jars(f.Usrlib, f.Deep.Usrlib); err != nil {
		return nil, err
	}
	for _, fd := range d.Findings {
		if !admission.IsDeepRule(fd.Rule) {
			continue
		}
		if fd.Strict { // as the rule raised it: STREAMFUSION_STRICT is the start's
			fd.Severity, fd.Strict = admission.Warning, false
		}
		v.Findings = append(v.Findings, fd)
	}
	if len(f.Deep.Lib) != len(v.Lib) { // as Encode checks: a start would refuse the index
		return nil, fmt.Errorf("bake a deep verdict: %d JARs read for their classes, %d in lib", len(f.Deep.Lib), len(v.Lib))
	}
	index, err := indexLib(f.Deep.Lib)
	if err != nil {
		return nil, err
	}
	return encode(v, index)
}

// chunkClasses is how many classes of one JAR a worker parses at a time.
const chunkClasses = 256

// indexChunk is a run of one JAR's classes, in name order, parsed by one
// worker for the encoder.
type indexChunk struct {
	a       *payload.Archive
	names   []string
	first   int // the JAR's class count when the chunk starts a JAR, else -1
	classes []Class
	done    chan struct{}
}

// indexLib parses every class of lib for the index (members only) on
// every core and encodes them in lib's order and each JAR's name order as
// they come. The workers run at most a few chunks ahead of the encoder,
// so memory holds the chunks under way, not every class of lib: the index
// is identical whatever the order the workers finish in.
//
// It is long because it is the chunks laid out, the workers, and the
// encoder consuming them in order.
func indexLib(lib []*payload.Archive) ([]byte, error) {
	var chunks []*indexChunk
	for _, a := range lib {
		names := make([]string, 0, len(a.Classes))
		for n := range a.Classes {
			names = append(names, n)
		}
		slices.Sort(names)
		if len(names) == 0 {
			chunks = append(chunks, &indexChunk{a: a, first: 0, done: closed})
		}
		for i := 0; i < len(names); i += chunkClasses {
			c := &indexChunk{a: a, names: names[i:min(i+chunkClasses, len(names))], first: -1, done: make(chan struct{})}
			if i == 0 {
				c.first = len(names)
			}
			chunks = append(chunks, c)
		}
	}
	workers := runtime.GOMAXPROCS(0)
	window := make(chan struct{}, 4*workers) // chunks taken and not yet encoded
	stop := make(chan struct{})
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			var buf []byte
			for {
				select {
				case window <- struct{}{}:
				case <-stop:
					return
				}
				k := next.Add(1) - 1
				if k >= int64(len(chunks)) {
					return
				}
				c := chunks[k]
				if c.names != nil {
					c.classes, buf = parseClasses(c.a, c.names, buf)
					close(c.done)
				}
			}
		})
	}
	defer func() { close(stop); wg.Wait() }()
	e := newIndexEncoder(len(lib))
	for _, c := range chunks {
		<-c.done
		if c.first >= 0 {
			e.jar(c.first)
		}
		for i := range c.classes {
			e.class(&c.classes[i])
		}
		c.classes = nil
		<-window // a worker put one token for each chunk it took, empty ones too
	}
	return e.compressed()
}

// closed is a done channel of a chunk with no work.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// parseClasses reads and parses (members only) the named classes of a;
// a class that does not read or parse is kept Unreadable. buf is reused
// for the bytes and returned for the next call.
func parseClasses(a *payload.Archive, names []string, buf []byte) ([]Class, []byte) {
	cs := make([]Class, 0, len(names))
	for _, n := range names {
		e := a.Classes[n]
		c := Class{Name: n, CRC: e.CRC, Size: e.Size}
		data, err := a.Class(n, buf)
		var pc *classfile.Class
		if err == nil {
			if cap(data) > cap(buf) {
				buf = data[:0]
			}
			pc, err = classfile.Parse(data, classfile.Options{MembersOnly: true})
		}
		if err != nil {
			c.Unreadable = true
		} else {
			c.Major, c.Access, c.Super, c.Interfaces, c.Fields, c.Methods = pc.Major, pc.Access, pc.Super, pc.Interfaces, pc.Fields, pc.Methods
		}
		cs = append(cs, c)
	}
	return cs, buf
}
