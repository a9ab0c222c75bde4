package flatten

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

// Options say how Read reads an image's layers. Read never writes them.
type Options struct {
	// Cache holds layer facts across runs; nil: every layer is read.
	Cache *layercache.Cache
	// Progress receives updates while layers are read; it is called from
	// several goroutines, never at once.
	Progress func(Update)
	// TempDir is where large JARs are spooled while read; "": os.TempDir.
	TempDir string
	// Workers is the number of layers read at once; 0: 2.
	Workers int
	// Budget bounds the bytes of the large JARs spooled below TempDir at
	// once; nil: unbounded.
	Budget *spool.Budget
	// Keep, when set, is given every JAR a layer's reading reads (not
	// those of layers the cache answers), as it streams by.
	Keep Keeper
}

// Keeper is given the JARs a reading reads: the deep check keeps copies
// of them, so that it reads again only the layers the cache answered.
// name is the JAR's path in its layer, without the leading slash; ra
// holds its size bytes until Keep returns.
type Keeper interface {
	Keep(ctx context.Context, layer int, name string, ra io.ReaderAt, size int64) error
}

// CountingReader reports the bytes read through it, at most every MiB.
type CountingReader struct {
	R     io.Reader
	N     int64
	last  int64
	Every func(int64)
}

func (c *CountingReader) Read(p []byte) (int, error) {
	n, err := c.R.Read(p)
	c.N += int64(n)
	if c.Every != nil && c.N-c.last >= 1<<20 {
		c.last = c.N
		c.Every(c.N)
	}
	return n, err
}

// CtxReader stops reading once Ctx is done.
type CtxReader struct {
	Ctx context.Context
	R   io.Reader
}

func (c *CtxReader) Read(p []byte) (int, error) {
	if err := c.Ctx.Err(); err != nil {
		return 0, err
	}
	return c.R.Read(p)
}

// layers gives the facts of an image's layers one at a time: read from the
// image's blobs (blobs), or from a cache wrapped around them (cached), as
// go-containerregistry's cache package wraps an image's layers. A reading
// asks for each layer once; it does not know which of the two answers.
type layers interface {
	facts(s *scanner, i int) (*Facts, error)
}

// blobs reads layers from the image. It lists them at the first layer it
// reads: listing a saved tarball's hashes every layer blob for the
// manifest's digests, which layers the cache answers do not need.
type blobs struct {
	diffIDs []v1.Hash
	list    func() ([]v1.Layer, error)
	report  func(Update)
}

func newBlobs(img v1.Image, diffIDs []v1.Hash, report func(Update)) *blobs {
	return &blobs{diffIDs: diffIDs, report: report, list: sync.OnceValues(func() ([]v1.Layer, error) {
		ls, err := img.Layers()
		if err != nil {
			return nil, fmt.Errorf("list layers: %w", err)
		}
		if len(ls) != len(diffIDs) {
			return nil, fmt.Errorf("%w: the config lists %d layers, the manifest %d", ErrLayer, len(diffIDs), len(ls))
		}
		return ls, nil
	})}
}

func (b *blobs) facts(s *scanner, i int) (*Facts, error) {
	ls, err := b.list()
	if err != nil {
		return nil, err
	}
	diffID := b.diffIDs[i].String()
	u := Update{Op: "read", Layer: i + 1, Layers: len(ls), Digest: diffID}
	l := ls[i]
	name := diffID
	if d, err := l.Digest(); err == nil {
		name, u.Digest = d.String(), d.String()
	}
	if size, err := l.Size(); err == nil {
		u.Total = size
	}
	b.report(u)
	rc, err := l.Compressed()
	if err != nil {
		return nil, fmt.Errorf("layer %d of %d (%s): %w", i+1, len(ls), name, err)
	}
	defer rc.Close()
	cr := &CountingReader{R: rc, Every: func(n int64) { v := u; v.Done = n; b.report(v) }}
	s.layer = i
	lf, err := s.scan(cr, diffID)
	if err != nil {
		return nil, fmt.Errorf("layer %d of %d (%s): %w", i+1, len(ls), name, err)
	}
	u.Done, u.Finished = cr.N, true
	b.report(u)
	return lf, nil
}

// cached answers a layer's facts from the cache, and stores those of a
// layer it had to read (whose bytes matched its diff ID: scan checks it).
type cached struct {
	inner   layers
	cache   *layercache.Cache
	diffIDs []v1.Hash
	report  func(Update)
}

func cacheKey(diffID string, sel *Selection) string {
	return fmt.Sprintf("layerfacts/v%d/%s/%s", Version, diffID, sel.key())
}

func (c *cached) facts(s *scanner, i int) (*Facts, error) {
	diffID := c.diffIDs[i].String()
	key := cacheKey(diffID, s.sel)
	if data, ok := c.cache.Get(key); ok {
		var lf Facts
		if json.Unmarshal(data, &lf) == nil && lf.Version == Version && lf.DiffID == diffID {
			c.report(Update{Op: "read", Layer: i + 1, Layers: len(c.diffIDs), Digest: diffID, Cached: true, Finished: true})
			return &lf, nil
		}
	}
	lf, err := c.inner.facts(s, i)
	if err != nil {
		return nil, err
	}
	if data, err := json.Marshal(lf); err == nil {
		_ = c.cache.Put(key, data) // a cache that cannot be written only costs time
	}
	return lf, nil
}

// readFacts returns the facts of every layer of img, each layer asked of
// ls once, by up to o.Workers goroutines.
func (o Options) readFacts(ctx context.Context, ls layers, n int, sel *Selection) ([]*Facts, error) {
	out := make([]*Facts, n)
	errs := make([]error, n)
	workers := o.Workers
	if workers <= 0 {
		workers = 2
	}
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, n) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s := &scanner{ctx: ctx, sel: sel, tempDir: o.TempDir, keep: o.Keep, budget: o.Budget}
			defer s.close()
			for i := range next {
				out[i], errs[i] = ls.facts(s, i)
			}
		}()
	}
	for i := range n {
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

// layersOf is the layers of img as o reads them: its blobs, behind the
// cache when o has one.
func (o Options) layersOf(img v1.Image, diffIDs []v1.Hash) layers {
	var mu sync.Mutex // one Progress call at a time
	report := func(u Update) {
		if o.Progress == nil {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		o.Progress(u)
	}
	var ls layers = newBlobs(img, diffIDs, report)
	if o.Cache != nil {
		ls = &cached{inner: ls, cache: o.Cache, diffIDs: diffIDs, report: report}
	}
	return ls
}

// ScanLayer reads the facts of one layer's uncompressed or compressed tar
// (one not in an image yet: bake's new layer), as the layer at index
// layer of its image, handing its JARs to o.Keep. Its diff ID is not
// checked.
func ScanLayer(ctx context.Context, r io.Reader, layer int, sel *Selection, o Options) (*Facts, error) {
	s := &scanner{ctx: ctx, sel: sel, tempDir: o.TempDir, keep: o.Keep, layer: layer, budget: o.Budget}
	defer s.close()
	return s.scan(r, "")
}
