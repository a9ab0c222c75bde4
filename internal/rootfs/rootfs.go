// Package rootfs resolves names in a file system rooted at "/" as the
// kernel would inside the container: symbolic links are followed component
// by component within that root (an absolute link never escapes to the
// host), and a file is opened only once its type is known to be regular, so
// a FIFO named *.jar never blocks the reader. The same code serves a live
// container (os.DirFS("/")), a test tree and a flattened image.
//
// Host is the process's own root for the start path: os.DirFS("/") that
// looks each directory up once and opens regular files without the
// runtime poller's system calls.
//
// It resolves and opens; it does not read what it opens.
package rootfs

import (
	"errors"
	"fmt"
	"io/fs"
	"path"
	"strings"
)

// Errors for names that do not lead to a regular file.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrLinkLoop   = errors.New("too many levels of symbolic links")
)

// DanglingError is a name whose symbolic links lead to nothing.
type DanglingError struct {
	Missing string // the first component that does not exist
	Target  string // the name the links lead to
}

func (e *DanglingError) Error() string {
	return "dangling symbolic link: /" + e.Missing + " does not exist"
}

// OpenRegular resolves name and opens it when it is a regular file,
// returning the file, the name it resolved to and what it is. Anything else
// (a FIFO, socket, device, a directory reached through a link, a dangling
// link, a link loop) is refused without being opened.
func OpenRegular(fsys fs.FS, name string) (fs.File, string, fs.FileInfo, error) {
	target, info, err := Resolve(fsys, name)
	if err != nil {
		return nil, "", nil, err
	}
	if !info.Mode().IsRegular() {
		return nil, "", nil, fmt.Errorf("%w: %s", ErrNotRegular, Describe(info.Mode()))
	}
	f, err := fsys.Open(target)
	if err != nil {
		return nil, "", nil, err
	}
	return f, target, info, nil
}

// Resolve follows symbolic links in name, component by component, within
// fsys (absolute targets are taken from fsys's root), and returns a name
// with no links left and what it names. Names in file systems without links
// are returned as they are.
func Resolve(fsys fs.FS, name string) (string, fs.FileInfo, error) {
	rl, ok := fsys.(fs.ReadLinkFS)
	if !ok {
		info, err := fs.Stat(fsys, name)
		return name, info, err
	}
	var info fs.FileInfo
	var infoOf string                // the name info describes
	done := ""                       // resolved prefix
	todo := strings.Split(name, "/") // components left
	for hops := 0; len(todo) > 0; {
		c := todo[0]
		todo = todo[1:]
		switch c {
		case "", ".":
			continue
		case "..":
			if i := strings.LastIndexByte(done, '/'); i >= 0 {
				done = done[:i]
			} else {
				done = ""
			}
			continue
		}
		next := c
		if done != "" {
			next = done + "/" + c
		}
		var err error
		info, err = rl.Lstat(next)
		if err != nil {
			if hops > 0 && errors.Is(err, fs.ErrNotExist) {
				return "", nil, &DanglingError{Missing: next, Target: path.Clean(next + "/" + strings.Join(todo, "/"))}
			}
			return "", nil, err
		}
		infoOf = next
		if info.Mode()&fs.ModeSymlink == 0 {
			done = next
			continue
		}
		if hops++; hops > 40 {
			return "", nil, fmt.Errorf("%w at /%s", ErrLinkLoop, name)
		}
		link, err := rl.ReadLink(next)
		if err != nil {
			return "", nil, err
		}
		if link == "" {
			return "", nil, fmt.Errorf("symbolic link /%s has an empty target: %w", next, fs.ErrNotExist)
		}
		if strings.HasPrefix(link, "/") {
			done = ""
		}
		todo = append(strings.Split(link, "/"), todo...)
	}
	if done == "" {
		done = "."
	}
	if info == nil || infoOf != done {
		var err error
		if info, err = rl.Lstat(done); err != nil {
			return "", nil, err
		}
	}
	return done, info, nil
}

// Describe names a file type in words, for messages.
func Describe(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "a directory (reached through a symbolic link)"
	case m&fs.ModeNamedPipe != 0:
		return "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		return "a socket"
	case m&fs.ModeCharDevice != 0:
		return "a character device"
	case m&fs.ModeDevice != 0:
		return "a block device"
	default:
		return "a " + m.Type().String() + " file"
	}
}
