package payload

import (
	"bytes"
	"compress/flate"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"slices"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Entry names and attributes this package looks for.
const (
	ManifestName      = "META-INF/MANIFEST.MF"
	VersionProperties = ".flink-runtime.version.properties"
	EmbeddedCoreAttr  = "StreamFusion-Embedded-Core"
	platformsAttr     = "StreamFusion-Native-Platforms"
	classPrefix       = "tech/streamfusion/"
	metaPrefix        = "META-INF/streamfusion/"
	nativePrefix      = "libstreamfusion"
	loggingPrefix     = "org/slf4j/"
	servicesPrefix    = "META-INF/services/"
	hadoopMark        = "org/apache/hadoop/fs/FileSystem.class"
	slf4jFactory      = "org/slf4j/LoggerFactory.class"
	slf4jProviderSPI  = "org/slf4j/spi/SLF4JServiceProvider.class"
	slf4jBinder       = "org/slf4j/impl/StaticLoggerBinder.class"
	log4jToSLF4JClass = "org/apache/logging/slf4j/SLF4JProvider.class"
	slf4jToLog4jClass = "org/apache/logging/slf4j/Log4jLoggerFactory.class"
	// Log4jProviderService is the service the Log4j API finds its
	// implementation by (log4j-core's, or log4j-to-slf4j's).
	Log4jProviderService = "org.apache.logging.log4j.spi.Provider"
	keepServices         = 64
	maxDeclaredMF        = 16 << 20 // a manifest declaring more is refused unread
	maxProperties        = 64 << 10
	keepNative           = 8
	keepNestedCandidates = 64
)

// JAR is what one read learned about a JAR file. When Err is set, the file
// could not be read as a JAR and nothing else is meaningful.
type JAR struct {
	Path    string // absolute path; for a nested JAR "outer.jar!/entry"
	Target  string // where a symbolic link led, when Path is one
	Size    int64
	Err     error
	Entries int

	// Fingerprint is the JAR's fingerprint when the read asked for it
	// (Options.Fingerprint) and its directory could be read.
	Fingerprint Fingerprint

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

	// Services are the service interfaces the JAR's META-INF/services/
	// files name (the first 64, in directory order): what ServiceLoader
	// finds in it. Hadoop is set when the JAR holds Hadoop's
	// org/apache/hadoop/fs/FileSystem, which Flink's file system fallback
	// needs.
	Services []string
	Hadoop   bool
	// Providers are the classes the service files of ProviderServices
	// name, read when Options.Providers asks for them.
	Providers []ServiceProvider

	// SLF4JFactory is set when the JAR holds org/slf4j/LoggerFactory,
	// SLF4JProviders when it holds org/slf4j/spi/SLF4JServiceProvider: the
	// SLF4J 2 API, which finds its binding by ServiceLoader and ignores a
	// 1.x binding (StaticLoggerBinder, as Flink's log4j-slf4j-impl is).
	SLF4JFactory, SLF4JProviders bool
	// SLF4JBinder is set when the JAR holds SLF4J 1.x's binding,
	// org/slf4j/impl/StaticLoggerBinder (log4j-slf4j-impl's, Logback
	// 1.2's): the 1.7 API binds the first on the class path.
	SLF4JBinder bool
	// Log4jToSLF4J is set when the JAR provides the Log4j API's SLF4J
	// provider (log4j-to-slf4j: org/apache/logging/slf4j/SLF4JProvider,
	// and a META-INF/services/org.apache.logging.log4j.spi.Provider
	// among its first service files); SLF4JToLog4j when it holds Log4j's
	// SLF4J binding (log4j-slf4j-impl or log4j-slf4j2-impl:
	// org/apache/logging/slf4j/Log4jLoggerFactory).
	Log4jToSLF4J, SLF4JToLog4j bool

	// ELF are the facts of the native libraries read for Options.Native,
	// in directory order; nil when not asked for or none qualify.
	ELF []Native

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

// ManifestValue is a main attribute of the JAR's manifest, "" when it has
// none (or no manifest, or j is nil).
func (j *JAR) ManifestValue(name string) string {
	if j == nil || j.Manifest == nil {
		return ""
	}
	s, _ := j.Manifest.Get(name)
	return s
}

// Options say which optional parts of a JAR a read looks at.
type Options struct {
	Properties  bool // read .flink-runtime.version.properties (flink-dist)
	Fingerprint bool // take the JAR's Fingerprint (a baked deep verdict is compared)

	// Native, a platform as StreamFusion-Native-Platforms spells it
	// (linux-x86_64), asks for the ELF facts (JAR.ELF) of the .so
	// libraries of a JAR whose StreamFusion-Native-Platforms lists it,
	// except those whose path names another platform; a nested core's are
	// never read (only its manifest is judged). The libraries are
	// inflated one at a time, within MaxNativeBytes and NativeBudget.
	Native string

	// Providers asks for the providers of ProviderServices (JAR.Providers):
	// the image tooling keeps them in its facts, having no JAR bytes later.
	Providers bool

	known *known // a manifest another reading of the same bytes already read
}

// known is a manifest read by streaming, with where its entry's local
// header sits and its sizes: when the central directory names the same
// entry with the same sizes, JarFile would read the same bytes.
type known struct {
	header       int64
	method       uint16
	packed, size uint64
	manifest     *Manifest
}

func (k *known) same(d *directory, e *entry) bool {
	return k != nil && e != nil && d.base+e.header == k.header && e.method == k.method && e.packed == k.packed && e.size == k.size
}

// Open reads the JAR at name in fsys, a file system rooted at "/". It
// follows symbolic links within fsys and refuses, without opening them,
// anything that is not a regular file: FIFOs, sockets, devices, directories
// reached through a link, dangling links and link loops.
func Open(fsys fs.FS, name string, opt Options) *JAR {
	j := &JAR{Path: "/" + name}
	f, target, info, err := rootfs.OpenRegular(fsys, name)
	if err != nil {
		j.Err = err
		return j
	}
	defer f.Close()
	if target != name {
		j.Target = "/" + target
	}
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

// scan reads the JAR as java.util.jar.JarFile does: its central directory
// (the marks are collected on the way), then the manifest JarFile picks,
// flink-dist's version resource when asked for, and the nested core the
// manifest names.
func (j *JAR) scan(r io.ReaderAt, size int64, opt Options, depth int) error {
	d, err := openDirectory(r, size)
	if err != nil {
		return err
	}
	var c collector
	if err := d.walk(func(name []byte, e *entry) bool { j.collect(&c, name, e, opt); return true }); err != nil {
		return err
	}
	j.Log4jToSLF4J = c.log4jToSLF4J && slices.Contains(j.Services, Log4jProviderService)
	if opt.Fingerprint && depth == 0 {
		if j.Fingerprint, err = d.fingerprint(); err != nil {
			return err
		}
	}
	if m := c.manifest; opt.known.same(d, m) {
		j.Manifest = opt.known.manifest
	} else if m != nil {
		data, err := entryBytes(d, m, maxDeclaredMF)
		if err != nil {
			return fmt.Errorf("read %s: %w", m.name, err)
		}
		man, err := parseManifest(data)
		if err != nil {
			return fmt.Errorf("read %s: %w", m.name, err)
		}
		j.Manifest = &man
	}
	if c.props != nil {
		data, err := entryBytes(d, c.props, maxProperties)
		if err != nil {
			return fmt.Errorf("read %s: %w", VersionProperties, err)
		}
		j.Properties = ParseProperties(data)
	}
	if len(c.elf) > 0 && depth == 0 && j.Manifest != nil && j.Manifest.lists(platformsAttr, opt.Native) {
		j.readNatives(d, c.elf)
	}
	if len(c.services) > 0 && depth == 0 {
		j.readProviders(d, c.services, c.factories)
	}
	return j.resolveNested(d, &c, depth)
}

// collector is what the directory walk keeps besides the marks: the
// manifest candidates, the version resource and the nested JARs.
type collector struct {
	manifest *entry  // the last entry named META-INF/MANIFEST.MF in any case
	props    *entry  // .flink-runtime.version.properties
	jars     []entry // candidates for the embedded core
	overflow bool    // more candidates than kept
	elf      []entry // native libraries to read for Options.Native
	services []entry // service files of ProviderServices, for Options.Providers
	// log4jToSLF4J: the JAR holds log4j-to-slf4j's provider class
	// (JAR.Log4jToSLF4J when its service file is there too)
	log4jToSLF4J bool
	// factories are the entries named *SystemFactory.class and
	// *ReporterFactory.class (the first keepFactories), where the
	// providers' classes are looked up before a second walk of the
	// directory.
	factories map[string]*entry
}

func keep(name []byte, e *entry) *entry {
	k := *e
	k.name = string(name)
	return &k
}

// collect looks at one directory record. Most entries are classes: it
// decides by the first and last bytes before comparing anything longer.
func (j *JAR) collect(c *collector, name []byte, e *entry, opt Options) {
	j.Entries++
	if len(name) == 0 {
		return
	}
	switch name[0] {
	case 'M', 'm':
		switch {
		case len(name) == len(ManifestName) && bytes.EqualFold(name, []byte(ManifestName)):
			c.manifest = keep(name, e) // JarFile reads the last one, whatever its case
		case j.MetaMark == "" && len(name) > len(metaPrefix) && bytes.EqualFold(name[:len(metaPrefix)], []byte(metaPrefix)):
			j.MetaMark = string(name)
		case len(name) > len(servicesPrefix) && bytes.HasPrefix(name, []byte(servicesPrefix)) && name[len(name)-1] != '/':
			if len(j.Services) < keepServices {
				j.Services = append(j.Services, string(name[len(servicesPrefix):]))
			}
			if opt.Providers && slices.Contains(ProviderServices, string(name[len(servicesPrefix):])) {
				c.services = append(c.services, *keep(name, e))
			}
		}
	case 't':
		if j.ClassMark == "" && len(name) > len(classPrefix) && bytes.HasPrefix(name, []byte(classPrefix)) {
			j.ClassMark = string(name)
		}
	case 'o':
		if j.Logging == "" && len(name) > len(loggingPrefix) && bytes.HasPrefix(name, []byte(loggingPrefix)) {
			j.Logging = string(name)
		}
		switch string(name) {
		case hadoopMark:
			j.Hadoop = true
		case slf4jFactory:
			j.SLF4JFactory = true
		case slf4jProviderSPI:
			j.SLF4JProviders = true
		case log4jToSLF4JClass:
			c.log4jToSLF4J = true
		case slf4jToLog4jClass:
			j.SLF4JToLog4j = true
		case slf4jBinder:
			j.SLF4JBinder = true
		}
	case '.':
		if opt.Properties && string(name) == VersionProperties {
			c.props = keep(name, e)
		}
	}
	switch last := name[len(name)-1]; {
	case last == 's' && opt.Providers && (bytes.HasSuffix(name, []byte("SystemFactory.class")) || bytes.HasSuffix(name, []byte("ReporterFactory.class"))):
		if c.factories == nil {
			c.factories = map[string]*entry{}
		}
		if len(c.factories) < keepFactories {
			c.factories[string(name)] = keep(name, e)
		}
	case last == 's' || last == '/':
		// .class files and directories: nothing more to look at.
	case last == 'r' && bytes.HasSuffix(name, []byte(".jar")):
		if len(c.jars) < keepNestedCandidates {
			c.jars = append(c.jars, *keep(name, e))
		} else {
			c.overflow = true
		}
	case isNative(name):
		j.NativeCount++
		if len(j.Native) < keepNative {
			j.Native = append(j.Native, string(name))
		}
		if j.NativeMark == "" && bytes.HasPrefix(base(name), []byte(nativePrefix)) {
			j.NativeMark = string(name)
		}
		if opt.Native != "" && len(c.elf) < keepELF && isELFName(name) && !PlatformMismatch(string(name), opt.Native) {
			c.elf = append(c.elf, *keep(name, e))
		}
	}
}

// resolveNested reads the core the manifest's StreamFusion-Embedded-Core
// names, when it does.
func (j *JAR) resolveNested(d *directory, c *collector, depth int) error {
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
	e := find(c.jars, core)
	if e == nil && c.overflow {
		var err error
		if e, err = findEntry(d, core); err != nil {
			return err
		}
	}
	if e != nil {
		j.Nested = readNested(d, e, j.Path+"!/"+core)
	}
	return nil
}

// find returns the last candidate named name, the one JarFile's lookup finds.
func find(es []entry, name string) *entry {
	for i := len(es) - 1; i >= 0; i-- {
		if es[i].name == name {
			return &es[i]
		}
	}
	return nil
}

// findEntry walks the central directory again for the last entry of a name.
func findEntry(d *directory, name string) (*entry, error) {
	var found *entry
	err := d.walk(func(n []byte, e *entry) bool {
		if string(n) == name {
			found = keep(n, e)
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

// open returns a reader of e's uncompressed bytes as JarFile gives them:
// the compressed size's worth of data, inflated when deflated; neither the
// sizes nor the CRC are checked on the way.
func open(d *directory, e *entry) (io.Reader, func(), error) {
	var sec io.Reader
	if e.packed <= smallEntry {
		data, _, err := d.packedData(e, nil)
		if err != nil {
			return nil, nil, err
		}
		sec = bytes.NewReader(data)
	} else {
		off, err := d.dataStart(e, nil)
		if err != nil {
			return nil, nil, err
		}
		sec = io.NewSectionReader(d.r, off, d.avail(e, off))
	}
	if e.method == methodStored {
		return sec, func() {}, nil
	}
	fr := inflater(sec)
	return fr, func() { inflaters.Put(fr) }, nil
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

// entryBytes reads a small entry as JarFile reads its manifest: the size
// its directory record declares, exactly (more data is not read, less is
// an error), or everything up to limit when it declares more than 64 KiB.
func entryBytes(d *directory, e *entry, limit uint64) ([]byte, error) {
	if e.size > limit {
		return nil, fmt.Errorf("%w: %s declares %d bytes, more than the %d this tool reads", ErrFormat, e.name, e.size, limit)
	}
	r, done, err := open(d, e)
	if err != nil {
		return nil, err
	}
	defer done()
	if e.size <= 0xffff {
		data := make([]byte, e.size)
		if n, err := io.ReadFull(r, data); err != nil {
			return nil, truncated(err, fmt.Sprintf("%s holds %d bytes, its directory record says %d", e.name, n, e.size))
		}
		return data, nil
	}
	data, err := io.ReadAll(io.LimitReader(r, int64(limit)+1))
	if err != nil {
		return nil, truncated(err, fmt.Sprintf("%s is damaged", e.name))
	}
	if uint64(len(data)) != e.size {
		return nil, fmt.Errorf("%w: %s holds %d bytes, its directory record says %d", ErrFormat, e.name, len(data), e.size)
	}
	return data, nil
}

func truncated(err error, what string) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return fmt.Errorf("%w: %s (truncated)", ErrFormat, what)
	}
	return fmt.Errorf("%s: %w", what, err)
}
