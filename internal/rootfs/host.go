//go:build linux

package rootfs

import (
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"
	"time"
)

// Host is the process's own root, "/", as os.DirFS("/") gives it, made for
// the start path, which resolves every JAR of lib component by component
// and opens each once:
//   - the type of every directory and link met on the way, and a link's
//     target, is looked up once per Host (a start takes milliseconds; a
//     directory that is replaced meanwhile is read as it was a moment
//     before, which a start that began a moment earlier would have seen);
//   - a regular file is opened with open(2) and read with pread(2), not
//     mapped: a mapped central directory's pages count in the process's
//     RSS (flink-dist's 4.5 MB of them nearly doubled a start's peak), and
//     with the walk hashing what it reads for the fingerprint, reading
//     costs no more CPU than mapping did (docs/performance.md). os.Open registers every
//     file with the runtime's poller, which costs four fcntl(2) and an
//     epoll_ctl(2) per regular file, to no use: files are never pollable.
//
// Errors are os.DirFS's: *fs.PathError naming the name within the root.
// A Host is safe for concurrent use. Anything but a regular file is opened
// as os.DirFS opens it.
func Host() fs.FS { return &hostFS{seen: map[string]seen{}} }

type hostFS struct {
	mu   sync.Mutex
	seen map[string]seen // directories and links, by name within the root
}

type seen struct {
	info fs.FileInfo
	link string
}

var dirFS = os.DirFS("/")

func full(name string) string {
	if name == "." {
		return "/"
	}
	return "/" + name
}

func pathErr(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return &fs.PathError{Op: op, Path: name, Err: pe.Err}
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// Open opens a regular file for pread(2); anything else as os.DirFS does.
func (h *hostFS) Open(name string) (fs.File, error) {
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "open", Path: name, Err: fs.ErrInvalid}
	}
	var fd int
	var err error
	for {
		// O_NONBLOCK: opening a FIFO never waits for a writer; reads
		// of regular files ignore it.
		fd, err = syscall.Open(full(name), syscall.O_RDONLY|syscall.O_CLOEXEC|syscall.O_NONBLOCK, 0)
		if !errors.Is(err, syscall.EINTR) {
			break
		}
	}
	if err != nil {
		return nil, &fs.PathError{Op: "open", Path: name, Err: err}
	}
	var st syscall.Stat_t
	if err := syscall.Fstat(fd, &st); err != nil {
		_ = syscall.Close(fd)
		return nil, &fs.PathError{Op: "stat", Path: name, Err: err}
	}
	if st.Mode&syscall.S_IFMT != syscall.S_IFREG {
		_ = syscall.Close(fd)
		return dirFS.Open(name)
	}
	return &hostFile{fd: fd, name: name, st: st}, nil
}

// Lstat is os.Lstat, remembered for directories and links.
func (h *hostFS) Lstat(name string) (fs.FileInfo, error) {
	h.mu.Lock()
	s, ok := h.seen[name]
	h.mu.Unlock()
	if ok {
		return s.info, nil
	}
	if !fs.ValidPath(name) {
		return nil, &fs.PathError{Op: "lstat", Path: name, Err: fs.ErrInvalid}
	}
	info, err := os.Lstat(full(name))
	if err != nil {
		return nil, pathErr("lstat", name, err)
	}
	if info.IsDir() || info.Mode()&fs.ModeSymlink != 0 {
		h.mu.Lock()
		h.seen[name] = seen{info: info, link: h.seen[name].link}
		h.mu.Unlock()
	}
	return info, nil
}

// ReadLink is os.Readlink, remembered.
func (h *hostFS) ReadLink(name string) (string, error) {
	h.mu.Lock()
	s := h.seen[name]
	h.mu.Unlock()
	if s.link != "" {
		return s.link, nil
	}
	if !fs.ValidPath(name) {
		return "", &fs.PathError{Op: "readlink", Path: name, Err: fs.ErrInvalid}
	}
	link, err := os.Readlink(full(name))
	if err != nil {
		return "", pathErr("readlink", name, err)
	}
	if link != "" && s.info != nil {
		h.mu.Lock()
		h.seen[name] = seen{info: s.info, link: link}
		h.mu.Unlock()
	}
	return link, nil
}

// Stat, ReadDir and ReadFile are os.DirFS's.
func (h *hostFS) Stat(name string) (fs.FileInfo, error) { return fs.Stat(dirFS, name) }

func (h *hostFS) ReadDir(name string) ([]fs.DirEntry, error) { return fs.ReadDir(dirFS, name) }

func (h *hostFS) ReadFile(name string) ([]byte, error) { return fs.ReadFile(dirFS, name) }

// hostFile is a regular file read with pread(2); Read reads on from where
// the last Read ended.
type hostFile struct {
	mu   sync.Mutex
	fd   int
	name string
	st   syscall.Stat_t
	off  int64
}

func (f *hostFile) ReadAt(b []byte, off int64) (int, error) {
	if off < 0 {
		return 0, &fs.PathError{Op: "readat", Path: f.name, Err: errors.New("negative offset")}
	}
	n := 0
	for n < len(b) {
		k, err := syscall.Pread(f.fd, b[n:], off+int64(n))
		if errors.Is(err, syscall.EINTR) {
			continue
		}
		if err != nil {
			return n, &fs.PathError{Op: "read", Path: f.name, Err: err}
		}
		if k == 0 {
			return n, io.EOF
		}
		n += k
	}
	return n, nil
}

func (f *hostFile) Read(b []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(b) == 0 {
		return 0, nil
	}
	n, err := f.ReadAt(b, f.off)
	f.off += int64(n)
	if n > 0 && errors.Is(err, io.EOF) {
		err = nil
	}
	return n, err
}

func (f *hostFile) Stat() (fs.FileInfo, error) { return fileInfo{f}, nil }

func (f *hostFile) Close() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.fd < 0 {
		return &fs.PathError{Op: "close", Path: f.name, Err: fs.ErrClosed}
	}
	err := syscall.Close(f.fd)
	f.fd = -1
	if err != nil {
		return &fs.PathError{Op: "close", Path: f.name, Err: err}
	}
	return nil
}

// fileInfo is what fstat(2) said when the file was opened.
type fileInfo struct{ f *hostFile }

func (i fileInfo) Name() string {
	for k := len(i.f.name) - 1; k >= 0; k-- {
		if i.f.name[k] == '/' {
			return i.f.name[k+1:]
		}
	}
	return i.f.name
}
func (i fileInfo) Size() int64        { return i.f.st.Size }
func (i fileInfo) Mode() fs.FileMode  { return fs.FileMode(i.f.st.Mode & 0o777) }
func (i fileInfo) ModTime() time.Time { return time.Unix(i.f.st.Mtim.Unix()) }
func (i fileInfo) IsDir() bool        { return false }
func (i fileInfo) Sys() any           { return &i.f.st }
