package image

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Update is the progress of one layer: Done of Total bytes of its blob
// read (Total is 0 when unknown). Cached is set for a layer whose facts
// came from the cache; Finished once the layer is done.
type Update struct {
	Op       string // "read" or "push"
	Layer    int    // 1-based
	Layers   int
	Digest   string
	Done     int64
	Total    int64
	Cached   bool
	Finished bool
	// Note is what came of the cached deep result (Op "deep"): applied,
	// or why it could not be.
	Note string
}

// VerifyOptions say how Verify and Bake read layers.
type VerifyOptions struct {
	// Cache holds layer facts across runs; nil: every layer is read.
	// It holds the deep check's results too (deepcache.go), keyed by
	// the image's layers, environment and platform and by this build: a
	// deep check of an image whose result is there reads no layer for it.
	Cache *layercache.Cache
	// NoDeepCache keeps the deep check's results out of Cache (the layer
	// facts stay in it): every deep check reads the JARs' bytes.
	NoDeepCache bool
	// Progress receives updates while layers are read; it is called from
	// several goroutines, never at once.
	Progress func(Update)
	// TempDir is where large JARs are spooled while read; "": os.TempDir.
	TempDir string
	// Workers is the number of layers read at once; 0: 2.
	Workers int
	// Budget bounds the bytes written below TempDir at once: each large
	// JAR spooled while its layer is read and each copy the deep check
	// keeps is reserved before it is written, waiting while it does not
	// fit, and released when the file is removed. nil: unbounded.
	Budget *spool.Budget

	// Deep runs the deep check as well (shadowing, linkage-*,
	// bytecode-version): the JARs of lib and usrlib the merged image ends
	// with are copied out of their layers into a private temporary
	// directory below TempDir (as the layers are read; the layers whose
	// facts came from Cache are read again for them), removed before
	// Verify or Bake returns, and their classes judged by the same code
	// and rules as `streamfusion check` on a directory. An image whose config sets STREAMFUSION_LINKAGE=true
	// is checked deep whatever Deep says, as its entrypoint would be at
	// start. Images beyond the deep check's bounds fail with ErrDeepLimit.
	Deep bool
	// JobJARs are JARs of this machine placed into the image's usrlib for
	// the check, as a session job's JAR is loaded (child-first over lib);
	// they imply Deep. Every rule judges them as files of usrlib, so the
	// verdict is about the image with these JARs, not about the image:
	// two checks of one image digest with different job JARs can differ,
	// and a cache of verdicts must key them by the JARs' contents too.
	JobJARs []JobJAR
}

// run is one verification's or bake's state beside its options, which it
// never writes: the copies of JARs the deep check keeps (nil when the
// check is not deep).
type run struct {
	VerifyOptions
	keep *jarCopies
}

// countingReader reports the bytes read through it, at most every MiB.
type countingReader struct {
	r     io.Reader
	n     int64
	last  int64
	every func(int64)
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	if c.every != nil && c.n-c.last >= 1<<20 {
		c.last = c.n
		c.every(c.n)
	}
	return n, err
}

func cacheKey(diffID string, sel *selection) string {
	return fmt.Sprintf("layerfacts/v%d/%s/%s", factsVersion, diffID, sel.key())
}

// readFacts returns the facts of every layer of img, from the cache or by
// reading the layer once, front to back. The layers are listed only when
// one must be read: listing a saved tarball's hashes every layer blob for
// the manifest's digests, which a layer the cache answers does not need.
func (o *run) readFacts(ctx context.Context, img v1.Image, sel *selection) ([]*layerFacts, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	diffIDs := cfg.RootFS.DiffIDs
	out := make([]*layerFacts, len(diffIDs))
	errs := make([]error, len(diffIDs))
	var mu sync.Mutex // one Progress call at a time
	report := func(u Update) {
		if o.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		o.Progress(u)
	}
	var missing []int
	for i, id := range diffIDs {
		if out[i] = o.cached(i, len(diffIDs), id.String(), sel, report); out[i] == nil {
			missing = append(missing, i)
		}
	}
	if len(missing) == 0 {
		return out, ctx.Err()
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list layers: %w", err)
	}
	if len(diffIDs) != len(layers) {
		return nil, fmt.Errorf("%w: the config lists %d layers, the manifest %d", ErrLayer, len(diffIDs), len(layers))
	}
	workers := o.Workers
	if workers <= 0 {
		workers = 2
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(missing)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &scanner{ctx: ctx, sel: sel, tempDir: o.TempDir, keep: o.keep, budget: o.Budget}
			defer s.close()
			for i := range next {
				out[i], errs[i] = o.layer(s, i, layers, diffIDs[i].String(), report)
			}
		}()
	}
	for _, i := range missing {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	for _, err := range errs { // they name the layer
		if err != nil {
			return nil, err
		}
	}
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return out, nil
}

// cached returns the facts of layer i (of n) from the cache, nil when
// the cache has none it can use.
func (o VerifyOptions) cached(i, n int, diffID string, sel *selection, report func(Update)) *layerFacts {
	data, ok := o.Cache.Get(cacheKey(diffID, sel))
	if !ok {
		return nil
	}
	var lf layerFacts
	if json.Unmarshal(data, &lf) != nil || lf.Version != factsVersion || lf.DiffID != diffID {
		return nil
	}
	report(Update{Op: "read", Layer: i + 1, Layers: n, Digest: diffID, Cached: true, Finished: true})
	return &lf
}

func (o VerifyOptions) layer(s *scanner, i int, layers []v1.Layer, diffID string, report func(Update)) (*layerFacts, error) {
	u := Update{Op: "read", Layer: i + 1, Layers: len(layers), Digest: diffID}
	key := cacheKey(diffID, s.sel)
	l := layers[i]
	name := diffID
	if d, err := l.Digest(); err == nil {
		name, u.Digest = d.String(), d.String()
	}
	if size, err := l.Size(); err == nil {
		u.Total = size
	}
	report(u)
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("layer %d of %d (%s): %w", i+1, len(layers), name, err)
	}
	defer rc.Close()
	cr := &countingReader{r: rc, every: func(n int64) { v := u; v.Done = n; report(v) }}
	s.layer = i
	lf, err := s.scan(cr, diffID)
	if err != nil {
		return nil, fmt.Errorf("layer %d of %d (%s): %w", i+1, len(layers), name, err)
	}
	u.Done, u.Finished = cr.n, true
	report(u)
	if o.Cache != nil {
		if data, err := json.Marshal(lf); err == nil {
			_ = o.Cache.Put(key, data) // a cache that cannot be written only costs time
		}
	}
	return lf, nil
}
