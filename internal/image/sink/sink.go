// Package sink stores what bake made: a `docker save` tarball, an OCI
// layout, a registry push or a load into the container engine, each all or
// nothing where the medium allows. Sinks are the only place bake writes,
// as ko's publishers are; internal/image makes the images and stores
// none.
package sink

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/docker/docker/client"
	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
)

// A Writer stores what bake made: one image per platform, and the index
// that holds them when the base was an index (nil otherwise). It returns
// where the result went, for people.
type Writer interface {
	Write(ctx context.Context, imgs []source.Platformed, idx v1.ImageIndex) (string, error)
}

// single returns the one image a sink that holds one image can take.
func single(what string, imgs []source.Platformed) (v1.Image, error) {
	if len(imgs) != 1 {
		return nil, fmt.Errorf("%s holds one image; the base has %d platforms: choose one with --platform, or use --layout or --tag", what, len(imgs))
	}
	return imgs[0].Image, nil
}

// Tarball writes a `docker save` style tarball that loads as Tag.
type Tarball struct {
	Path string
	Tag  name.Tag
}

// Write implements Writer.
func (s Tarball) Write(_ context.Context, imgs []source.Platformed, _ v1.ImageIndex) (string, error) {
	img, err := single("a tarball", imgs)
	if err != nil {
		return "", err
	}
	if err := WriteTarball(s.Path, s.Tag, img); err != nil {
		return "", fmt.Errorf("write tarball %s: %w", s.Path, err)
	}
	return fmt.Sprintf("%s (loads as %s: docker load -i %s)", s.Path, s.Tag.String(), s.Path), nil
}

// Layout writes an OCI image layout directory.
type Layout struct{ Dir string }

// Write implements Writer.
func (s Layout) Write(_ context.Context, imgs []source.Platformed, idx v1.ImageIndex) (string, error) {
	if err := WriteLayout(s.Dir, imgs[0].Image, idx); err != nil {
		return "", fmt.Errorf("write OCI layout %s: %w", s.Dir, err)
	}
	return s.Dir + " (OCI layout)", nil
}

// Registry pushes to a registry; credentials come from the default
// keychain (docker login, credential helpers). Blobs the registry already
// has are not uploaded again. Progress, when set, hears of every layer.
type Registry struct {
	Ref      name.Reference
	Options  []remote.Option
	Progress func(image.Update)
}

// Write implements Writer.
func (s Registry) Write(ctx context.Context, imgs []source.Platformed, idx v1.ImageIndex) (string, error) {
	opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain)}, s.Options...)
	wait := func() {}
	if s.Progress != nil {
		var updates chan<- v1.Update
		updates, wait = image.PushProgress(s.Progress)
		opts = append(opts, remote.WithProgress(updates))
	}
	var err error
	if idx != nil {
		err = remote.WriteIndex(s.Ref, idx, opts...)
	} else {
		err = remote.Write(s.Ref, imgs[0].Image, opts...)
	}
	wait()
	if err != nil {
		return "", fmt.Errorf("push %s: %w", s.Ref, err)
	}
	return s.Ref.String(), nil
}

// Engine loads the image into the container engine at DOCKER_HOST
// (Docker, or podman's API service), as `docker build --load` does.
type Engine struct {
	Tag name.Tag
	// Client is the engine; nil: the client of the environment (DOCKER_HOST,
	// DOCKER_CERT_PATH, DOCKER_TLS_VERIFY), API version negotiated.
	Client *client.Client
}

// Write implements Writer.
func (s Engine) Write(ctx context.Context, imgs []source.Platformed, _ v1.ImageIndex) (string, error) {
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

// CheckOutput checks, before any base is read, that an output file or
// directory can be written: its folder exists and takes new files.
func CheckOutput(p string) error {
	dir := filepath.Dir(filepath.Clean(p))
	info, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("output %s: %w", p, err)
	}
	if !info.IsDir() {
		return fmt.Errorf("output %s: %s is not a directory", p, dir)
	}
	f, err := os.CreateTemp(dir, ".streamfusion-check-*")
	if err != nil {
		return fmt.Errorf("output %s: the folder cannot be written: %w", p, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// WriteTarball writes img as a `docker save` tarball at file, all or
// nothing: into a temporary file beside it, renamed into place when
// complete (not synced: like docker save and crane, it leaves durability
// to the file system). Layers are written as they are stored (an
// uncompressed base layer stays uncompressed).
func WriteTarball(file string, ref name.Reference, img v1.Image, opts ...tarball.WriteOption) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), "."+filepath.Base(file)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.Remove(tmp.Name()) }() // after the rename: nothing there
	if err := tarball.Write(ref, img, tmp, opts...); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// WriteLayout writes an image or an index as a new OCI layout at dir, all
// or nothing: into a temporary directory beside it, renamed into place.
// dir must not exist yet, or be empty.
//
// A layout is never written into: its index.json and blobs are written
// once, in the private temporary directory, and the whole directory takes
// dir's place in one rename. So two bakes writing one --layout at once
// cannot interleave: the first rename wins, the other finds dir taken and
// fails saying so, and dir is always one bake's complete layout.
func WriteLayout(dir string, img v1.Image, idx v1.ImageIndex) error {
	if ents, err := os.ReadDir(dir); err == nil && len(ents) > 0 {
		return fmt.Errorf("layout %s exists and is not empty", dir)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(filepath.Clean(dir)), "."+filepath.Base(dir)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	p, err := layout.Write(tmp, empty.Index)
	if err != nil {
		return err
	}
	if idx != nil {
		err = p.AppendIndex(idx)
	} else {
		err = p.AppendImage(img)
	}
	if err != nil {
		return err
	}
	_ = os.Remove(dir) // an empty directory given as the target
	if err := os.Rename(tmp, dir); err != nil {
		if errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, syscall.EEXIST) {
			return fmt.Errorf("layout %s was written meanwhile by another writer (another bake?); it is left as that one wrote it, and nothing of this bake was written", dir)
		}
		return err
	}
	return nil
}
