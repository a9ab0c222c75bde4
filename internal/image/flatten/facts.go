package flatten

import (
	"archive/tar"
	"bufio"
	"bytes"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"unicode/utf8"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Version is the format of layer facts; a cached record of another
// version is never read (it is in the key and in the record).
const Version = 12

// EntrypointPath is where a StreamFusion image's entrypoint is: a scan
// keeps it condensed (condenseEntrypoint), for the image guard.
const EntrypointPath = "/docker-entrypoint.sh"

// stampParts make the stamp cmd/entrypoint carries (its const stamp). The
// stamp is joined at run time so that this program's binary does not hold
// it whole and cannot pass for an entrypoint.
var stampParts = []string{"STREAMFUSION", "ENTRYPOINT", "CONTRACT=1"}

// Stamp is the stamp every StreamFusion entrypoint binary carries.
func Stamp() []byte { return []byte(strings.Join(stampParts, "/")) }

// Bounds on what one layer's facts hold.
const (
	maxSmall    = 1 << 20 // bytes kept of a small file (a release file, Flink's script)
	inMemoryJAR = 4 << 20 // a JAR up to this size is read from memory, a larger one from a spool file
)

// Node is one entry of a layer that admission or bake needs: directories
// and links (they decide where paths lead, and bake copies directories'
// owners), the wanted regular files and those that could hide a wanted
// directory.
type Node struct {
	Name    string    `json:"n"`
	Type    byte      `json:"t"` // tar type flag; a hard link is kept as an absolute symbolic link
	Mode    int64     `json:"m"`
	UID     int       `json:"u,omitempty"`
	GID     int       `json:"g,omitempty"`
	ModTime int64     `json:"mt,omitempty"`
	Link    string    `json:"l,omitempty"`
	Size    int64     `json:"s,omitempty"`
	Data    []byte    `json:"d,omitempty"`  // a small wanted file, at most maxSmall+1 bytes of it
	JAR     *JARFacts `json:"j,omitempty"`  // a file below lib, usrlib or plugins, read as a JAR
	Lib     *libFacts `json:"lb,omitempty"` // a C or C++ runtime library in the loader's search path
	Skipped bool      `json:"x,omitempty"`  // a regular file kept only for what it hides
	// Implied is a directory the layer has no entry for, holding files the
	// scan left out: the runtime creates it (or keeps a lower layer's), and
	// links through it must resolve.
	Implied bool `json:"i,omitempty"`
}

// Facts is what admission and bake need from one layer.
type Facts struct {
	Version   int      `json:"version"`
	DiffID    string   `json:"diffID"`
	Nodes     []Node   `json:"nodes"`
	Whiteouts []string `json:"whiteouts,omitempty"`
	Opaques   []string `json:"opaques,omitempty"`
}

// JARFacts is a payload.JAR in a form that can be stored: the manifest's
// main section as text, the error as its message.
type JARFacts struct {
	Size         int64                     `json:"size"`
	Err          string                    `json:"err,omitempty"`
	Entries      int                       `json:"entries"`
	Manifest     *manifestFacts            `json:"manifest,omitempty"`
	ClassMark    string                    `json:"classMark,omitempty"`
	MetaMark     string                    `json:"metaMark,omitempty"`
	NativeMark   string                    `json:"nativeMark,omitempty"`
	NativeCount  int                       `json:"nativeCount,omitempty"`
	Native       []string                  `json:"native,omitempty"`
	Logging      string                    `json:"logging,omitempty"`
	Services     []string                  `json:"services,omitempty"`
	Hadoop       bool                      `json:"hadoop,omitempty"`
	SLF4J        [2]bool                   `json:"slf4j,omitempty"` // SLF4JFactory, SLF4JProviders
	Log4j        [3]bool                   `json:"log4j,omitempty"` // Log4jToSLF4J, SLF4JToLog4j, SLF4JBinder
	Providers    []payload.ServiceProvider `json:"providers,omitempty"`
	Properties   map[string]string         `json:"properties,omitempty"`
	EmbeddedCore string                    `json:"embeddedCore,omitempty"`
	ELF          []payload.Native          `json:"elf,omitempty"`
	Nested       *JARFacts                 `json:"nested,omitempty"`
	Streamed     bool                      `json:"streamed,omitempty"`
	// NoProps is the read without the properties entry, when it differs
	// (a broken properties entry fails only the read that asks for it).
	NoProps *JARFacts `json:"noProps,omitempty"`
}

func toFacts(j *payload.JAR) *JARFacts {
	if j == nil {
		return nil
	}
	f := &JARFacts{Size: j.Size, Entries: j.Entries, ClassMark: j.ClassMark, MetaMark: j.MetaMark,
		NativeMark: j.NativeMark, NativeCount: j.NativeCount, Native: j.Native, Logging: j.Logging,
		Services: j.Services, Hadoop: j.Hadoop, SLF4J: [2]bool{j.SLF4JFactory, j.SLF4JProviders}, Log4j: [3]bool{j.Log4jToSLF4J, j.SLF4JToLog4j, j.SLF4JBinder}, Providers: j.Providers, Properties: j.Properties, EmbeddedCore: j.EmbeddedCore, Nested: toFacts(j.Nested), Streamed: j.Streamed, ELF: j.ELF}
	if j.Err != nil {
		f.Err = j.Err.Error()
	}
	if j.Manifest != nil {
		f.Manifest = &manifestFacts{Attrs: j.Manifest.Attributes(), Repeated: j.Manifest.Repeated}
	}
	return f
}

// manifestFacts is a manifest's main section as read: its attributes and
// the names given more than once. Kept as data, never as manifest text,
// which would have to be written back as the JVM reads it.
type manifestFacts struct {
	Attrs    map[string]string `json:"attrs"`
	Repeated []string          `json:"repeated,omitempty"`
}

// JAR returns the facts as the JAR at p (absolute), reached through a link
// when target (absolute) differs.
func (f *JARFacts) JAR(p, target string, props bool) *payload.JAR {
	if !props && f.NoProps != nil {
		return f.NoProps.JAR(p, target, props)
	}
	j := &payload.JAR{Path: p, Size: f.Size, Entries: f.Entries, ClassMark: f.ClassMark, MetaMark: f.MetaMark,
		NativeMark: f.NativeMark, NativeCount: f.NativeCount, Native: f.Native, Logging: f.Logging,
		Services: f.Services, Hadoop: f.Hadoop, SLF4JFactory: f.SLF4J[0], SLF4JProviders: f.SLF4J[1], Log4jToSLF4J: f.Log4j[0], SLF4JToLog4j: f.Log4j[1], SLF4JBinder: f.Log4j[2], Providers: f.Providers, EmbeddedCore: f.EmbeddedCore, Streamed: f.Streamed, ELF: f.ELF}
	if target != p {
		j.Target = target
	}
	if f.Err != "" {
		j.Err = errors.New(f.Err)
	}
	if props {
		j.Properties = f.Properties
	}
	if f.Manifest != nil {
		m := payload.ManifestOf(f.Manifest.Attrs, f.Manifest.Repeated)
		j.Manifest = &m
	}
	if f.Nested != nil {
		j.Nested = f.Nested.JAR(p+"!/"+f.EmbeddedCore, p+"!/"+f.EmbeddedCore, false)
	}
	return j
}

// Selection says what a scan keeps: files below the payload directories
// are read as JARs; a few other files are kept whole or as stand-ins.
type Selection struct {
	dirs  []string        // payload directories, relative, with a trailing slash
	small map[string]bool // files kept whole
	jars  map[string]bool // files outside dirs read as JARs: targets of links in them

	// native is the image's platform (linux-x86_64): the ELF facts of
	// the payloads' libraries for it are read (payload.Options.Native),
	// and the loader's search path is kept (native.go).
	native  string
	libDirs map[string]bool // directories whose libraries are kept
}

// NewSelection is what the first reading of an image with settings c on
// arch keeps: the payload directories (lib, usrlib beside it, plugins),
// the entrypoint, Flink's script and config files, and the native
// selection of the loader's search path.
func NewSelection(c settings.Config, arch string) *Selection {
	rel := func(p string) string { return strings.TrimPrefix(path.Clean("/"+p), "/") + "/" }
	native, libDirs := nativeSelection(c, arch)
	return &Selection{
		native: native, libDirs: libDirs,
		dirs: []string{rel(c.LibDir), rel(path.Join(path.Dir(path.Clean(c.LibDir)), "usrlib")), rel(c.PluginsDir)},
		small: map[string]bool{
			strings.TrimPrefix(EntrypointPath, "/"): true,
			strings.TrimPrefix(c.Original, "/"):     true,
			// Flink's config files: env.java.home in them chooses the JDK.
			strings.TrimPrefix(path.Join("/", c.ConfDir, "config.yaml"), "/"):     true,
			strings.TrimPrefix(path.Join("/", c.ConfDir, "flink-conf.yaml"), "/"): true,
		},
	}
}

// key names the selection in cache keys.
func (s *Selection) key() string {
	var small []string
	for k := range s.small {
		small = append(small, k)
	}
	sort.Strings(small)
	jars := make([]string, 0, len(s.jars))
	for k := range s.jars {
		jars = append(jars, k)
	}
	sort.Strings(jars)
	sum := sha256.Sum256([]byte(strings.Join(s.dirs, "\x00") + "\x01" + strings.Join(small, "\x00") + "\x01" + strings.Join(jars, "\x00") +
		"\x01" + s.native + "\x01" + strings.Join(slices.Sorted(maps.Keys(s.libDirs)), "\x00")))
	return hex.EncodeToString(sum[:8])
}

func (s *Selection) keep(name string) (k fileUse, asJAR bool) {
	if len(s.dirs) > 1 && strings.HasPrefix(name, s.dirs[1]) && strings.HasSuffix(name, ".sql") { // dirs end with a slash
		return contents, false // a job's SQL in usrlib (host.gatherSQL reads it)
	}
	if s.inDirs(name) || s.jars[name] {
		return contents, true
	}
	if s.small[name] || isLdConf(name) {
		return contents, false
	}
	if s.libDirs[path.Dir(name)] && strings.Contains(path.Base(name), ".so") {
		return presence, false
	}
	base := path.Base(name)
	switch {
	case base == "release":
		return contents, false
	case base == "java", base == "locale-archive", base == "LC_COLLATE",
		strings.HasPrefix(base, "ld-linux"), strings.HasPrefix(base, "ld-musl-"):
		return presence, false
	}
	return skip, false
}

// hides reports whether a regular file at name would hide a payload
// directory (it stands where one of its parents should be).
func (s *Selection) hides(name string) bool {
	for _, d := range s.dirs {
		if strings.HasPrefix(d, name+"/") {
			return true
		}
	}
	return false
}

// scanner reads layers; it keeps one buffer and one spool file.
type scanner struct {
	ctx     context.Context // nil: never cancelled
	sel     *Selection
	tempDir string
	buf     []byte
	spool   *os.File
	implied map[string]bool // directories of the files the scan left out
	keep    Keeper          // when set, given every JAR read (the deep check's copies)
	layer   int             // the index of the layer scanned, for keep
	budget  *spool.Budget   // reserved for the spool file's bytes while it holds a JAR
	sqlKept int             // usrlib's SQL files kept from the layer, at most maxSQLKept
}

// maxSQLKept bounds the SQL files of usrlib one layer's facts keep (each
// at most maxSmall bytes): host reads at most 64 of them.
const maxSQLKept = 64

// context is the scan's context (never cancelled without one).
func (s *scanner) context() context.Context {
	if s.ctx == nil {
		return context.Background()
	}
	return s.ctx
}

func (s *scanner) close() {
	if s.spool != nil {
		s.spool.Close()
		s.spool = nil
	}
}

// Decompress returns the uncompressed stream of a layer blob: gzip, zstd
// or plain tar, told apart by their first bytes.
func Decompress(r io.Reader) (io.Reader, func(), error) {
	br := bufio.NewReaderSize(r, 64<<10)
	magic, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, nil, err
	}
	switch {
	case bytes.HasPrefix(magic, []byte{0x1f, 0x8b}):
		zr, err := gzip.NewReader(br)
		if err != nil {
			return nil, nil, err
		}
		return zr, func() { _ = zr.Close() }, nil
	case bytes.HasPrefix(magic, []byte{0x28, 0xb5, 0x2f, 0xfd}):
		zr, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, nil, err
		}
		return zr, zr.Close, nil
	}
	return br, func() {}, nil
}

