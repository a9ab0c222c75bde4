package payload

import (
	"bufio"
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"sync"
)

// Entry names and attributes this package looks for.
const (
	ManifestName         = "META-INF/MANIFEST.MF"
	VersionProperties    = ".flink-runtime.version.properties"
	EmbeddedCoreAttr     = "StreamFusion-Embedded-Core"
	classPrefix          = "tech/streamfusion/"
	metaPrefix           = "META-INF/streamfusion/"
	nativePrefix         = "libstreamfusion"
	loggingPrefix        = "org/slf4j/"
	maxDeclaredMF        = 16 << 20 // a manifest declaring more is refused unread
	maxProperties        = 64 << 10
	keepNative           = 8
	keepNestedCandidates = 64
)

// Errors for files that are not JARs this tool can trust.
var (
	ErrNotRegular = errors.New("not a regular file")
	ErrLinkLoop   = errors.New("too many levels of symbolic links")
	// ErrUnlisted marks a directory below lib that could not be listed:
	// JARs in it may be missing from the check.
	ErrUnlisted = errors.New("directory cannot be listed, JARs in it may be missing from the check")
)

// JAR is what one read learned about a JAR file. When Err is set, the file
// could not be read as a JAR and nothing else is meaningful.
type JAR struct {
	Path    string // absolute path; for a nested JAR "outer.jar!/entry"
	Target  string // where a symbolic link led, when Path is one
	Size    int64
	Err     error
	Entries int

	// Manifest is the main section of META-INF/MANIFEST.MF; nil without one.
	Manifest *Manifest

	// Content marks: the first entry of each kind that makes a JAR
	// StreamFusion content whatever its manifest says.
	ClassMark  string // an entry under tech/streamfusion/
	MetaMark   string // an entry under META-INF/streamfusion/
	NativeMark string // a native library whose name starts with libstreamfusion

	// Native library entries (.so, .dylib, .dll, .jnilib): the count and the
	// first few names.
	NativeCount int
	Native      []string

	// Logging is the first entry under org/slf4j/, if any.
	Logging string

	// Properties of .flink-runtime.version.properties at the root, when
	// the read asked for them and the entry exists.
	Properties map[string]string

	// EmbeddedCore is the entry named by the manifest's
	// StreamFusion-Embedded-Core attribute; Nested is that entry read as a
	// JAR, nil when the archive has no such entry. A stored nested JAR is
	// read in place; a deflated one is streamed up to its manifest only, so
	// Streamed is set and its entry marks are not known.
	EmbeddedCore string
	Nested       *JAR
	Streamed     bool
}

// Options say which optional parts of a JAR a read looks at.
type Options struct {
	Properties bool // read .flink-runtime.version.properties (flink-dist)
}

// Open reads the JAR at name in fsys, a file system rooted at "/". It
// follows symbolic links within fsys and refuses, without opening them,
// anything that is not a regular file: FIFOs, sockets, devices, directories
// reached through a link, dangling links and link loops.
func Open(fsys fs.FS, name string, opt Options) *JAR {
	j := &JAR{Path: "/" + name}
	target, info, err := Resolve(fsys, name)
	if err != nil {
		j.Err = err
		return j
	}
	if target != name {
		j.Target = "/" + target
	}
	// Checked before opening: opening a FIFO would block.
	if !info.Mode().IsRegular() {
		j.Err = fmt.Errorf("%w: %s", ErrNotRegular, describeMode(info.Mode()))
		return j
	}
	f, err := fsys.Open(target)
	if err != nil {
		j.Err = err
		return j
	}
	defer f.Close()
	r, ok := f.(io.ReaderAt)
	if !ok {
		j.Err = fmt.Errorf("file system gives no random access to %s", name)
		return j
	}
	j.read(r, info.Size(), opt, 0)
	return j
}

// Read reads a JAR from r, size bytes long, reporting it under path.
func Read(r io.ReaderAt, size int64, path string, opt Options) *JAR {
	j := &JAR{Path: path}
	j.read(r, size, opt, 0)
	return j
}

func (j *JAR) read(r io.ReaderAt, size int64, opt Options, depth int) {
	j.Size = size
	if err := j.scan(r, size, opt, depth); err != nil {
		j.Err = err
	}
}

