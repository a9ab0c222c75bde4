package image

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// Source is an image or an index, as a reference names it.
type Source struct {
	Ref   string
	Image v1.Image      // set for a single image
	Index v1.ImageIndex // set for an index
	Name  name.Reference

	cleanup func()
}

// Open resolves ref: an OCI image layout directory, a `docker save` style
// tarball, an image of the local container engine (docker-daemon:REF), or
// a registry reference (credentials from the default keychain). Close the
// source when done.
func Open(ctx context.Context, ref string, opts ...remote.Option) (*Source, error) {
	if r, ok := strings.CutPrefix(ref, DaemonPrefix); ok {
		return fromDaemon(ctx, r, "")
	}
	if info, err := os.Stat(ref); err == nil {
		if info.IsDir() {
			p, err := layout.FromPath(ref)
			if err != nil {
				return nil, fmt.Errorf("open OCI layout %s: %w", ref, err)
			}
			idx, err := p.ImageIndex()
			if err != nil {
				return nil, fmt.Errorf("open OCI layout %s: %w", ref, err)
			}
			return fromLayoutIndex(ref, idx)
		}
		img, err := openTarball(ref)
		if err != nil {
			return nil, fmt.Errorf("open image tarball %s: %w", ref, err)
		}
		return &Source{Ref: ref, Image: img}, nil
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, fmt.Errorf("%q is neither a file, a directory nor an image reference: %w", ref, err)
	}
	opts = append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, opts...)
	desc, err := remote.Get(r, opts...)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", ref, err)
	}
	s := &Source{Ref: ref, Name: r}
	if desc.MediaType.IsIndex() {
		s.Index, err = desc.ImageIndex()
	} else {
		s.Image, err = desc.Image()
	}
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", ref, err)
	}
	return s, nil
}

// fromLayoutIndex unwraps the layout's top index: one image, or one nested
// index, is what was written there.
func fromLayoutIndex(ref string, idx v1.ImageIndex) (*Source, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, err
	}
	if len(m.Manifests) == 1 {
		d := m.Manifests[0]
		if d.MediaType.IsIndex() {
			inner, err := idx.ImageIndex(d.Digest)
			if err != nil {
				return nil, err
			}
			return &Source{Ref: ref, Index: inner}, nil
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		return &Source{Ref: ref, Image: img}, nil
	}
	return &Source{Ref: ref, Index: idx}, nil
}

// Platformed is one image of a source, with its platform.
type Platformed struct {
	Platform v1.Platform
	Image    v1.Image
}

// Images returns the images of the source, those of the index filtered by
// want (nil: all), attestation manifests left out.
func (s *Source) Images(want *v1.Platform) ([]Platformed, error) {
	if s.Image != nil {
		cfg, err := s.Image.ConfigFile()
		if err != nil {
			return nil, fmt.Errorf("read image config: %w", err)
		}
		p := v1.Platform{OS: cfg.OS, Architecture: cfg.Architecture, Variant: cfg.Variant}
		if want != nil && !matches(p, *want) {
			return nil, fmt.Errorf("%s is %s, not %s", s.Ref, p.String(), want.String())
		}
		return []Platformed{{p, s.Image}}, nil
	}
	m, err := s.Index.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("read index: %w", err)
	}
	var out []Platformed
	for _, d := range m.Manifests {
		if d.Platform == nil || d.Platform.OS == "unknown" || !(d.MediaType == types.OCIManifestSchema1 || d.MediaType == types.DockerManifestSchema2) {
			continue
		}
		if want != nil && !matches(*d.Platform, *want) {
			continue
		}
		img, err := s.Index.Image(d.Digest)
		if err != nil {
			return nil, fmt.Errorf("read %s image: %w", d.Platform.String(), err)
		}
		out = append(out, Platformed{*d.Platform, img})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("%s holds no image for %v", s.Ref, want)
	}
	return out, nil
}

func matches(have, want v1.Platform) bool {
	return have.OS == want.OS && have.Architecture == want.Architecture && (want.Variant == "" || have.Variant == want.Variant)
}

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
	sel := newSelection(c, cfg.Architecture)
	r := &run{VerifyOptions: o}
	var dc *deepCache
	if o.deepWanted(c) {
		dc = o.deepCacheFor(cfg)
		if findings, ok := dc.get(); ok {
			// The deep result of these layers is known: their facts
			// only, no copy of any JAR kept, no layer read again.
			_, v, err := r.readAll(ctx, img, sel)
			if err != nil {
				return nil, err
			}
			return decideCached(ctx, cfg, c, v, findings)
		}
		if r.keep, err = newJARCopies(o.TempDir, o.Budget); err != nil {
			return nil, err
		}
		defer r.keep.remove()
	}
	facts, v, err := r.readAll(ctx, img, sel)
	if err != nil {
		return nil, err
	}
	d, err := r.deep(ctx, img, cfg, facts, v, c.LibDir, c.PluginsDir)
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
// nil when the check is not deep (no jarCopies were made).
func (o *run) deep(ctx context.Context, img v1.Image, cfg *v1.ConfigFile, facts []*layerFacts, v *view, libDir, pluginsDir string) (*deepFS, error) {
	if o.keep == nil {
		return nil, nil
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list layers: %w", err)
	}
	if len(layers) != len(facts) || len(cfg.RootFS.DiffIDs) != len(layers) {
		return nil, fmt.Errorf("%w: %d layers, %d diff IDs, %d read", ErrLayer, len(layers), len(cfg.RootFS.DiffIDs), len(facts))
	}
	diffIDs := make([]string, len(layers))
	for i, id := range cfg.RootFS.DiffIDs {
		diffIDs[i] = id.String()
	}
	return o.readDeep(ctx, layers, diffIDs, facts, v, libDir, pluginsDir)
}

// decide runs the entrypoint's own check on a merged view, with the
// image guard as the image's own rule; with d, the deep check too, on
// the JARs' bytes d holds.
func decide(ctx context.Context, cfg *v1.ConfigFile, c settings.Config, v *view, d *deepFS, more ...admit.Rule) (*Result, error) {
	s := c.HostSettings(cfg.OS, cfg.Architecture)
	s.ReadJAR = v.readJAR
	s.ReadLibVersions = v.readLibVersions
	s.Native = true // the native-* rules, always: the ELF facts came with the layers
	s.Deep = d != nil
	s.Baked = false // the facts hold no bytes to fingerprint: the image's deep check is d's
	var root fs.FS = v.fsys
	if d != nil {
		root = d
	}
	guard := func(*admission.Facts, *admission.Decision) []admission.Finding { return Guard(v.fsys, cfg, c) }
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
