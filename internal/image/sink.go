package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
)

// A Sink stores what bake made: one image per platform, and the index that
// holds them when the base was an index (nil otherwise). It returns where
// the result went, for people. Sinks are the only place bake writes, as
// ko's publishers are.
type Sink interface {
	Write(ctx context.Context, imgs []Platformed, idx v1.ImageIndex) (string, error)
}

// single returns the one image a sink that holds one image can take.
func single(what string, imgs []Platformed) (v1.Image, error) {
	if len(imgs) != 1 {
		return nil, fmt.Errorf("%s holds one image; the base has %d platforms: choose one with --platform, or use --layout or --tag", what, len(imgs))
	}
	return imgs[0].Image, nil
}

// TarballSink writes a `docker save` style tarball that loads as Tag.
type TarballSink struct {
	Path string
	Tag  name.Tag
}

// Write implements Sink.
func (s TarballSink) Write(_ context.Context, imgs []Platformed, _ v1.ImageIndex) (string, error) {
	img, err := single("a tarball", imgs)
	if err != nil {
		return "", err
	}
	if err := tarball.WriteToFile(s.Path, s.Tag, img); err != nil {
		return "", fmt.Errorf("write tarball %s: %w", s.Path, err)
	}
	return fmt.Sprintf("%s (loads as %s: docker load -i %s)", s.Path, s.Tag.String(), s.Path), nil
}

// LayoutSink writes an OCI image layout directory.
type LayoutSink struct{ Dir string }

// Write implements Sink.
func (s LayoutSink) Write(_ context.Context, imgs []Platformed, idx v1.ImageIndex) (string, error) {
	p, err := layout.Write(s.Dir, empty.Index)
	if err != nil {
		return "", fmt.Errorf("write OCI layout %s: %w", s.Dir, err)
	}
	if idx != nil {
		err = p.AppendIndex(idx)
	} else {
		err = p.AppendImage(imgs[0].Image)
	}
	if err != nil {
		return "", fmt.Errorf("write OCI layout %s: %w", s.Dir, err)
	}
	return s.Dir + " (OCI layout)", nil
}

// RegistrySink pushes to a registry; credentials come from the default
// keychain (docker login, credential helpers).
type RegistrySink struct {
	Ref     name.Reference
	Options []remote.Option
}

// Write implements Sink.
func (s RegistrySink) Write(ctx context.Context, imgs []Platformed, idx v1.ImageIndex) (string, error) {
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, s.Options...)
	var err error
	if idx != nil {
		err = remote.WriteIndex(s.Ref, idx, opts...)
	} else {
		err = remote.Write(s.Ref, imgs[0].Image, opts...)
	}
	if err != nil {
		return "", fmt.Errorf("push %s: %w", s.Ref, err)
	}
	return s.Ref.String(), nil
}

// EngineSink loads the image into the container engine at DOCKER_HOST
// (Docker, or podman's API service), as `docker build --load` does.
type EngineSink struct {
	Tag name.Tag
	// Client is the engine; nil: the client of the environment (DOCKER_HOST,
	// DOCKER_CERT_PATH, DOCKER_TLS_VERIFY), API version negotiated.
	Client *client.Client
}

// Write implements Sink.
func (s EngineSink) Write(ctx context.Context, imgs []Platformed, _ v1.ImageIndex) (string, error) {
	img, err := single("a container engine", imgs)
	if err != nil {
		return "", err
	}
	c := s.Client
	if c == nil {
		if c, err = client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation()); err != nil {
			return "", fmt.Errorf("container engine: %w", err)
		}
		defer func() { _ = c.Close() }()
	}
	r, w := io.Pipe()
	go func() { w.CloseWithError(tarball.Write(s.Tag, img, w)) }()
	resp, err := c.ImageLoad(ctx, r)
	r.CloseWithError(err)
	if err != nil {
		return "", fmt.Errorf("load into the container engine at %s: %w", c.DaemonHost(), err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", fmt.Errorf("load into the container engine at %s: %w", c.DaemonHost(), err)
	}
	if i := strings.Index(string(out), `"errorDetail"`); i >= 0 {
		return "", fmt.Errorf("load into the container engine at %s: %w: %s", c.DaemonHost(), errLoad, strings.TrimSpace(string(out[i:])))
	}
	return fmt.Sprintf("%s (loaded into the engine at %s)", s.Tag.String(), c.DaemonHost()), nil
}

var errLoad = errors.New("the engine refused the image")