func (j *JAR) scan(r io.ReaderAt, size int64, opt Options, depth int) error {
	d, err := openDirectory(r, size)
	if err != nil {
		return err
	}
	var manifest, props *entry
	var manifests int
	var jars []entry // candidates for the embedded core
	overflow := false
	err = d.walk(func(name []byte, e *entry) bool {
		j.Entries++
		if len(name) == 0 {
			return true
		}
		// Most entries are classes: decide by the first and last bytes
		// before comparing anything longer.
		switch name[0] {
		case 'M', 'm':
			switch {
			case len(name) == len(ManifestName) && bytes.EqualFold(name, []byte(ManifestName)):
				manifests++
				c := *e
				c.name = string(name)
				manifest = &c
			case j.MetaMark == "" && len(name) > len(metaPrefix) && bytes.EqualFold(name[:len(metaPrefix)], []byte(metaPrefix)):
				j.MetaMark = string(name)
			}
		case 't':
			if j.ClassMark == "" && len(name) > len(classPrefix) && bytes.HasPrefix(name, []byte(classPrefix)) {
				j.ClassMark = string(name)
			}
		case 'o':
			if j.Logging == "" && len(name) > len(loggingPrefix) && bytes.HasPrefix(name, []byte(loggingPrefix)) {
				j.Logging = string(name)
			}
		case '.':
			if opt.Properties && string(name) == VersionProperties {
				c := *e
				c.name = string(name)
				props = &c
			}
		}
		switch last := name[len(name)-1]; {
		case last == 's' || last == '/':
			// .class files and directories: nothing more to look at.
		case last == 'r' && bytes.HasSuffix(name, []byte(".jar")):
			if len(jars) < keepNestedCandidates {
				c := *e
				c.name = string(name)
				jars = append(jars, c)
			} else {
				overflow = true
			}
		case isNative(name):
			j.NativeCount++
			if len(j.Native) < keepNative {
				j.Native = append(j.Native, string(name))
			}
			if j.NativeMark == "" && bytes.HasPrefix(base(name), []byte(nativePrefix)) {
				j.NativeMark = string(name)
			}
		}
		return true
	})
	if err != nil {
		return err
	}
	if manifests > 1 {
		return fmt.Errorf("%w: %d %s entries; which one the JVM reads is ambiguous", ErrFormat, manifests, ManifestName)
	}
	if manifest != nil {
		m, err := readManifest(d, manifest)
		if err != nil {
			return err
		}
		j.Manifest = &m
	}
	if props != nil {
		data, err := readEntry(d, props, maxProperties)
		if err != nil {
			return err
		}
		j.Properties = ParseProperties(data)
	}
	if j.Manifest == nil {
		return nil
	}
	core, ok := j.Manifest.Get(EmbeddedCoreAttr)
	if !ok || core == "" {
		return nil
	}
	if depth > 0 {
		return fmt.Errorf("%w: an embedded JAR declares an embedded core of its own (%s); only one level of nesting is allowed", ErrFormat, core)
	}
	j.EmbeddedCore = core
	e := find(jars, core)
	if e == nil && overflow {
		if e, err = findEntry(d, core); err != nil {
			return err
		}
	}
	if e != nil {
		j.Nested = readNested(d, e, j.Path+"!/"+core)
	}
	return nil
}

func find(es []entry, name string) *entry {
	for i := range es {
		if es[i].name == name {
			return &es[i]
		}
	}
	return nil
}

// findEntry walks the central directory again for one name.
func findEntry(d *directory, name string) (*entry, error) {
	var found *entry
	err := d.walk(func(n []byte, e *entry) bool {
		if string(n) == name {
			c := *e
			c.name = name
			found = &c
			return false
		}
		return true
	})
	return found, err
}

func base(name []byte) []byte {
	if i := bytes.LastIndexByte(name, '/'); i >= 0 {
		return name[i+1:]
	}
	return name
}

func isNative(name []byte) bool {
	b := base(name)
	return bytes.HasSuffix(b, []byte(".so")) || bytes.Contains(b, []byte(".so.")) ||
		bytes.HasSuffix(b, []byte(".dylib")) || bytes.HasSuffix(b, []byte(".dll")) ||
		bytes.HasSuffix(b, []byte(".jnilib"))
}