// scan reads one layer blob front to back, once. diffID, when given, is
// checked against the uncompressed bytes.
func (s *scanner) scan(blob io.Reader, diffID string) (*Facts, error) {
	u, done, err := Decompress(blob)
	if err != nil {
		return nil, fmt.Errorf("decompress: %w", err)
	}
	defer done()
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(u, h))
	lf := &Facts{Version: Version, DiffID: diffID}
	s.implied = map[string]bool{}
	for hd, err := range Entries(tr) {
		if err != nil {
			return nil, err
		}
		if s.ctx != nil && s.ctx.Err() != nil {
			return nil, s.ctx.Err()
		}
		if err := s.entry(lf, tr, hd); err != nil {
			return nil, err
		}
	}
	s.addImplied(lf)
	// The rest (the padding tar writes such as GNU tar and mmdebstrap add
	// after the end-of-archive blocks) counts for the digest too.
	if _, err := io.Copy(h, u); err != nil {
		return nil, fmt.Errorf("read tar: %w", err)
	}
	if diffID != "" {
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
			return nil, fmt.Errorf("%w: the layer's content is %s, its config says %s", ErrLayer, got, diffID)
		}
	}
	return lf, nil
}

// addImplied adds a node for each directory that holds files the scan
// left out and that the layer has no entry for (a tar need not list
// directories), so that the merged view has it.
func (s *scanner) addImplied(lf *Facts) {
	for _, n := range lf.Nodes {
		delete(s.implied, n.Name)
	}
	for _, d := range slices.Sorted(maps.Keys(s.implied)) {
		lf.Nodes = append(lf.Nodes, Node{Name: d, Type: tar.TypeDir, Mode: 0o755, Implied: true})
	}
}

