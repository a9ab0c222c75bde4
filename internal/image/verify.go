package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/image/deep"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// Result is the verdict on one image.
type Result struct {
	Platform v1.Platform
	Facts    *admission.Facts
	Decision *admission.Decision
	// Verdict is the bytes of the deep verdict a bake wrote, 0 for none.
	Verdict int

	own int // how many of Decision.Findings are the caller's own rules' (first)
}

// ErrConfig marks an image whose StreamFusion settings are unusable.
var ErrConfig = errors.New("image settings")

// Verify decides on an image as the entrypoint would when a container of it
// starts: the settings come from the image's Env, the platform from its
// config, the files from its layers, each read once with the default
// options (no cache, no progress).
func Verify(ctx context.Context, img v1.Image) (*Result, error) {
	return VerifyOptions{}.Verify(ctx, img)
}

// Verify is Verify with these options.
func (o VerifyOptions) Verify(ctx context.Context, img v1.Image) (*Result, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	c, err := settings.FromEnv(cfg.Config.Env)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sel := flatten.NewSelection(c, cfg.Architecture)
	r := &run{VerifyOptions: o}
	var dc *deepCache
	if o.deepWanted(c) {
		dc = o.deepCacheFor(cfg)
		if findings, ok := dc.get(); ok {
			// The deep result of these layers is known: their facts
			// only, no copy of any JAR kept, no layer read again.
			_, v, err := flatten.Read(ctx, img, sel, r.flat())
			if err != nil {
				return nil, err
			}
			return decideCached(ctx, cfg, c, v, findings)
		}
		if r.keep, err = deep.NewCopies(o.TempDir, o.Budget); err != nil {
			return nil, err
		}
		defer r.keep.Remove()
	}
	facts, v, err := flatten.Read(ctx, img, sel, r.flat())
	if err != nil {
		return nil, err
	}
	d, err := r.deep(ctx, img, facts, v, c)
	if err != nil {
		return nil, err
	}
	res, err := decide(ctx, cfg, c, v, d)
	if err != nil {
		return nil, err
	}
	if d != nil {
		dc.put(ctx, cfg, c, v, res)
	}
	return res, nil
}

// deepWanted says whether the check of an image with settings c is deep.
func (o VerifyOptions) deepWanted(c settings.Config) bool {
	return o.Deep || len(o.JobJARs) > 0 || c.Linkage
}

// deep returns the merged view with the bytes the deep check reads, or
// nil when the check is not deep (no copies were made).
func (o *run) deep(ctx context.Context, img v1.Image, facts []*flatten.Facts, v *flatten.View, c settings.Config) (*deep.FS, error) {
	if o.keep == nil {
		return nil, nil
	}
	return o.keep.Read(ctx, img, facts, v, c, o.JobJARs, o.Progress)
}

// decide runs the entrypoint's own check on a merged view, with the
// image guard as the image's own rule; with d, the deep check too, on
// the JARs' bytes d holds.
func decide(ctx context.Context, cfg *v1.ConfigFile, c settings.Config, v *flatten.View, d *deep.FS, more ...admit.Rule) (*Result, error) {
	s := c.HostSettings(cfg.OS, cfg.Architecture)
	s.ReadJAR = v.ReadJAR
	s.ReadLibVersions = v.ReadLibVersions
	s.Native = true // the native-* rules, always: the ELF facts came with the layers
	s.Deep = d != nil
	s.Baked = false // the facts hold no bytes to fingerprint: the image's deep check is d's
	var root fs.FS = v.FS
	if d != nil {
		root = d
	}
	guard := func(*admission.Facts, *admission.Decision) []admission.Finding { return Guard(v.FS, cfg, c) }
	own := 0 // the rules' findings, which admit.Check puts first (written before Check returns a verdict)
	rules := []admit.Rule{}
	for _, r := range append([]admit.Rule{guard}, more...) {
		rules = append(rules, func(f *admission.Facts, d *admission.Decision) []admission.Finding {
			out := r(f, d)
			own += len(out)
			return out
		})
	}
	verdict, err := admit.Check(ctx, admit.Request{Root: root, Settings: s, Rules: rules})
	if err != nil {
		return nil, err
	}
	return &Result{
		Platform: v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant},
		Facts:    verdict.Facts, Decision: verdict.Decision, own: own,
	}, nil
}
