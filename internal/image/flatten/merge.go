package flatten

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"iter"
	"path"
	"strings"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/memfs"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// maxKeptFile is the largest file a layer may hold where this tool reads
// it (a JAR in lib); a larger one is refused.
const maxKeptFile = 2 << 30

// ErrLayer is returned, wrapped with the layer and entry, for layer
// contents this tool will not trust.
var ErrLayer = errors.New("unsafe layer entry")

// fileUse is what a scan keeps of a regular file.
type fileUse int

// What a scan keeps of a file.
const (
	skip     fileUse = iota // leave it out
	presence                // keep an empty stand-in: only its existence matters
	contents                // keep its bytes (or, below the payload directories, its JAR facts)
)

// View is the image's file system merged from layer facts: a stand-in for
// every kept file, the JAR facts by path.
type View struct {
	FS   memfs.FS
	JARs map[string]*JARFacts
}

// flattener lays layers over each other, top to bottom, as a container
// sees them: whiteouts (.wh.name) and opaque directories (.wh..wh..opq)
// hide what lower layers hold, as the OCI image spec says.
type flattener struct {
	fsys   memfs.FS
	hidden map[string]bool // paths an upper layer holds
	whited map[string]bool // paths an upper layer deleted, with all below them
	opaque map[string]bool // directories whose lower contents are hidden
}

// Merge lays the layers' facts over each other, top to bottom.
func Merge(layers []*Facts) *View {
	f := &flattener{fsys: memfs.FS{}, hidden: map[string]bool{}, whited: map[string]bool{}, opaque: map[string]bool{}}
	v := &View{FS: f.fsys, JARs: map[string]*JARFacts{}}
	for i := len(layers) - 1; i >= 0; i-- {
		lf := layers[i]
		for k := range lf.Nodes {
			n := &lf.Nodes[k]
			if f.shadowed(n.Name) {
				continue
			}
			if e, ok := f.fsys[n.Name]; n.Implied || ok && e.Sys.(*Node).Implied && n.Type != tar.TypeDir {
				// An implied directory decides nothing: a lower layer's
				// entry for it gives its owner and mode, and what an upper
				// layer put below it keeps it a directory.
				if !ok {
					f.fsys[n.Name] = n.file()
				}
				continue
			}
			f.hidden[n.Name] = true
			if n.Skipped {
				continue
			}
			f.fsys[n.Name] = n.file()
			if n.JAR != nil {
				v.JARs[n.Name] = n.JAR
			}
		}
		// What a layer hides applies to the layers below only.
		for _, w := range lf.Whiteouts {
			f.whited[w] = true
		}
		for _, o := range lf.Opaques {
			f.opaque[o] = true
		}
	}
	return v
}

// file is the node's stand-in in the merged view; Sys is the node.
func (n *Node) file() *memfs.File {
	mf := &memfs.File{Mode: fs.FileMode(n.Mode) & fs.ModePerm, ModTime: Epoch(n.ModTime), Sys: n}
	switch n.Type {
	case tar.TypeDir:
		mf.Mode |= fs.ModeDir
	case tar.TypeSymlink:
		mf.Mode, mf.Data = fs.ModeSymlink|0o777, []byte(n.Link)
	case tar.TypeFifo:
		mf.Mode = fs.ModeNamedPipe | 0o644
	case tar.TypeChar:
		mf.Mode = fs.ModeDevice | fs.ModeCharDevice | 0o644
	case tar.TypeBlock:
		mf.Mode = fs.ModeDevice | 0o644
	default:
		mf.Data = n.Data
	}
	return mf
}

// shadowed reports whether an upper layer hid name: it holds name, or it
// or a parent was whited out (even when a layer above re-created it: what
// was below is gone), a parent is opaque, or a non-directory stands where
// a parent was.
func (f *flattener) shadowed(name string) bool {
	if f.hidden[name] || f.whited[name] {
		return true
	}
	for p := path.Dir(name); ; p = path.Dir(p) {
		if f.opaque[p] || f.whited[p] {
			return true
		}
		if p == "." {
			return false
		}
		if f.hidden[p] {
			if e, ok := f.fsys[p]; !ok || !e.Mode.IsDir() {
				return true // a file or link now stands there
			}
		}
	}
}

// ReadJAR answers host.Gather from the facts: links are resolved in the
// merged view, the JAR's facts are those its layer recorded.
func (v *View) ReadJAR(fsys fs.FS, name string, opt payload.Options) *payload.JAR {
	target, info, err := rootfs.Resolve(fsys, name)
	if err != nil || !info.Mode().IsRegular() {
		return payload.Open(fsys, name, opt) // the same refusal, from the stand-ins
	}
	f := v.JARs[target]
	if f == nil {
		return payload.Open(fsys, name, opt) // a file outside the payload directories: a stand-in
	}
	j := f.JAR("/"+name, "/"+target, opt.Properties)
	if opt.Native == "" {
		j.ELF = nil // read for every JAR of the payload directories; asked for only of lib's
	}
	return j
}

// Entries yields the entries of a tar stream, front to back; a read error
// is yielded last.
func Entries(tr *tar.Reader) iter.Seq2[*tar.Header, error] {
	return func(yield func(*tar.Header, error) bool) {
		for {
			h, err := tr.Next()
			if errors.Is(err, io.EOF) {
				return
			}
			if err != nil {
				yield(nil, fmt.Errorf("read tar: %w", err))
				return
			}
			if !yield(h, nil) {
				return
			}
		}
	}
}

// Clean makes a tar entry name relative to the root; a name that climbs
// out of it is refused.
func Clean(name string) (string, error) {
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

// Epoch is the time a baked layer's entries carry.
func Epoch(sec int64) time.Time { return time.Unix(sec, 0).UTC() }