// entry adds one tar entry of the layer to its facts: what the selection
// keeps of it (its JAR facts, a small file's bytes, a library's presence),
// or that it hides a payload directory.
//
// It is long because it is one case per kind of entry and per use the
// selection makes of it.
func (s *scanner) entry(lf *Facts, tr *tar.Reader, h *tar.Header) error {
	name, err := Clean(h.Name)
	if err != nil {
		return err
	}
	if !utf8.ValidString(name) {
		return s.notUTF8(name)
	}
	dir, base := path.Split(name)
	dir = strings.TrimSuffix(dir, "/")
	if base == ".wh..wh..opq" {
		lf.Opaques = append(lf.Opaques, cmp.Or(dir, "."))
		return nil
	}
	if target, ok := strings.CutPrefix(base, ".wh."); ok {
		lf.Whiteouts = append(lf.Whiteouts, path.Join(cmp.Or(dir, "."), target))
		return nil
	}
	if name == "." {
		return nil
	}
	n := Node{Name: name, Type: h.Typeflag, Mode: h.Mode, UID: h.Uid, GID: h.Gid, ModTime: h.ModTime.Unix()}
	switch h.Typeflag {
	case tar.TypeDir, tar.TypeFifo, tar.TypeChar, tar.TypeBlock:
	case tar.TypeSymlink:
		n.Link = h.Linkname
	case tar.TypeLink:
		// A hard link reads as its target: keep it as an absolute link.
		target, err := Clean(h.Linkname)
		if err != nil {
			return err
		}
		n.Type, n.Link = tar.TypeSymlink, "/"+target
	case tar.TypeReg:
		n.Size = h.Size
		keep, asJAR := s.sel.keep(name)
		switch {
		case keep == skip:
			if !s.sel.hides(name) {
				if dir != "" {
					s.implied[strings.TrimSuffix(dir, "/")] = true
				}
				return nil
			}
			n.Skipped = true
		case asJAR:
			if h.Size > maxKeptFile {
				return fmt.Errorf("%w: /%s is %d bytes, more than this tool reads", ErrLayer, name, h.Size)
			}
			j, err := s.readJAR(tr, h.Size, "/"+name)
			if err != nil {
				return fmt.Errorf("read /%s: %w", name, err)
			}
			n.JAR = j
		case keep == presence && s.sel.libDirs[strings.TrimSuffix(dir, "/")] && runtimeLib(base):
			lib, err := s.readLib(tr, h.Size)
			if err != nil {
				return fmt.Errorf("read /%s: %w", name, err)
			}
			n.Lib = lib
		case keep == contents && name == strings.TrimPrefix(EntrypointPath, "/"):
			data, err := condenseEntrypoint(tr)
			if err != nil {
				return fmt.Errorf("read /%s: %w", name, err)
			}
			n.Data = data
		case keep == contents && strings.HasSuffix(name, ".sql") && s.sqlKept >= maxSQLKept:
			return nil // beyond the bound: not kept, as host reads no more
		case keep == contents:
			if strings.HasSuffix(name, ".sql") {
				s.sqlKept++
			}
			data, err := io.ReadAll(io.LimitReader(tr, maxSmall+1))
			if err != nil {
				return fmt.Errorf("read /%s: %w", name, err)
			}
			n.Data = data
		}
	default:
		return nil
	}
	lf.Nodes = append(lf.Nodes, n)
	return nil
}

