package verdict

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

// Verdict is what one image would do at start.
type Verdict struct {
	Ref      string              `json:"image"`
	Digest   string              `json:"digest"` // of the platform's image
	Platform string              `json:"platform"`
	Admitted bool                `json:"admitted"`
	Facts    deploy.ImageFacts   `json:"facts"`
	Report   *report.Report      `json:"report,omitempty"`
	Decision *admission.Decision `json:"-"`
	// Problem is an image the rules cannot even be run on (unusable
	// StreamFusion settings, an unsafe layer): refused, with this reason.
	Problem string `json:"problem,omitempty"`
}

// Message is the refusal as the entrypoint would write it to the
// termination message for role; empty when admitted.
func (v *Verdict) Message(role string) string {
	switch {
	case v.Admitted:
		return ""
	case v.Problem != "":
		return report.Clip(fmt.Sprintf("StreamFusion refused to start %s: %s", role, v.Problem), report.MaxTermination)
	}
	return report.Summary(role, v.Decision)
}

// Options configure a Cache.
type Options struct {
	Remote   []remote.Option // transport, user agent...; credentials come per call
	Platform v1.Platform     // for an index when the caller names none; default linux/amd64
	Local    bool            // accept 'docker save' tarballs and OCI layouts (the CLI)
	// MaxEntries bounds the verdicts kept (default 4096), oldest out first.
	MaxEntries int
	// VerifyTimeout bounds one detached verification (default 2 minutes).
	VerifyTimeout time.Duration
	// Read is how an image's layers are read: with the layer-facts cache,
	// an image whose base layers were seen before reads only its new ones.
	Read image.VerifyOptions
}

// Stats count what the cache did.
type Stats struct {
	Hits, Verified, Resolved atomic.Int64
}

// Cache verifies images and keeps verdicts by digest.
type Cache struct {
	opts  Options
	group singleflight.Group
	Stats Stats

	pullers sync.Map // Credentials.Key -> *remote.Puller

	mu      sync.RWMutex
	entries map[string]*Verdict
	order   []string
}

// New returns an empty cache.
func New(o Options) *Cache {
	if o.Platform.OS == "" {
		o.Platform = v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 4096
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = 2 * time.Minute
	}
	return &Cache{opts: o, entries: map[string]*Verdict{}}
}

// ErrResolve wraps a failure to reach or read the image: not a verdict.
var ErrResolve = errors.New("cannot read the image")

// Credentials are a keychain and a key naming it: registry connections
// (and their tokens) are kept per key, so calls with the same key share
// them. The zero value is the Docker config.
type Credentials struct {
	Key      string
	Keychain authn.Keychain
}

// puller returns the registry client kept for the credentials.
func (c *Cache) puller(cr Credentials) (*remote.Puller, error) {
	if p, ok := c.pullers.Load(cr.Key); ok {
		return p.(*remote.Puller), nil
	}
	kc := cr.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	p, err := remote.NewPuller(append([]remote.Option{remote.WithAuthFromKeychain(kc)}, c.opts.Remote...)...)
	if err != nil {
		return nil, err
	}
	actual, _ := c.pullers.LoadOrStore(cr.Key, p)
	return actual.(*remote.Puller), nil
}

// Verify returns the verdict on ref for platform ("" for the default),
// with the given credentials.
func (c *Cache) Verify(ctx context.Context, ref, platform string, cr Credentials) (*Verdict, error) {
	want := c.opts.Platform
	if platform != "" {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", platform, err)
		}
		want = *p
	}
	if c.opts.Local {
		if _, err := os.Stat(ref); err == nil {
			return c.local(ctx, ref, want)
		}
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrResolve, ref, err)
	}
	p, err := c.puller(cr)
	if err != nil {
		return nil, err
	}
	plat := want.String()
	var top string
	if d, ok := r.(name.Digest); ok {
		top = d.DigestStr()
	} else {
		desc, err := p.Head(ctx, r)
		c.Stats.Resolved.Add(1)
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
		}
		top = desc.Digest.String()
		// Fetch what HEAD named, so a tag moved meanwhile cannot mix verdicts.
		r = r.Context().Digest(top)
	}
	if v := c.lookup(top, plat); v != nil {
		return c.hit(v, ref), nil
	}
	// One verification per image, detached from this caller's deadline.
	ch := c.group.DoChan(top+"|"+plat, func() (any, error) {
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.VerifyTimeout)
		defer cancel()
		return c.fetchAndVerify(vctx, r, want, p)
	})
	select {
	case res := <-ch:
		if res.Err != nil {
			return nil, res.Err
		}
		return c.hit(res.Val.(*Verdict), ref), nil
	case <-ctx.Done():
		return nil, fmt.Errorf("verify %s: %w", ref, context.Cause(ctx))
	}
}

