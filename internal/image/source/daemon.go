package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/docker/docker/client"
)

// DaemonPrefix marks a reference to an image in the local engine's storage
// (the engine at DOCKER_HOST, or the client's default; podman's
// Docker-compatible API service included), as skopeo names the transport.
const DaemonPrefix = "docker-daemon:"

// fromDaemon streams the image out of the engine once (the API's image
// export, what `docker save` calls) into a temporary file, and reads it as
// a saved tarball: layers as the engine stores them, nothing held in
// memory. The file is removed by Set.Close.
func fromDaemon(ctx context.Context, ref, tempDir string) (*Set, error) {
	c, err := client.NewClientWithOpts(client.FromEnv, client.WithAPIVersionNegotiation())
	if err != nil {
		return nil, fmt.Errorf("container engine: %w", err)
	}
	defer func() { _ = c.Close() }()
	rc, err := c.ImageSave(ctx, []string{ref})
	if err != nil {
		return nil, fmt.Errorf("export %s from the container engine: %w", ref, err)
	}
	defer rc.Close()
	f, err := os.CreateTemp(tempDir, "streamfusion-daemon-*.tar")
	if err != nil {
		return nil, err
	}
	remove := func() { _ = os.Remove(f.Name()) }
	_, cerr := io.Copy(f, rc)
	if err := errors.Join(cerr, f.Close()); err != nil {
		remove()
		return nil, fmt.Errorf("export %s from the container engine: %w", ref, err)
	}
	img, err := openTarball(f.Name())
	if err != nil {
		remove()
		return nil, fmt.Errorf("read %s as exported by the container engine: %w", ref, err)
	}
	return &Set{Ref: DaemonPrefix + ref, Image: img, cleanup: remove}, nil
}

// Close releases what opening the source took: the exported tarball of
// an engine image. Other sources hold nothing.
func (s *Set) Close() {
	if s != nil && s.cleanup != nil {
		s.cleanup()
		s.cleanup = nil
	}
}