// notUTF8 judges an entry whose name is not UTF-8, which cannot be a path
// of the view (fs.FS names are UTF-8). Below lib, usrlib or plugins it
// could hide a JAR the JVM loads: refused; elsewhere nothing the check
// reads can reach it, and it is left out.
func (s *scanner) notUTF8(name string) error {
	for _, d := range s.sel.dirs {
		if strings.HasPrefix(name+"/", d) {
			return fmt.Errorf("%w: %q is not valid UTF-8, below %s: the JARs there cannot all be named", ErrLayer, name, strings.TrimSuffix(d, "/"))
		}
	}
	return nil
}

// condenseEntrypoint reads /docker-entrypoint.sh. A small file (Flink's
// script, which bake moves aside) is kept whole. A larger one (the
// entrypoint binary, megabytes) is kept as what the guard reads of it
// (Guard, CheckEntrypoint): its first 64 bytes (the ELF header, with the
// machine), followed by the entrypoint's stamp when the file carries it
// anywhere.
func condenseEntrypoint(r io.Reader) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxSmall+1))
	if err != nil || len(data) <= maxSmall {
		return data, err
	}
	stamp := Stamp()
	found := bytes.Contains(data, stamp)
	carry := append([]byte(nil), data[len(data)-len(stamp)+1:]...) // for a stamp across reads
	buf := make([]byte, 64<<10)
	for !found {
		n, err := r.Read(buf)
		if n > 0 {
			joined := append(carry, buf[:n]...)
			found = bytes.Contains(joined, stamp)
			carry = append(carry[:0], joined[max(0, len(joined)-len(stamp)+1):]...)
		}
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	head := append([]byte(nil), data[:64]...)
	if found {
		head = append(head, stamp...)
	}
	return head, nil
}

