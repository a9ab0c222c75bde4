package image

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// ErrPayload marks payload files bake will not install.
var ErrPayload = errors.New("payload")

// CheckPayloads checks the payload files before any base is read: each is
// a JAR that reads, carries a valid StreamFusion identity, and all are of
// one line and one release. Whether the line fits the base's Flink is
// decided with the base. Stock JARs only have to be JARs.
func CheckPayloads(files []File) error {
	var errs []error
	line, release, first := "", "", ""
	named := func(f File) string {
		if f.Source != "" {
			return f.Name + " (from " + f.Source + ")"
		}
		return f.Name
	}
	for _, f := range files {
		if f.Name == "" || strings.Contains(f.Name, "/") || !strings.HasSuffix(f.Name, ".jar") {
			errs = append(errs, fmt.Errorf("%w: file name %q: want a plain *.jar name", ErrPayload, f.Name))
			continue
		}
		j := payload.Read(bytes.NewReader(f.Data), int64(len(f.Data)), f.Name, payload.Options{})
		if j.Err != nil {
			errs = append(errs, fmt.Errorf("%w %s: %w", ErrPayload, named(f), j.Err))
			continue
		}
		id := admission.Identify(j)
		switch {
		case f.Stock:
			continue
		case id == nil:
			errs = append(errs, fmt.Errorf("%w %s: not StreamFusion content (no %s attribute, no tech/streamfusion/ classes); stock JARs go with --lib", ErrPayload, named(f), admission.AttrPayload))
			continue
		case !id.Valid():
			errs = append(errs, fmt.Errorf("%w %s: its manifest is not valid: %s", ErrPayload, named(f), strings.Join(append(id.Problems, id.Incoherent...), "; ")))
			continue
		}
		if first == "" {
			line, release, first = id.Line, id.Version, named(f)
			continue
		}
		rule := "payload-version"
		if id.Line != line {
			rule = "payload-line"
		}
		if id.Line != line || id.Version != release {
			errs = append(errs, fmt.Errorf("[%s] %w %s is %s for Flink line %s, %s is %s for line %s: bake payloads of one release and one line",
				rule, ErrPayload, named(f), id.Version, id.Line, first, release, line))
		}
	}
	return errors.Join(errs...)
}

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
