package memfs

import (
	"errors"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// FS maps names (valid fs.FS names: relative, slash-separated, no "."
// or ".." elements) to files.
type FS map[string]*File

// File is one entry: a regular file (or a FIFO or device, read as
// empty unless Data says otherwise), a directory (Mode has fs.ModeDir)
// or a symbolic link (fs.ModeSymlink, the target in Data).
type File struct {
	Data    []byte
	Mode    fs.FileMode
	ModTime time.Time
	Sys     any // returned by FileInfo.Sys
}

// ErrLinkLoop is returned for a name whose resolution follows more
// than maxHops symbolic links: rootfs's, so that errors.Is holds whichever
// package resolved the name.
var ErrLinkLoop = rootfs.ErrLinkLoop

const maxHops = 40 // Linux's limit

var (
	_ fs.ReadDirFS  = FS(nil)
	_ fs.ReadFileFS = FS(nil)
	_ fs.StatFS     = FS(nil)
	_ fs.ReadLinkFS = FS(nil)
)

// synthetic stands for a directory that is not in the map but holds
// names that are.
var synthetic = &File{Mode: fs.ModeDir | 0o555}

// Open opens name, following symbolic links.
func (m FS) Open(name string) (fs.File, error) {
	resolved, f, err := m.resolve("open", name, true)
	if err != nil {
		return nil, err
	}
	fi := info{name: base(name), f: f}
	if !f.Mode.IsDir() {
		return &file{path: name, info: fi}, nil
	}
	return &dir{path: name, info: fi, entries: m.children(resolved)}, nil
}

// Stat describes name, following symbolic links.
func (m FS) Stat(name string) (fs.FileInfo, error) {
	_, f, err := m.resolve("stat", name, true)
	if err != nil {
		return nil, err
	}
	return &info{name: base(name), f: f}, nil
}

// Lstat describes name; a symbolic link is described, not followed.
func (m FS) Lstat(name string) (fs.FileInfo, error) {
	_, f, err := m.resolve("lstat", name, false)
	if err != nil {
		return nil, err
	}
	return &info{name: base(name), f: f}, nil
}

// ReadLink returns the target of the symbolic link name.
func (m FS) ReadLink(name string) (string, error) {
	_, f, err := m.resolve("readlink", name, false)
	if err != nil {
		return "", err
	}
	if f.Mode.Type() != fs.ModeSymlink {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	return string(f.Data), nil
}

// ReadFile returns a copy of the contents of name, following links.
func (m FS) ReadFile(name string) ([]byte, error) {
	_, f, err := m.resolve("read", name, true)
	if err != nil {
		return nil, err
	}
	if f.Mode.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: fs.ErrInvalid}
	}
	return slices.Clone(f.Data), nil
}

// ReadDir lists the directory name, following links, sorted by name.
func (m FS) ReadDir(name string) ([]fs.DirEntry, error) {
	resolved, f, err := m.resolve("readdir", name, true)
	if err != nil {
		return nil, err
	}
	if !f.Mode.IsDir() {
		return nil, &fs.PathError{Op: "readdir", Path: name, Err: errors.New("not a directory")}
	}
	return m.children(resolved), nil
}

// resolve follows the links in name's parents (and in name itself when
// follow is set) and returns the name reached and its file. An absolute
// target is taken from the root.
func (m FS) resolve(op, name string, follow bool) (string, *File, error) {
	if !fs.ValidPath(name) {
		return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrInvalid}
	}
	if f := m.direct(name, follow); f != nil {
		return name, f, nil
	}
	done, f := ".", m.lookup(".")
	todo := name
	for hops := 0; todo != ""; {
		var c string
		c, todo, _ = strings.Cut(todo, "/")
		switch c {
		case "", ".":
			continue
		case "..":
			if f != nil && !f.Mode.IsDir() {
				return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} // a file is no directory to leave
			}
			done, f = path.Dir(done), nil
			continue
		}
		if f != nil && !f.Mode.IsDir() {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} // below a file
		}
		next := path.Join(done, c)
		f = m.lookup(next)
		if f == nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
		if f.Mode.Type() != fs.ModeSymlink || (todo == "" && !follow) {
			done = next
			continue
		}
		if hops++; hops > maxHops {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: ErrLinkLoop}
		}
		target := string(f.Data)
		if target == "" {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist} // as the kernel has it
		}
		if strings.HasPrefix(target, "/") {
			done = "."
		}
		todo = strings.TrimSuffix(target+"/"+todo, "/")
		f = m.lookup(done)
	}
	if f == nil { // ended on ".."
		if f = m.lookup(done); f == nil {
			return "", nil, &fs.PathError{Op: op, Path: name, Err: fs.ErrNotExist}
		}
	}
	return done, f, nil
}

