// Package image reads and writes container images for the image tooling
// (cmd/streamfusion) with go-containerregistry: it flattens the few
// files admission needs out of an image's layers into an fs.FS, so the
// entrypoint's own host and admission code decides on an image without
// running it, and it bakes StreamFusion images by appending one layer.
//
// Verify and Bake read each layer once, front to back, into layer facts
// (facts.go): directories with their owners, links, whiteouts, small files
// such as JDK release files, and for every file below lib, usrlib and
// plugins what payload.Read learned from it (the JAR itself is read from a
// buffer or an unlinked spool file and dropped). The facts of all layers
// are merged top to bottom into a file system of stand-ins that host.Gather
// reads, answering JAR reads from the facts. Memory does not grow with the
// size of layers or JARs. A layer's facts are cached by diff ID (and the
// format version and the directories asked for) in layercache; they are
// stored only after the layer's bytes were hashed and matched its diff ID,
// so a cached verdict is about the content that diff ID names, and a layer
// the cache knows is not read again (a saved tarball whose layer bytes were
// swapped under the same config is not detected then; loading it into an
// engine would fail its diff ID check).
//
// Bake keeps the base's blobs as they are (tarball.go reads saved
// tarballs without recompressing their layers) and compresses only the new
// layer. What this package does not do: pull or push by itself beyond
// go-containerregistry's remote package, or run anything from an image.
//
// The entrypoint binary never imports this package: it links no registry,
// HTTP or TLS code.
package image

import (
	"archive/tar"
	"cmp"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"
	"testing/fstest"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// Limits on what a layer may hold before it is refused.
const (
	maxKeptFile  = 2 << 30 // one kept file (a JAR in lib)
	maxKeptTotal = 8 << 30 // everything kept from one image
)

// ErrLayer is returned, wrapped with the layer and entry, for layer
// contents this tool will not trust.
var ErrLayer = errors.New("unsafe layer entry")

// Keep is what Flatten keeps of a regular file.
type Keep int

// What Flatten keeps of a file.
const (
	Skip     Keep = iota // leave it out
	Presence             // keep an empty stand-in: only its existence matters
	Contents             // keep its bytes
)

// Want says what to keep of each regular file; directories and symbolic
// links are always kept (they are small, and links decide where paths lead).
type Want func(name string) Keep

// Flatten returns the image's file system, as a container would see it,
// limited to the wanted regular files. Layers are read top to bottom;
// whiteouts (.wh.name) and opaque directories (.wh..wh..opq) hide what
// lower layers hold, as the OCI image spec says.
func Flatten(img v1.Image, want Want) (fstest.MapFS, error) {
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list layers: %w", err)
	}
	f := &flattener{fsys: fstest.MapFS{}, hidden: map[string]bool{}, opaque: map[string]bool{}, want: want}
	for i := len(layers) - 1; i >= 0; i-- {
		rc, err := layers[i].Uncompressed()
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
		err = f.layer(tar.NewReader(rc))
		rc.Close()
		if err != nil {
			return nil, fmt.Errorf("layer %d: %w", i, err)
		}
	}
	return f.fsys, nil
}

type flattener struct {
	fsys   fstest.MapFS
	hidden map[string]bool // paths an upper layer decided: present or whited out
	opaque map[string]bool // directories whose lower contents are hidden
	want   Want
	kept   int64
}

// layer reads one layer; what it hides applies to the layers below only.
func (f *flattener) layer(tr *tar.Reader) error {
	var whiteouts, opaques []string
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return fmt.Errorf("read tar: %w", err)
		}
		name, err := clean(h.Name)
		if err != nil {
			return err
		}
		dir, base := path.Split(name)
		dir = strings.TrimSuffix(dir, "/")
		if base == ".wh..wh..opq" {
			opaques = append(opaques, cmp.Or(dir, "."))
			continue
		}
		if target, ok := strings.CutPrefix(base, ".wh."); ok {
			whiteouts = append(whiteouts, path.Join(cmp.Or(dir, "."), target))
			continue
		}
		if name == "." || f.shadowed(name) {
			continue
		}
		f.hidden[name] = true
		switch h.Typeflag {
		case tar.TypeDir:
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeDir | fs.FileMode(h.Mode)&fs.ModePerm, ModTime: h.ModTime}
		case tar.TypeSymlink:
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeSymlink | 0o777, Data: []byte(h.Linkname)}
		case tar.TypeLink:
			// A hard link reads as its target: keep it as an absolute link.
			target, err := clean(h.Linkname)
			if err != nil {
				return err
			}
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeSymlink | 0o777, Data: []byte("/" + target)}
		case tar.TypeReg:
			switch f.want(name) {
			case Skip:
				continue
			case Presence:
				f.fsys[name] = &fstest.MapFile{Mode: fs.FileMode(h.Mode) & fs.ModePerm, ModTime: h.ModTime}
				continue
			}
			if h.Size > maxKeptFile || f.kept+h.Size > maxKeptTotal {
				return fmt.Errorf("%w: /%s is %d bytes, more than this tool reads", ErrLayer, name, h.Size)
			}
			data, err := io.ReadAll(io.LimitReader(tr, h.Size))
			if err != nil {
				return fmt.Errorf("read /%s: %w", name, err)
			}
			f.kept += h.Size
			f.fsys[name] = &fstest.MapFile{Data: data, Mode: fs.FileMode(h.Mode) & fs.ModePerm, ModTime: h.ModTime}
		case tar.TypeFifo:
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeNamedPipe | 0o644}
		case tar.TypeChar:
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeDevice | fs.ModeCharDevice | 0o644}
		case tar.TypeBlock:
			f.fsys[name] = &fstest.MapFile{Mode: fs.ModeDevice | 0o644}
		}
	}
	for _, w := range whiteouts {
		f.hidden[w] = true
	}
	for _, o := range opaques {
		f.opaque[o] = true
	}
	return nil
}

// shadowed reports whether an upper layer hid name: it or a parent was
// whited out, replaced by a non-directory, or a parent is opaque.
func (f *flattener) shadowed(name string) bool {
	if f.hidden[name] {
		return true
	}
	for p := path.Dir(name); ; p = path.Dir(p) {
		if f.opaque[p] {
			return true
		}
		if p == "." {
			return false
		}
		if f.hidden[p] {
			if e, ok := f.fsys[p]; !ok || !e.Mode.IsDir() {
				return true // whited out, or a file or link now stands there
			}
		}
	}
}

// clean makes a tar entry name relative to the root; a name that climbs
// out of it is refused.
func clean(name string) (string, error) {
	if strings.ContainsRune(name, 0) {
		return "", fmt.Errorf("%w: NUL byte in %q", ErrLayer, name)
	}
	for _, part := range strings.Split(strings.TrimPrefix(name, "./"), "/") {
		if part == ".." {
			return "", fmt.Errorf("%w: %q climbs out of the root", ErrLayer, name)
		}
	}
	c := strings.TrimPrefix(path.Clean("/"+name), "/")
	if c == "" {
		return ".", nil
	}
	return c, nil
}

// epoch is the time a baked layer's entries carry.
func epoch(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
