package install

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/memfs"
)

// overlay is fsys as it would be after an install: files added below lib
// (in memory, taking the place of any file of that name) and files
// hidden. Everything else reads through. It serves
// what host.Gather uses: Open, ReadDir, Stat, Lstat and ReadLink.
type overlay struct {
	base fs.FS
	lib  string            // name of lib in base
	add  map[string][]byte // name -> contents
	hide map[string]bool   // names
}

var (
	_ fs.ReadDirFS  = (*overlay)(nil)
	_ fs.StatFS     = (*overlay)(nil)
	_ fs.ReadLinkFS = (*overlay)(nil)
)

// mem holds the added files (their directories are synthesised).
func (o *overlay) mem() memfs.FS {
	m := memfs.FS{}
	for n, d := range o.add {
		m[n] = &memfs.File{Data: d, Mode: 0o644}
	}
	return m
}

func (o *overlay) Open(name string) (fs.File, error) {
	if _, ok := o.add[name]; ok {
		return o.mem().Open(name)
	}
	if o.hide[name] {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrNotExist}
	}
	return o.base.Open(name)
}

func (o *overlay) ReadDir(name string) ([]fs.DirEntry, error) {
	es, err := fs.ReadDir(o.base, name)
	if err != nil {
		return nil, err
	}
	var out []fs.DirEntry
	for _, e := range es {
		n := path.Join(name, e.Name())
		if o.hide[n] {
			continue
		}
		if _, ok := o.add[n]; ok {
			continue
		}
		out = append(out, e)
	}
	if name == o.lib {
		mem, err := fs.ReadDir(o.mem(), name)
		if err == nil {
			out = append(out, mem...)
		}
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out, nil
}

func (o *overlay) Stat(name string) (fs.FileInfo, error) {
	return o.stat("stat", name, fs.Stat)
}

// Lstat: an added file is a regular file, never a link.
func (o *overlay) Lstat(name string) (fs.FileInfo, error) {
	return o.stat("lstat", name, fs.Lstat)
}

func (o *overlay) stat(op, name string, inBase func(fs.FS, string) (fs.FileInfo, error)) (fs.FileInfo, error) {
	if _, ok := o.add[name]; ok {
		return fs.Stat(o.mem(), name)
	}
	if o.hide[name] {
		return nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
	}
	return inBase(o.base, name)
}

func (o *overlay) ReadLink(name string) (string, error) {
	return fs.ReadLink(o.base, name)
}
