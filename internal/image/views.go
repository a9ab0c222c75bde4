package image

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/image/deep"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// Views keeps, for a few image digests, what the deep check reads of an
// image that does not depend on the job JARs: the merged view of its
// layers' facts and the copies of its lib and usrlib JARs on disk. A deep
// check with job JARs on a kept image reads no layer: the JARs are placed
// into a copy of the view and the check runs as VerifyOptions.Verify's
// would, with the same findings. The class indexes the check builds from
// the kept JARs are not kept: each check builds them again.
//
// Views holds at most Max images and MaxBytes of copies, least recently
// used out first; an image out of the bounds (or one whose copies alone
// pass MaxBytes) has its directory removed as soon as no check reads it.
// Close removes every directory, at once or when the checks reading them
// end. A Views is safe for concurrent use; concurrent checks of one image
// share one reading.
type Views struct {
	max      int
	maxBytes int64

	mu      sync.Mutex
	entries map[string]*kept // by image digest
	lru     []string         // digests, least recently used first
	bytes   int64            // of the ready entries in entries
	closed  bool
}

// Defaults of NewViews: two Flink 2.2 images' lib (about 270 MB each) and
// room for one more image's reading in a 2 GiB temporary directory.
const (
	DefaultViews     = 2
	DefaultViewBytes = 1 << 30
)

// NewViews returns an empty Views keeping at most images images (<= 0:
// DefaultViews) and maxBytes of JAR copies (<= 0: DefaultViewBytes).
func NewViews(images int, maxBytes int64) *Views {
	if images <= 0 {
		images = DefaultViews
	}
	if maxBytes <= 0 {
		maxBytes = DefaultViewBytes
	}
	return &Views{max: images, maxBytes: maxBytes, entries: map[string]*kept{}}
}

// kept is one image read for the deep check without job JARs. Its fields
// past ready are set once, before ready is closed.
type kept struct {
	ready chan struct{}
	refs  int  // checks holding it (under Views.mu)
	gone  bool // out of Views.entries: removed when refs drops to 0
	count bool // its bytes are in Views.bytes

	err   error
	cfg   *v1.ConfigFile
	c     settings.Config
	v     *flatten.View
	d     *deep.FS
	keep  *deep.Copies
	bytes int64
}

// Verify is o.Verify(ctx, img) for a deep check (o.Deep or o.JobJARs set),
// reading the image's layers only when its view is not kept. Anything else
// is o.Verify itself.
func (vs *Views) Verify(ctx context.Context, o VerifyOptions, img v1.Image) (*Result, error) {
	if !o.Deep && len(o.JobJARs) == 0 {
		return o.Verify(ctx, img)
	}
	dg, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("image digest: %w", err)
	}
	k, err := vs.acquire(ctx, o, img, dg.String())
	if errors.Is(err, deep.ErrLimit) {
		// The image alone is past a bound; with a job JAR replacing one
		// of its JARs it may not be: the check without reuse decides.
		return o.Verify(ctx, img)
	}
	if err != nil {
		return nil, err
	}
	defer vs.release(k)
	return k.verify(ctx, o)
}

// acquire returns the kept image of digest, reading it when none is,
// held until release.
func (vs *Views) acquire(ctx context.Context, o VerifyOptions, img v1.Image, digest string) (*kept, error) {
	vs.mu.Lock()
	if k := vs.entries[digest]; k != nil {
		k.refs++
		vs.touch(digest)
		vs.mu.Unlock()
		select {
		case <-k.ready:
		case <-ctx.Done():
			vs.release(k)
			return nil, fmt.Errorf("wait for the reading of %s: %w", digest, ctx.Err())
		}
		if k.err != nil {
			vs.release(k)
			return nil, k.err
		}
		return k, nil
	}
	k := &kept{ready: make(chan struct{}), refs: 1, gone: vs.closed}
	if !vs.closed {
		vs.entries[digest] = k
		vs.lru = append(vs.lru, digest)
	}
	vs.mu.Unlock()

	own := o // the image's own reading, for every job JAR: none of o's
	own.JobJARs, own.Deep = nil, true
	err := (&run{VerifyOptions: own}).prepare(ctx, img, k)

	vs.mu.Lock()
	if err != nil {
		k.err = err
		if vs.entries[digest] == k {
			vs.drop(digest)
		}
	} else if !k.gone {
		vs.bytes += k.bytes
		k.count = true
		vs.evict()
	}
	close(k.ready)
	vs.mu.Unlock()
	if err != nil {
		vs.release(k)
		return nil, err
	}
	return k, nil
}

