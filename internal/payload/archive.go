package payload

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
	"sync/atomic"

	kflate "github.com/klauspost/compress/flate"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Limits of an Archive's reads.
const (
	maxClassBytes = 16 << 20 // a class entry declaring more is refused (classfile.MaxSize)
	maxSmallFile  = 1 << 20  // a service file or embedded POM declaring more is skipped
)

// Archive is a JAR opened for its classes: the central directory indexed
// once (class entries by class name, with the CRC and size the directory
// records), the file kept open so that a class is inflated only when
// asked for. The linkage checks read a few classes of flink-dist and most
// of a connector's reachable ones; an index of ~45,000 names is what
// flink-dist costs.
type Archive struct {
	Path string
	d    *directory
	c    io.Closer

	// Classes are the class entries, by internal class name (a/b/C), the
	// last of a name as JarFile's lookup finds it. Entries below META-INF/
	// (multi-release versions) and a root module-info.class are not
	// classes on the class path.
	Classes map[string]ClassEntry
	// Services are the entries below META-INF/services/; POMs the
	// META-INF/maven/**/pom.xml entries.
	Services []string
	POMs     []string

	small map[string]entry // service files and POMs, by entry name
}

// ClassEntry is what the central directory says of one class entry.
type ClassEntry struct {
	CRC  uint32
	Size uint64
	e    entry
}

// OpenArchive opens the JAR at name in fsys for its classes; Close
// releases it.
func OpenArchive(fsys fs.FS, name string) (*Archive, error) {
	f, _, info, err := rootfs.OpenRegular(fsys, name)
	if err != nil {
		return nil, err
	}
	r, ok := f.(io.ReaderAt)
	if !ok {
		f.Close()
		return nil, fmt.Errorf("file system gives no random access to %s", name)
	}
	a, err := ReadArchive(r, info.Size(), "/"+name)
	if err != nil {
		f.Close()
		return nil, err
	}
	a.c = f
	return a, nil
}

// ReadArchive indexes the JAR in r, size bytes long, reporting it as path.
func ReadArchive(r io.ReaderAt, size int64, path string) (*Archive, error) {
	d, err := openDirectory(r, size)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	a := &Archive{Path: path, d: d, Classes: map[string]ClassEntry{}, small: map[string]entry{}}
	err = d.walk(func(name []byte, e *entry) bool {
		switch {
		case bytes.HasSuffix(name, []byte(".class")) && !bytes.HasPrefix(name, []byte("META-INF/")):
			if string(name) == "module-info.class" {
				return true
			}
			k := *e
			k.name = string(name)
			a.Classes[k.name[:len(k.name)-len(".class")]] = ClassEntry{CRC: e.crc, Size: e.size, e: k}
		case bytes.HasPrefix(name, []byte("META-INF/services/")) && len(name) > len("META-INF/services/") && name[len(name)-1] != '/':
			a.Services = append(a.Services, a.keepSmall(name, e))
		case bytes.HasPrefix(name, []byte("META-INF/maven/")) && bytes.HasSuffix(name, []byte("/pom.xml")):
			a.POMs = append(a.POMs, a.keepSmall(name, e))
		}
		return true
	})
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return a, nil
}

func (a *Archive) keepSmall(name []byte, e *entry) string {
	k := *e
	k.name = string(name)
	a.small[k.name] = k
	return k.name
}

// Close releases the file.
func (a *Archive) Close() error {
	if a == nil || a.c == nil {
		return nil
	}
	return a.c.Close()
}

// Class returns the bytes of a class entry by internal class name, as
// JarFile gives them (neither CRC nor size checked beyond the declared
// size, which must be read whole). The bytes are read into buf when it is
// large enough: a caller that parses them at once reuses one buffer.
// Classes are inflated with klauspost/compress's flate, about twice as
// fast as the standard library's on class files; the manifests the JVM
// corpus holds this package to keep the standard library's.
func (a *Archive) Class(name string, buf []byte) ([]byte, error) {
	ce, ok := a.Classes[name]
	if !ok {
		return nil, fmt.Errorf("%s: no class %s", a.Path, name)
	}
	if a.d == nil {
		return nil, fmt.Errorf("%s: no bytes of class %s (an index only)", a.Path, name)
	}
	if h := inflated.Load(); h != nil {
		(*h)(a.Path, ce.e.name)
	}
	data, err := classBytes(a.d, &ce.e, buf)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", a.Path, ce.e.name, err)
	}
	return data, nil
}

