package verdict

import (
	"context"
	"fmt"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Image returns the image ref names for platform ("" for the default),
// read with the credentials given: the platform's image of an index. Its
// layers are read lazily, as a verification would read them.
func (c *Cache) Image(ctx context.Context, ref, platform string, cr Credentials) (v1.Image, error) {
	want := c.opts.Platform
	if platform != "" {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, fmt.Errorf("platform %q: %w", platform, err)
		}
		want = *p
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrResolve, ref, err)
	}
	p, err := c.puller(cr)
	if err != nil {
		return nil, err
	}
	desc, err := p.Get(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
		}
		return pick(idx, want)
	}
	img, err := desc.Image()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	return img, nil
}

// Register makes ref name img for Verify and VerifyJob: an image made in
// memory (the audit's what-if images: a lib changed on top of a registry
// image) is judged by the same calls as a registry's, and its verdict is
// kept by its digest. ref must not parse as a registry reference's
// registry of anyone (the audit uses the reserved .invalid domain).
func (c *Cache) Register(ref string, img v1.Image) {
	c.synthetic.Store(ref, img)
}

// syntheticVerdict verifies a registered image, once per digest.
func (c *Cache) syntheticVerdict(ctx context.Context, ref string, img v1.Image, want v1.Platform, jar *JobJAR) (*Verdict, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	sfx := jobKey(jar)
	if v := c.kept(d.String(), want.String(), sfx); v != nil {
		return c.hit(v, ref), nil
	}
	if needsJAR(jar) {
		return nil, ErrNeedJAR
	}
	res, err, _ := c.group.Do(d.String()+"|"+want.String()+sfx, func() (any, error) {
		if v := c.lookup(d.String(), want.String(), sfx); v != nil {
			return v, nil
		}
		v, err := c.verify(ctx, ref, img, want, jar)
		if err != nil {
			return nil, err
		}
		c.store(v, d.String(), want.String(), sfx)
		return v, nil
	})
	if err != nil {
		return nil, err
	}
	return c.hit(res.(*Verdict), ref), nil
}
