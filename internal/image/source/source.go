// Package source opens the images the image tooling reads: a registry
// reference, a `docker save` tarball (its layers kept as they are
// stored), an OCI layout directory, or an image of the local container
// engine, each as a Set (one image, or an index) whose images are
// picked by platform. It reads no layer: internal/image reads them.
package source

import (
	"context"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Set is an image or an index, as a reference names it.
type Set struct {
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
func Open(ctx context.Context, ref string, opts ...remote.Option) (*Set, error) {
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
		return &Set{Ref: ref, Image: img}, nil
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
	s := &Set{Ref: ref, Name: r}
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
func fromLayoutIndex(ref string, idx v1.ImageIndex) (*Set, error) {
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
			return &Set{Ref: ref, Index: inner}, nil
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return nil, err
		}
		return &Set{Ref: ref, Image: img}, nil
	}
	return &Set{Ref: ref, Index: idx}, nil
}

// Platformed is one image of a source, with its platform.
type Platformed struct {
	Platform v1.Platform
	Image    v1.Image
}

// Images returns the images of the source, those of the index filtered by
// want (nil: all), attestation manifests left out.
func (s *Set) Images(want *v1.Platform) ([]Platformed, error) {
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