// inflated is OnInflate's function.
var inflated atomic.Pointer[func(jar, entry string)]

// OnInflate sets a function called with the path and entry name of each
// class Class reads, from the goroutine that reads it (nil: none). It is
// the benchmarks' record of what the deep check read (bench/floor holds
// the check to the least work that reading takes); the programs never set
// it.
func OnInflate(f func(jar, entry string)) {
	if f == nil {
		inflated.Store(nil)
		return
	}
	inflated.Store(&f)
}

var classInflaters sync.Pool

// packedBuffers holds the buffers deflated class entries are read into
// (*[]byte), for classBytes.
var packedBuffers sync.Pool

// classBytes reads a class entry: exactly its declared size (at most
// maxClassBytes), inflated when deflated.
func classBytes(d *directory, e *entry, buf []byte) ([]byte, error) {
	if e.size > maxClassBytes {
		return nil, fmt.Errorf("%w: %s declares %d bytes, more than the %d this tool reads", ErrFormat, e.name, e.size, maxClassBytes)
	}
	var sec io.Reader
	if e.packed <= smallEntry {
		var into []byte
		if e.method != methodStored {
			// The packed bytes of a deflated class are dropped once it is
			// inflated: their buffer goes back to the pool (a stored
			// class's bytes are its data, and are not pooled).
			if p, ok := packedBuffers.Get().(*[]byte); ok {
				into = *p
			}
		}
		data, whole, err := d.packedData(e, into)
		if err != nil {
			return nil, err
		}
		if e.method == methodStored {
			if uint64(len(data)) < e.size {
				return nil, fmt.Errorf("%w: %s holds %d bytes, its directory record says %d (truncated)", ErrFormat, e.name, len(data), e.size)
			}
			return data[:e.size], nil
		}
		defer func() { b := whole[:0]; packedBuffers.Put(&b) }()
		sec = bytes.NewReader(data)
	} else {
		off, err := d.dataStart(e, nil)
		if err != nil {
			return nil, err
		}
		sec = io.NewSectionReader(d.r, off, d.avail(e, off))
	}
	r := sec
	if e.method != methodStored {
		fr, ok := classInflaters.Get().(io.ReadCloser)
		if ok {
			if err := fr.(kflate.Resetter).Reset(sec, nil); err != nil {
				ok = false
			}
		}
		if !ok {
			fr = kflate.NewReader(sec)
		}
		defer classInflaters.Put(fr)
		r = fr
	}
	if uint64(cap(buf)) < e.size {
		buf = make([]byte, e.size)
	}
	data := buf[:e.size]
	if n, err := io.ReadFull(r, data); err != nil {
		return nil, truncated(err, fmt.Sprintf("%s holds %d bytes, its directory record says %d", e.name, n, e.size))
	}
	return data, nil
}

// File returns a service file or embedded POM by entry name; one larger
// than 1 MiB is refused.
func (a *Archive) File(name string) ([]byte, error) {
	e, ok := a.small[name]
	if !ok {
		return nil, fmt.Errorf("%s: no entry %s", a.Path, name)
	}
	data, err := entryBytes(a.d, &e, maxSmallFile)
	if err != nil {
		return nil, fmt.Errorf("%s: read %s: %w", a.Path, name, err)
	}
	return data, nil
}

// ServiceClasses returns the implementation classes a service file names,
// as java.util.ServiceLoader reads it: one binary name a line, '#' starts
// a comment, blanks ignored; given as internal names.
func ServiceClasses(data []byte) []string {
	var out []string
	for _, line := range strings.Split(string(data), "\n") {
		if i := strings.IndexByte(line, '#'); i >= 0 {
			line = line[:i]
		}
		line = strings.TrimSpace(line)
		if line != "" {
			out = append(out, strings.ReplaceAll(line, ".", "/"))
		}
	}
	return out
}
