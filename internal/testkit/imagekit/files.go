package imagekit

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
)

// Files returns what a container of img sees, whole: every file with its
// bytes, directories and links, from go-containerregistry's own flattening
// of the layers (mutate.Extract applies whiteouts and opaque directories
// as the OCI image spec says). Tests look inside baked images with it and
// hold the tool's own layer reader to it. A hard link is kept as an
// absolute symbolic link to its target, which reads the same.
func Files(img v1.Image) (fstest.MapFS, error) {
	rc := mutate.Extract(img)
	defer rc.Close()
	out := fstest.MapFS{}
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, fmt.Errorf("extract: %w", err)
		}
		name := strings.TrimPrefix(path.Clean("/"+h.Name), "/")
		if name == "" {
			continue
		}
		f := &fstest.MapFile{Mode: h.FileInfo().Mode(), ModTime: h.ModTime}
		switch h.Typeflag {
		case tar.TypeSymlink:
			f.Data = []byte(h.Linkname)
		case tar.TypeLink:
			f.Mode, f.Data = fs.ModeSymlink|0o777, []byte(path.Clean("/"+h.Linkname))
		case tar.TypeReg:
			if f.Data, err = io.ReadAll(tr); err != nil {
				return nil, fmt.Errorf("extract /%s: %w", name, err)
			}
		case tar.TypeDir, tar.TypeFifo, tar.TypeChar, tar.TypeBlock:
		default:
			continue
		}
		out[name] = f
	}
}