// readJAR reads a JAR from the layer's stream: from memory when small,
// else spooled to a temporary file (a JAR's central directory is at its
// end, and payload reads it at random).
func (s *scanner) readJAR(r io.Reader, size int64, p string) (*JARFacts, error) {
	var ra io.ReaderAt
	if size <= inMemoryJAR {
		if int64(cap(s.buf)) < size {
			s.buf = make([]byte, size, inMemoryJAR)
		}
		b := s.buf[:size]
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, err
		}
		ra = bytes.NewReader(b)
	} else {
		release, err := s.budget.Reserve(s.context(), size, p)
		if err != nil {
			return nil, err
		}
		defer release()
		if s.spool == nil {
			f, err := os.CreateTemp(s.tempDir, "streamfusion-jar-*")
			if err != nil {
				return nil, fmt.Errorf("spool: %w", err)
			}
			// Unlinked at once: nothing is left behind, whatever ends the run.
			_ = os.Remove(f.Name())
			s.spool = f
		}
		if err := s.spool.Truncate(0); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		if _, err := s.spool.Seek(0, io.SeekStart); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		// Empty again when the JAR is read, so that the reservation
		// released then matches what is on disk.
		defer func() { _ = s.spool.Truncate(0) }()
		if _, err := io.CopyN(s.spool, &CtxReader{Ctx: s.context(), R: r}, size); err != nil {
			return nil, fmt.Errorf("spool: %w", err)
		}
		ra = s.spool
	}
	if s.keep != nil {
		if err := s.keep.Keep(s.context(), s.layer, strings.TrimPrefix(p, "/"), ra, size); err != nil {
			return nil, err
		}
	}
	return JARFactsOf(ra, size, p, s.sel.native), nil
}

// JARFactsOf reads the JAR in ra, size bytes long, as the JAR at p.
func JARFactsOf(ra io.ReaderAt, size int64, p, native string) *JARFacts {
	j := payload.Read(ra, size, p, payload.Options{Properties: true, Native: native, Providers: true})
	f := toFacts(j)
	if j.Err != nil {
		if k := payload.Read(ra, size, p, payload.Options{Native: native, Providers: true}); (k.Err == nil) != (j.Err == nil) || k.Err.Error() != j.Err.Error() {
			f.NoProps = toFacts(k)
		}
	}
	return f
}