// release ends a check's hold on k, removing its directory if k is out
// of the Views and no other check holds it.
func (vs *Views) release(k *kept) {
	vs.mu.Lock()
	k.refs--
	remove := k.gone && k.refs == 0
	vs.mu.Unlock()
	if remove {
		k.keep.Remove()
	}
}

// touch makes digest the most recently used (under mu).
func (vs *Views) touch(digest string) {
	if i := slices.Index(vs.lru, digest); i >= 0 {
		vs.lru = append(slices.Delete(vs.lru, i, i+1), digest)
	}
}

// drop takes digest out of the entries (under mu); its directory goes
// when no check holds it.
func (vs *Views) drop(digest string) {
	k := vs.entries[digest]
	delete(vs.entries, digest)
	vs.lru = slices.DeleteFunc(vs.lru, func(d string) bool { return d == digest })
	k.gone = true
	if k.count {
		vs.bytes -= k.bytes
		k.count = false
	}
	if k.refs == 0 {
		k.keep.Remove()
	}
}

// evict drops the least recently used images until the bounds hold
// (under mu).
func (vs *Views) evict() {
	for len(vs.lru) > 0 && (len(vs.lru) > vs.max || vs.bytes > vs.maxBytes) {
		vs.drop(vs.lru[0])
	}
}

// Close removes every kept image's directory (those checks still read
// when they end); later checks keep nothing.
func (vs *Views) Close() {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	vs.closed = true
	for len(vs.lru) > 0 {
		vs.drop(vs.lru[0])
	}
}

// Max is the most images the Views keeps.
func (vs *Views) Max() int { return vs.max }

// MaxBytes is the most bytes of JAR copies the Views keeps.
func (vs *Views) MaxBytes() int64 { return vs.maxBytes }

// Len is the number of images kept and the bytes of their copies.
func (vs *Views) Len() (int, int64) {
	vs.mu.Lock()
	defer vs.mu.Unlock()
	return len(vs.entries), vs.bytes
}

// prepare reads img for the deep check into k (o's options say deep,
// without job JARs): what Verify reads before it places them.
func (o *run) prepare(ctx context.Context, img v1.Image, k *kept) error {
	cfg, err := img.ConfigFile()
	if err != nil {
		return fmt.Errorf("read image config: %w", err)
	}
	c, err := settings.FromEnv(cfg.Config.Env)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if o.keep, err = deep.NewCopies(o.TempDir, o.Budget); err != nil {
		return err
	}
	k.keep = o.keep
	facts, v, err := flatten.Read(ctx, img, flatten.NewSelection(c, cfg.Architecture), o.flat())
	if err == nil {
		k.d, err = o.deep(ctx, img, facts, v, c)
	}
	if err != nil {
		return err // the directory goes with k's release
	}
	k.cfg, k.c, k.v = cfg, c, v
	k.bytes = k.d.Bytes()
	return nil
}

// verify runs the deep check of the kept image with o's job JARs on a
// copy of its view, as Verify would on a fresh reading (deep.FS.With).
func (k *kept) verify(ctx context.Context, o VerifyOptions) (*Result, error) {
	d, v, err := k.d.With(k.v, k.c, o.JobJARs)
	if err != nil {
		return nil, err
	}
	return decide(ctx, k.cfg, k.c, v, d)
}