// hit returns a copy of a cached verdict under the name it was asked by.
func (c *Cache) hit(v *Verdict, ref string) *Verdict {
	c.Stats.Hits.Add(1)
	cp := *v
	cp.Ref = ref
	return &cp
}

func (c *Cache) fetchAndVerify(ctx context.Context, r name.Reference, want v1.Platform, p *remote.Puller) (*Verdict, error) {
	desc, err := p.Get(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
	}
	top := desc.Digest.String()
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
		}
		img, err = pick(idx, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
	} else if img, err = desc.Image(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
	}
	v, err := c.verify(ctx, r.String(), img, want)
	if err != nil {
		return nil, err
	}
	c.store(v, top, want.String())
	return v, nil
}

// pick returns the index's image for the platform.
func pick(idx v1.ImageIndex, want v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResolve, err)
	}
	for _, d := range m.Manifests {
		if d.Platform == nil || !(d.MediaType == types.OCIManifestSchema1 || d.MediaType == types.DockerManifestSchema2) {
			continue
		}
		if d.Platform.OS == want.OS && d.Platform.Architecture == want.Architecture && (want.Variant == "" || d.Platform.Variant == want.Variant) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%w: the index holds no %s image", ErrNoPlatform, want.String())
}

// ErrNoPlatform is an index without the platform the pod will run on.
var ErrNoPlatform = errors.New("no image for the platform")

func (c *Cache) local(ctx context.Context, ref string, want v1.Platform) (*Verdict, error) {
	src, err := image.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	imgs, err := src.Images(&want)
	if err != nil {
		return nil, err
	}
	d, err := imgs[0].Image.Digest()
	if err != nil {
		return nil, err
	}
	if v := c.lookup(d.String(), want.String()); v != nil {
		return c.hit(v, ref), nil
	}
	v, err := c.verify(ctx, ref, imgs[0].Image, want)
	if err != nil {
		return nil, err
	}
	c.store(v, d.String(), want.String())
	return v, nil
}

// verify runs the entrypoint's rules on one image. Images the rules cannot
// run on for reasons of their own content are verdicts; anything else is
// an error.
func (c *Cache) verify(ctx context.Context, ref string, img v1.Image, want v1.Platform) (*Verdict, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	c.Stats.Verified.Add(1)
	res, err := c.opts.Read.Verify(ctx, img)
	v := &Verdict{Ref: ref, Digest: d.String(), Platform: want.String()}
	switch {
	case errors.Is(err, image.ErrConfig), errors.Is(err, image.ErrLayer):
		v.Problem = err.Error()
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	rep := report.New(res.Facts, res.Decision)
	v.Platform = res.Platform.String()
	v.Admitted, v.Decision, v.Report, v.Facts = res.Decision.Admitted(), res.Decision, &rep, deploy.FactsOf(res.Decision)
	return v, nil
}

func (c *Cache) lookup(digest, platform string) *Verdict {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.entries[digest]; ok {
		return v
	}
	return c.entries[digest+"|"+platform]
}

// store keeps v under its image digest and under the digest the reference
// resolved to (an index's, with the platform).
func (c *Cache) store(v *Verdict, top, platform string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := []string{v.Digest}
	if top != v.Digest {
		keys = append(keys, top+"|"+platform)
	}
	for _, k := range keys {
		if _, ok := c.entries[k]; !ok {
			c.order = append(c.order, k)
		}
		c.entries[k] = v
	}
	for len(c.order) > c.opts.MaxEntries {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
	}
}

// Len is the number of verdicts kept.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