// open returns a reader of e's uncompressed bytes.
func open(d *directory, e *entry) (io.Reader, func(), error) {
	var sec io.Reader
	if e.packed <= smallEntry {
		data, err := d.packedData(e)
		if err != nil {
			return nil, nil, err
		}
		sec = bytes.NewReader(data)
	} else {
		off, err := d.dataOffset(e)
		if err != nil {
			return nil, nil, err
		}
		sec = io.NewSectionReader(d.r, off, int64(e.packed))
	}
	switch e.method {
	case methodStored:
		if e.packed != e.size {
			return nil, nil, fmt.Errorf("%w: stored entry %q has %d bytes packed but %d unpacked", ErrFormat, e.name, e.packed, e.size)
		}
		return sec, func() {}, nil
	case methodDeflated:
		fr := inflater(sec)
		return io.LimitReader(fr, int64(e.size)), func() { inflaters.Put(fr) }, nil
	default:
		return nil, nil, fmt.Errorf("%w: entry %q uses compression method %d; JARs use stored (0) or deflated (8)", ErrFormat, e.name, e.method)
	}
}

var inflaters sync.Pool

func inflater(r io.Reader) io.ReadCloser {
	if fr, ok := inflaters.Get().(io.ReadCloser); ok {
		if err := fr.(flate.Resetter).Reset(r, nil); err == nil {
			return fr
		}
	}
	return flate.NewReader(r)
}

func readManifest(d *directory, e *entry) (Manifest, error) {
	if e.size > maxDeclaredMF {
		return Manifest{}, fmt.Errorf("%w: %s declares %d bytes, more than the %d this tool reads", ErrManifest, e.name, e.size, maxDeclaredMF)
	}
	r, done, err := open(d, e)
	if err != nil {
		return Manifest{}, err
	}
	defer done()
	m, err := ParseManifest(r)
	if err != nil {
		return Manifest{}, fmt.Errorf("read %s: %w", e.name, err)
	}
	return m, nil
}

func readEntry(d *directory, e *entry, limit int64) ([]byte, error) {
	if e.size > uint64(limit) {
		return nil, fmt.Errorf("%w: %s declares %d bytes, more than the %d this tool reads", ErrFormat, e.name, e.size, limit)
	}
	r, done, err := open(d, e)
	if err != nil {
		return nil, err
	}
	defer done()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", e.name, err)
	}
	if uint64(len(data)) != e.size {
		return nil, fmt.Errorf("%w: %s holds %d bytes, its directory record says %d", ErrFormat, e.name, len(data), e.size)
	}
	return data, nil
}

// readNested reads the JAR stored in entry e: in place when stored, by
// streaming its local headers up to the manifest when deflated.
func readNested(d *directory, e *entry, path string) *JAR {
	n := &JAR{Path: path, Size: int64(e.size)}
	off, err := d.dataOffset(e)
	if err != nil {
		n.Err = err
		return n
	}
	switch e.method {
	case methodStored:
		if e.packed != e.size {
			n.Err = fmt.Errorf("%w: stored entry has %d bytes packed but %d unpacked", ErrFormat, e.packed, e.size)
			return n
		}
		n.read(io.NewSectionReader(d.r, off, int64(e.size)), int64(e.size), Options{}, 1)
	case methodDeflated:
		n.Streamed = true
		fr := inflater(io.NewSectionReader(d.r, off, int64(e.packed)))
		defer inflaters.Put(fr)
		b := &budget{left: maxBeforeManifest}
		m, err := streamManifest(bufio.NewReader(b.reader(io.LimitReader(fr, int64(e.size)))), b)
		if err != nil {
			n.Err = err
			return n
		}
		n.Manifest = m
		if m != nil {
			if core, ok := m.Get(EmbeddedCoreAttr); ok && core != "" {
				n.Err = fmt.Errorf("%w: an embedded JAR declares an embedded core of its own (%s); only one level of nesting is allowed", ErrFormat, core)
			}
		}
	default:
		n.Err = fmt.Errorf("%w: compression method %d; JARs use stored (0) or deflated (8)", ErrFormat, e.method)
	}
	return n
}

// maxBeforeManifest bounds what is inflated of a deflated nested JAR while
// looking for its manifest, which JAR tools write first: a decompression
// bomb, or a manifest buried behind the native libraries, is refused.
const maxBeforeManifest = 64 << 20

// errBuried is returned when the manifest is not within maxBeforeManifest.
var errBuried = fmt.Errorf("%w: embedded JAR: no manifest within the first %d MiB inflated", ErrFormat, maxBeforeManifest>>20)

// budget is what may still be inflated; every reader it hands out draws on it.
type budget struct{ left int64 }

func (b *budget) reader(r io.Reader) io.Reader { return &bounded{r: r, b: b} }

type bounded struct {
	r io.Reader
	b *budget
}

