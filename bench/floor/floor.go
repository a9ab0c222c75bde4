// Package floor is the least work the deep check can do on what it read:
// each JAR's central directory read, and each class entry the check
// inflated (payload.OnInflate records them) inflated once, on every core,
// with the faster of the two inflaters the module has (klauspost/compress,
// which the check uses too). It parses nothing and judges nothing. The
// benchmarks print the check's time over the floor's, measured in the
// same run (issue 39's budget: at most 1.5x).
//
// The central directories are read by the standard library's
// archive/zip, which parses every record into a File: no leaner than the
// check's own reader, so the floor is not set below what a Go program
// reading a JAR does.
package floor

import (
	"archive/zip"
	"cmp"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"

	kflate "github.com/klauspost/compress/flate"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Class is one class entry the check read: the JAR as the check named it,
// the entry's name.
type Class struct{ JAR, Entry string }

// Record runs run with payload.OnInflate set and returns every class
// entry it inflated, each once, in a stable order.
func Record(run func() error) ([]Class, error) {
	var mu sync.Mutex
	seen := map[Class]bool{}
	payload.OnInflate(func(jar, entry string) {
		mu.Lock()
		seen[Class{jar, entry}] = true
		mu.Unlock()
	})
	err := run()
	payload.OnInflate(nil)
	mu.Lock() // a read still under way when run returned has recorded or will not
	defer mu.Unlock()
	out := make([]Class, 0, len(seen))
	for c := range seen {
		out = append(out, c)
	}
	slices.SortFunc(out, func(a, b Class) int { return cmp.Or(cmp.Compare(a.JAR, b.JAR), cmp.Compare(a.Entry, b.Entry)) })
	return out, err
}

// Result is what one Run read.
type Result struct {
	JARs, Classes int
	Inflated      int64 // bytes
}

// Run reads the central directory of every JAR of cs (file names the
// file on this machine that holds the JAR the check named) and inflates
// each class of cs once, on GOMAXPROCS workers.
func Run(cs []Class, file func(jar string) string) (Result, error) {
	byJAR := map[string][]string{}
	var order []string
	for _, c := range cs {
		if _, ok := byJAR[c.JAR]; !ok {
			order = append(order, c.JAR)
		}
		byJAR[c.JAR] = append(byJAR[c.JAR], c.Entry)
	}
	type job struct{ f *zip.File }
	var (
		jobs    []job
		closers []io.Closer
	)
	defer func() {
		for _, c := range closers {
			c.Close()
		}
	}()
	for _, jar := range order {
		r, err := zip.OpenReader(file(jar))
		if err != nil {
			return Result{}, fmt.Errorf("%s: %w", jar, err)
		}
		closers = append(closers, r)
		want := map[string]bool{}
		for _, e := range byJAR[jar] {
			want[e] = true
		}
		for _, f := range r.File {
			if want[f.Name] {
				delete(want, f.Name) // the first of a name; JarFile's is the last, the bytes are alike
				jobs = append(jobs, job{f})
			}
		}
		if len(want) > 0 {
			return Result{}, fmt.Errorf("%s: %d classes the check read are not in the file", jar, len(want))
		}
	}
	var next, inflated atomic.Int64
	var firstErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for range runtime.GOMAXPROCS(0) {
		wg.Go(func() {
			var buf []byte
			var fr io.ReadCloser
			for {
				i := int(next.Add(1) - 1)
				if i >= len(jobs) {
					return
				}
				f := jobs[i].f
				raw, err := f.OpenRaw()
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				src := raw
				if f.Method == zip.Deflate {
					if fr == nil {
						fr = kflate.NewReader(raw)
					} else if err := fr.(kflate.Resetter).Reset(raw, nil); err != nil {
						firstErr.CompareAndSwap(nil, &err)
						return
					}
					src = fr
				}
				if uint64(cap(buf)) < f.UncompressedSize64 {
					buf = make([]byte, f.UncompressedSize64)
				}
				n, err := io.ReadFull(src, buf[:f.UncompressedSize64])
				if err != nil {
					firstErr.CompareAndSwap(nil, &err)
					return
				}
				inflated.Add(int64(n))
			}
		})
	}
	wg.Wait()
	if e := firstErr.Load(); e != nil {
		return Result{}, *e
	}
	return Result{JARs: len(order), Classes: len(jobs), Inflated: inflated.Load()}, nil
}