// direct returns name's entry when the map has it and no link lies on
// the way (the common case, answered without allocating); nil sends the
// caller the long way.
func (m FS) direct(name string, follow bool) *File {
	f := m[name]
	if f == nil || follow && f.Mode.Type() == fs.ModeSymlink {
		return nil
	}
	for i := strings.IndexByte(name, '/'); i >= 0; {
		if p := m[name[:i]]; p != nil && !p.Mode.IsDir() {
			return nil // a link (or a file) on the way
		}
		j := strings.IndexByte(name[i+1:], '/')
		if j < 0 {
			break
		}
		i += 1 + j
	}
	return f
}

// lookup returns the file at a resolved name: the map's entry, or a
// synthetic directory when names below it are in the map.
func (m FS) lookup(name string) *File {
	if f := m[name]; f != nil {
		return f
	}
	if name == "." {
		return synthetic
	}
	prefix := name + "/"
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			return synthetic
		}
	}
	return nil
}

// children lists the directory at a resolved name, sorted by name.
func (m FS) children(dir string) []fs.DirEntry {
	prefix := dir + "/"
	if dir == "." {
		prefix = ""
	}
	seen := map[string]bool{}
	var out []fs.DirEntry
	for k, f := range m {
		rest, ok := strings.CutPrefix(k, prefix)
		if !ok || rest == "" || k == "." {
			continue
		}
		elem, below := rest, false
		if i := strings.IndexByte(rest, '/'); i >= 0 {
			elem, below = rest[:i], true
		}
		if seen[elem] {
			continue
		}
		if below {
			if m[prefix+elem] != nil {
				continue // listed with its own entry
			}
			f = synthetic
		}
		seen[elem] = true
		out = append(out, &info{name: elem, f: f})
	}
	slices.SortFunc(out, func(a, b fs.DirEntry) int { return strings.Compare(a.Name(), b.Name()) })
	return out
}

func base(name string) string {
	if name == "." {
		return "."
	}
	return path.Base(name)
}

// info is a file's fs.FileInfo and fs.DirEntry.
type info struct {
	name string
	f    *File
}

func (i *info) Name() string               { return i.name }
func (i *info) Size() int64                { return int64(len(i.f.Data)) }
func (i *info) Mode() fs.FileMode          { return i.f.Mode }
func (i *info) Type() fs.FileMode          { return i.f.Mode.Type() }
func (i *info) ModTime() time.Time         { return i.f.ModTime }
func (i *info) IsDir() bool                { return i.f.Mode.IsDir() }
func (i *info) Sys() any                   { return i.f.Sys }
func (i *info) Info() (fs.FileInfo, error) { return i, nil }
func (i *info) String() string             { return fs.FormatFileInfo(i) }

// file is an open non-directory.
type file struct {
	path string
	info info
	off  int64
}

func (f *file) Stat() (fs.FileInfo, error) { return &f.info, nil }
func (f *file) Close() error               { return nil }

func (f *file) Read(b []byte) (int, error) {
	data := f.info.f.Data
	if f.off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[f.off:])
	f.off += int64(n)
	return n, nil
}

func (f *file) Seek(offset int64, whence int) (int64, error) {
	switch whence {
	case io.SeekCurrent:
		offset += f.off
	case io.SeekEnd:
		offset += int64(len(f.info.f.Data))
	}
	if offset < 0 {
		return 0, &fs.PathError{Op: "seek", Path: f.path, Err: fs.ErrInvalid}
	}
	f.off = offset
	return offset, nil
}

func (f *file) ReadAt(b []byte, off int64) (int, error) {
	data := f.info.f.Data
	if off < 0 {
		return 0, &fs.PathError{Op: "read", Path: f.path, Err: fs.ErrInvalid}
	}
	if off >= int64(len(data)) {
		return 0, io.EOF
	}
	n := copy(b, data[off:])
	if n < len(b) {
		return n, io.EOF
	}
	return n, nil
}

// dir is an open directory.
type dir struct {
	path    string
	info    info
	entries []fs.DirEntry
	off     int
}

func (d *dir) Stat() (fs.FileInfo, error) { return &d.info, nil }
func (d *dir) Close() error               { return nil }

func (d *dir) Read([]byte) (int, error) {
	return 0, &fs.PathError{Op: "read", Path: d.path, Err: errors.New("is a directory")}
}

func (d *dir) ReadDir(n int) ([]fs.DirEntry, error) {
	rest := d.entries[d.off:]
	if n > 0 && len(rest) == 0 {
		return nil, io.EOF
	}
	if n > 0 && len(rest) > n {
		rest = rest[:n]
	}
	d.off += len(rest)
	return slices.Clone(rest), nil
}