func (r *bounded) Read(p []byte) (int, error) {
	if r.b.left <= 0 {
		return 0, errBuried
	}
	if int64(len(p)) > r.b.left {
		p = p[:r.b.left]
	}
	n, err := r.r.Read(p)
	r.b.left -= int64(n)
	return n, err
}

// streamManifest reads a ZIP archive front to back through its local
// headers until it meets the manifest, and returns it (nil when the
// archive's entries end without one). Entries before the manifest are
// skipped: stored ones by their sizes, deflated ones by inflating them.
func streamManifest(r *bufio.Reader, b *budget) (*Manifest, error) {
	var h [lenLocal]byte
	for i := 0; ; i++ {
		if _, err := io.ReadFull(r, h[:4]); err != nil {
			return nil, truncated(err, "embedded JAR ends before its first entry")
		}
		switch binary.LittleEndian.Uint32(h[:]) {
		case sigLocal:
		case sigCentral, sigEnd:
			return nil, nil // past the last entry: no manifest
		default:
			return nil, fmt.Errorf("%w: embedded JAR: bad local header signature at entry %d", ErrFormat, i)
		}
		if _, err := io.ReadFull(r, h[4:]); err != nil {
			return nil, truncated(err, "embedded JAR ends inside a local header")
		}
		flags := binary.LittleEndian.Uint16(h[6:])
		method := binary.LittleEndian.Uint16(h[8:])
		packed := int64(binary.LittleEndian.Uint32(h[18:]))
		size := int64(binary.LittleEndian.Uint32(h[22:]))
		nameLen := int(binary.LittleEndian.Uint16(h[26:]))
		extraLen := int64(binary.LittleEndian.Uint16(h[28:]))
		name := make([]byte, nameLen)
		if _, err := io.ReadFull(r, name); err != nil {
			return nil, truncated(err, "embedded JAR ends inside a local header")
		}
		if _, err := io.CopyN(io.Discard, r, extraLen); err != nil {
			return nil, truncated(err, "embedded JAR ends inside a local header")
		}
		descriptor := flags&flagDescriptor != 0
		var body io.Reader
		switch method {
		case methodStored:
			if descriptor {
				return nil, fmt.Errorf("%w: embedded JAR entry %q is stored with a data descriptor; its length cannot be known when streaming", ErrFormat, name)
			}
			body = io.LimitReader(r, packed)
		case methodDeflated:
			body = b.reader(flate.NewReader(r)) // r is a ByteReader: inflation stops at the stream's end
			if !descriptor {
				body = io.LimitReader(body, size)
			}
		default:
			return nil, fmt.Errorf("%w: embedded JAR entry %q uses compression method %d", ErrFormat, name, method)
		}
		if len(name) == len(ManifestName) && bytes.EqualFold(name, []byte(ManifestName)) {
			if !descriptor && size > maxDeclaredMF {
				return nil, fmt.Errorf("%w: embedded %s declares %d bytes, more than the %d this tool reads", ErrManifest, name, size, maxDeclaredMF)
			}
			m, err := ParseManifest(body)
			if err != nil {
				return nil, fmt.Errorf("embedded JAR: read %s: %w", name, err)
			}
			return &m, nil
		}
		// Bounded: body draws on the budget of maxBeforeManifest bytes.
		if _, err := io.Copy(io.Discard, body); err != nil { //nolint:gosec // G110: bounded by budget
			if errors.Is(err, errBuried) {
				return nil, err
			}
			return nil, truncated(err, fmt.Sprintf("embedded JAR entry %q is damaged", name))
		}
		if descriptor {
			if err := skipDescriptor(r); err != nil {
				return nil, err
			}
		}
	}
}

// skipDescriptor skips a data descriptor: an optional signature, then CRC
// and two 32-bit sizes (ZIP64 descriptors are not written for JAR entries
// small enough to come before a manifest).
func skipDescriptor(r *bufio.Reader) error {
	sig, err := r.Peek(4)
	if err != nil {
		return truncated(err, "embedded JAR ends inside a data descriptor")
	}
	n := int64(12)
	if binary.LittleEndian.Uint32(sig) == 0x08074b50 {
		n = 16
	}
	if _, err := io.CopyN(io.Discard, r, n); err != nil {
		return truncated(err, "embedded JAR ends inside a data descriptor")
	}
	return nil
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s (truncated)", ErrFormat, what)
	}
	return fmt.Errorf("%s: %w", what, err)
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
				return "", nil, fmt.Errorf("dangling symbolic link: /%s does not exist", next)
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

func describeMode(m fs.FileMode) string {
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
