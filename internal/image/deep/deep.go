package deep

import (
	"archive/tar"
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"
	"sync"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/memfs"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Bounds on what the deep check reads of one image. A hostile image (a
// huge JAR, thousands of JARs) is refused with ErrLimit, never read
// into memory: the copies the first reading keeps stop at maxDeepBytes and
// maxDeepJARs, and the JARs the check would open are counted against all
// three bounds, from their facts, before any is opened or read again. The
// real Flink 2.2.0 lib is 15 JARs, 267 MB and 55,466 central directory
// entries (flink-dist 35,813); the bounds leave room for large fat-JAR libs
// and stay within what one machine holds: the bytes go to disk, the class
// indexes (about 150 bytes an entry) stay in memory.
const (
	maxDeepJARs    = 4096
	maxDeepBytes   = 8 << 30 // on disk, in the private temporary directory
	maxDeepEntries = 1 << 21 // central directory entries indexed: ~300 MB of indexes at most
)

// ErrLimit marks an image (or job JARs) larger than the deep check reads.
var ErrLimit = errors.New("too large for the deep check")

// JobJAR is a JAR file on this machine placed into the image's usrlib
// ($FLINK_HOME/usrlib/Name, beside lib) for the check only, as a session
// job's JAR is loaded by Flink's user-code class loader: child-first over
// lib, except the parent-first patterns. Name is a plain *.jar file name;
// Path is the file to read. A JAR of the image at the same place is
// replaced by it.
type JobJAR struct {
	Name string
	Path string
}

// FS is the merged view with the bytes of the JARs the deep check
// reads: opening (or describing) one of them answers from its copy on
// disk, everything else from the view's stand-ins. host's deep gathering
// opens JARs through it with payload.OpenArchive, as it opens a
// container's.
type FS struct {
	memfs.FS
	files map[string]diskFile // resolved name -> its bytes
}

type diskFile struct {
	path    string
	size    int64
	release func() // gives back the file's reservation of the budget; nil: none
}

// drop removes a kept file early and releases its reservation.
func (f diskFile) drop() {
	_ = os.Remove(f.path)
	if f.release != nil {
		f.release()
	}
}

var _ fs.ReadLinkFS = (*FS)(nil)

// Copies keeps, while the layers are read for their facts, a copy of
// every JAR read (a layer's first entry of a name, the one the merged view
// keeps) in a private temporary directory, so that the deep check reads
// again only the layers the cache answered. It keeps at most maxDeepBytes
// and maxDeepJARs; what it did not keep is read again, and bounded then.
// Verify and Bake make one when the check is deep and remove its
// directory, with every copy in it, before they return.
type Copies struct {
	dir      string
	budget   *spool.Budget
	mu       sync.Mutex
	files    map[copyKey]diskFile // path "" while being written
	bytes    int64
	releases []func() // the budget's reservations of the files below dir
}

type copyKey struct {
	layer int
	name  string
}

// NewCopies makes a private directory below tempDir ("": os.TempDir)
// for the copies, each reserved of budget (nil: unbounded) before it is
// written.
func NewCopies(tempDir string, budget *spool.Budget) (*Copies, error) {
	dir, err := os.MkdirTemp(tempDir, "streamfusion-deep-*")
	if err != nil {
		return nil, fmt.Errorf("the deep check's temporary directory: %w", err)
	}
	return &Copies{dir: dir, budget: budget, files: map[copyKey]diskFile{}}, nil
}

// Remove deletes the directory and every copy in it, and releases their
// reservations of the budget.
func (k *Copies) Remove() {
	if k == nil {
		return
	}
	_ = os.RemoveAll(k.dir)
	k.mu.Lock()
	releases := k.releases
	k.releases = nil
	k.mu.Unlock()
	for _, r := range releases {
		r()
	}
}

// reserve reserves size bytes of the budget for a copy below the
// copies' directory, released by remove (or earlier by the copy's drop).
func (k *Copies) reserve(ctx context.Context, size int64, what string) (func(), error) {
	release, err := k.budget.Reserve(ctx, size, what)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.releases = append(k.releases, release)
	k.mu.Unlock()
	return release, nil
}

// Keep copies the JAR name of layer from ra, size bytes long (a
// flatten.Keeper).
func (k *Copies) Keep(ctx context.Context, layer int, name string, ra io.ReaderAt, size int64) error {
	if k == nil {
		return nil
	}
	key := copyKey{layer, name}
	k.mu.Lock()
	if _, ok := k.files[key]; ok || k.bytes+size > maxDeepBytes || len(k.files) >= maxDeepJARs {
		k.mu.Unlock()
		return nil
	}
	k.bytes += size
	k.files[key] = diskFile{}
	k.mu.Unlock()
	release, err := k.reserve(ctx, size, "/"+name+" (the deep check's copy)")
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(k.dir, "jar-*")
	if err != nil {
		return fmt.Errorf("keep /%s for the deep check: %w", name, err)
	}
	_, err = io.Copy(f, &flatten.CtxReader{Ctx: ctx, R: io.NewSectionReader(ra, 0, size)})
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("keep /%s for the deep check: %w", name, err)
	}
	k.mu.Lock()
	k.files[key] = diskFile{path: f.Name(), size: size, release: release}
	k.mu.Unlock()
	return nil
}

// Open opens a copied JAR from disk, described as the image's file;
// anything else from the view.
func (d *FS) Open(name string) (fs.File, error) {
	df, ok := d.files[name]
	if !ok {
		return d.FS.Open(name)
	}
	info, err := d.Lstat(name)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(df.path)
	if err != nil {
		return nil, err
	}
	return &diskOpen{File: f, info: info}, nil
}

// Lstat describes name as the view does, with a copied JAR's size.
func (d *FS) Lstat(name string) (fs.FileInfo, error) {
	info, err := d.FS.Lstat(name)
	if df, ok := d.files[name]; ok && err == nil {
		return sizedInfo{info, df.size}, nil
	}
	return info, err
}

// Stat is Lstat of where name leads.
func (d *FS) Stat(name string) (fs.FileInfo, error) {
	target, _, err := rootfs.Resolve(d.FS, name)
	if err != nil {
		return nil, err
	}
	return d.Lstat(target)
}

// ReadFile reads a copied JAR from disk, anything else from the view.
func (d *FS) ReadFile(name string) ([]byte, error) {
	target, _, err := rootfs.Resolve(d.FS, name)
	if err != nil {
		return nil, err
	}
	if df, ok := d.files[target]; ok {
		return os.ReadFile(df.path)
	}
	return d.FS.ReadFile(name)
}

type sizedInfo struct {
	fs.FileInfo
	size int64
}

func (s sizedInfo) Size() int64 { return s.size }

// diskOpen is a copied JAR opened: the file on disk, described as the
// image's file.
type diskOpen struct {
	*os.File
	info fs.FileInfo
}

func (f *diskOpen) Stat() (fs.FileInfo, error) { return f.info, nil }

// deepJARs returns the names (links resolved) of the JARs the deep check
// may open: those host.List finds in lib and in usrlib beside it, as
// host.Gather lists them, and those of each plugin folder with a JAR that
// is not the host's own (the only folders it judges: host's openPlugins).
func deepJARs(v *flatten.View, libDir, pluginsDir string) []string {
	var out []string
	add := func(target string) {
		if !slices.Contains(out, target) {
			out = append(out, target)
		}
	}
	// The host's release as host.Gather takes it: the one flink-dist's,
	// "" when lib has none or several (then no plugin JAR is the host's).
	release, dists := "", 0
	for _, dir := range []string{libDir, path.Join(path.Dir(path.Clean(libDir)), "usrlib")} {
		for _, n := range listJARs(v, dir) {
			add(n.target)
			if dir == libDir && admission.IsDist(path.Base(n.name)) {
				j := v.JARs[n.target].JAR("/"+n.name, "/"+n.target, true)
				release, dists = cmp.Or(j.Properties["project.version"], j.ManifestValue("Implementation-Version")), dists+1
			}
		}
	}
	if dists != 1 {
		release = ""
	}
	if pluginsDir == "" {
		return out
	}
	folders := map[string][]string{}
	judged := map[string]bool{}
	for _, n := range listJARs(v, pluginsDir) {
		rest := strings.TrimPrefix(n.name, strings.TrimPrefix(path.Clean(pluginsDir), "/")+"/")
		folder, file, ok := strings.Cut(rest, "/")
		if !ok || strings.Contains(file, "/") {
			continue // straight in plugins/, or in a plugin's subfolder: never loaded
		}
		folders[folder] = append(folders[folder], n.target)
		judged[folder] = judged[folder] || !admission.HostOwn(v.JARs[n.target].JAR("/"+n.name, "/"+n.target, false), release)
	}
	for _, f := range slices.Sorted(maps.Keys(folders)) {
		if judged[f] {
			for _, t := range folders[f] {
				add(t)
			}
		}
	}
	return out
}

// listed is a JAR host.List finds: its name and the regular file it
// resolves to, with facts read.
type listed struct{ name, target string }

// listJARs lists the JARs of dir as host.List finds them, those that
// resolve to a regular file read for its facts.
func listJARs(v *flatten.View, dir string) []listed {
	names, _, err := host.List(v.FS, dir)
	if err != nil {
		return nil
	}
	var out []listed
	for _, n := range names {
		target, info, err := rootfs.Resolve(v.FS, n)
		if err != nil || !info.Mode().IsRegular() || v.JARs[target] == nil {
			continue
		}
		out = append(out, listed{n, target})
	}
	return out
}

// deepNames returns the image's JARs the deep check opens (deepJARs)
// less those a job JAR of the same name in usrlib replaces, and usrlib.
func deepNames(v *flatten.View, libDir, pluginsDir string, jobs []JobJAR) ([]string, string) {
	names := deepJARs(v, libDir, pluginsDir)
	usrlib := path.Join(path.Dir(path.Clean(libDir)), "usrlib")
	for _, j := range jobs {
		names = slices.DeleteFunc(names, func(n string) bool { return n == strings.TrimPrefix(path.Join(usrlib, j.Name), "/") })
	}
	return names, usrlib
}

// budget counts what the deep check reads against its bounds.
type budget struct{ jars, entries, bytes int64 }

func (b *budget) add(name string, size int64, entries int) error {
	b.jars++
	b.entries += int64(entries)
	b.bytes += size
	switch {
	case b.jars > maxDeepJARs:
		return fmt.Errorf("%w: more than %d JARs in lib, usrlib and plugins (at /%s)", ErrLimit, maxDeepJARs, name)
	case b.bytes > maxDeepBytes:
		return fmt.Errorf("%w: the JARs of lib, usrlib and plugins hold more than %d bytes (at /%s, %d bytes)", ErrLimit, int64(maxDeepBytes), name, size)
	case b.entries > maxDeepEntries:
		return fmt.Errorf("%w: the JARs of lib, usrlib and plugins hold more than %d entries (at /%s, %d entries)", ErrLimit, maxDeepEntries, name, entries)
	}
	return nil
}

// Read finds the bytes of the JARs the deep check reads in img, whose
// layers' facts are facts and merged view v, for an image with settings
// c: for each, the entry of the layer the merged view took it from (the
// topmost layer writing the path, what whiteouts left). The copies the
// first reading kept are used; the layers holding the others (those the
// cache answered) are read again, front to back, each checked against its
// diff ID again, and the wanted entries copied to the copies' directory.
// Copies nothing wants are deleted at once. The job JARs are placed in
// usrlib (they stay where they are on disk). progress, when set, is told
// of each layer read again (Op "classes").
//
// It is long because it is the reading's steps in order (which layer each
// JAR comes from, the bounds, the job JARs, the copies kept, the layers
// read again), each a loop.
func (k *Copies) Read(ctx context.Context, img v1.Image, facts []*flatten.Facts, v *flatten.View, c settings.Config, jobs []JobJAR, progress func(flatten.Update)) (*FS, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("read image config: %w", err)
	}
	layers, err := img.Layers()
	if err != nil {
		return nil, fmt.Errorf("list layers: %w", err)
	}
	if len(layers) != len(facts) || len(cfg.RootFS.DiffIDs) != len(layers) {
		return nil, fmt.Errorf("%w: %d layers, %d diff IDs, %d read", flatten.ErrLayer, len(layers), len(cfg.RootFS.DiffIDs), len(facts))
	}
	d := &FS{FS: v.FS, files: map[string]diskFile{}}
	// Which layer each kept node came from.
	from := map[*flatten.Node]int{}
	for i, lf := range facts {
		for k := range lf.Nodes {
			from[&lf.Nodes[k]] = i
		}
	}
	var b budget
	wanted := map[int]map[string]int64{} // layer -> name -> size
	names, usrlib := deepNames(v, c.LibDir, c.PluginsDir, jobs)
	for _, name := range names {
		n, ok := v.FS[name].Sys.(*flatten.Node)
		if !ok {
			continue
		}
		i, ok := from[n]
		if !ok {
			continue
		}
		if err := b.add(name, n.Size, v.JARs[name].Entries); err != nil {
			return nil, err
		}
		if wanted[i] == nil {
			wanted[i] = map[string]int64{}
		}
		wanted[i][name] = n.Size
	}
	if err := placeJobJARs(jobs, d, v, usrlib, &b); err != nil {
		return nil, err
	}
	k.mu.Lock()
	for key, df := range k.files {
		if size, ok := wanted[key.layer][key.name]; ok && df.path != "" && df.size == size {
			d.files[key.name] = df
			delete(wanted[key.layer], key.name)
			if len(wanted[key.layer]) == 0 {
				delete(wanted, key.layer)
			}
		} else if df.path != "" {
			df.drop()
		}
	}
	clear(k.files)
	k.mu.Unlock()
	for i := range layers {
		if wanted[i] == nil {
			continue
		}
		if err := k.copyJARs(ctx, d, layers, i, cfg.RootFS.DiffIDs[i].String(), wanted[i], progress); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// copyJARs reads layer i once and copies the wanted entries to d's directory.
//
// It is long because it is one streaming pass over the layer's tar (its
// progress, decompression, each wanted entry copied within the budget, the
// layer's digest and what it no longer holds checked after), in order.
func (k *Copies) copyJARs(ctx context.Context, d *FS, layers []v1.Layer, i int, diffID string, wanted map[string]int64, progress func(flatten.Update)) error {
	name := diffID
	if dg, err := layers[i].Digest(); err == nil {
		name = dg.String()
	}
	fail := func(err error) error {
		return fmt.Errorf("layer %d of %d (%s), the deep check's reading: %w", i+1, len(layers), name, err)
	}
	u := flatten.Update{Op: "classes", Layer: i + 1, Layers: len(layers), Digest: name}
	if size, err := layers[i].Size(); err == nil {
		u.Total = size
	}
	report := func(u flatten.Update) {
		if progress != nil {
			progress(u)
		}
	}
	report(u)
	rc, err := layers[i].Compressed()
	if err != nil {
		return fail(err)
	}
	defer rc.Close()
	cr := &flatten.CountingReader{R: &flatten.CtxReader{Ctx: ctx, R: rc}, Every: func(n int64) { w := u; w.Done = n; report(w) }}
	r, done, err := flatten.Decompress(cr)
	if err != nil {
		return fail(fmt.Errorf("decompress: %w", err))
	}
	defer done()
	h := sha256.New()
	tr := tar.NewReader(io.TeeReader(r, h))
	for hd, err := range flatten.Entries(tr) {
		if err != nil {
			return fail(err)
		}
		n, err := flatten.Clean(hd.Name)
		if err != nil {
			return fail(err)
		}
		size, ok := wanted[n]
		if !ok || hd.Typeflag != tar.TypeReg {
			continue
		}
		if _, taken := d.files[n]; taken {
			continue // the merged view keeps a layer's first entry of a name
		}
		if hd.Size != size {
			return fail(fmt.Errorf("%w: /%s is %d bytes, %d when the layer was first read", flatten.ErrLayer, n, hd.Size, size))
		}
		release, err := k.reserve(ctx, size, "/"+n+" (the deep check's copy)")
		if err != nil {
			return fail(err)
		}
		f, err := os.CreateTemp(k.dir, "jar-*")
		if err != nil {
			return fail(err)
		}
		_, err = io.CopyN(f, tr, size)
		if cerr := f.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			return fail(fmt.Errorf("copy /%s: %w", n, err))
		}
		d.files[n] = diskFile{path: f.Name(), size: size, release: release}
	}
	if _, err := io.Copy(h, r); err != nil {
		return fail(fmt.Errorf("read tar: %w", err))
	}
	if diffID != "" {
		if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
			return fail(fmt.Errorf("%w: the layer's content is %s, its config says %s", flatten.ErrLayer, got, diffID))
		}
	}
	for n := range wanted {
		if _, ok := d.files[n]; !ok {
			return fail(fmt.Errorf("%w: /%s is no longer in the layer", flatten.ErrLayer, n))
		}
	}
	u.Done, u.Finished = cr.N, true
	report(u)
	return nil
}

// jobJARMode is the mode a placed job JAR has in the view: the mode bake
// gives payloads (image.PayloadMode), readable by every user.
const jobJARMode = 0o644

// placeJobJARs puts the job JARs into the view's usrlib (through its link,
// when usrlib is one), read for their facts from where they are.
func placeJobJARs(jobs []JobJAR, d *FS, v *flatten.View, usrlib string, b *budget) error {
	if len(jobs) == 0 {
		return nil
	}
	dir := strings.TrimPrefix(path.Clean("/"+usrlib), "/")
	target, info, err := rootfs.Resolve(v.FS, dir)
	switch {
	case err == nil && !info.IsDir():
		return fmt.Errorf("job JARs: /%s in the image is not a directory", dir)
	case err == nil:
		dir = target
	case errors.Is(err, fs.ErrNotExist):
		// No usrlib: it is made beside lib, where lib's parent leads.
		if parent, info, err := rootfs.Resolve(v.FS, path.Dir(dir)); err == nil && info.IsDir() {
			dir = strings.TrimPrefix(path.Join(parent, "usrlib"), "./")
		}
	default:
		return fmt.Errorf("job JARs: /%s in the image: %w", dir, err)
	}
	for _, j := range jobs {
		if j.Name == "" || strings.Contains(j.Name, "/") || !strings.HasSuffix(j.Name, ".jar") {
			return fmt.Errorf("job JAR file name %q: want a plain *.jar name", j.Name)
		}
		abs, err := filepath.Abs(j.Path)
		if err != nil {
			return fmt.Errorf("job JAR %s: %w", j.Path, err)
		}
		f, err := os.Open(abs)
		if err != nil {
			return fmt.Errorf("job JAR: %w", err)
		}
		info, err := f.Stat()
		if err == nil && !info.Mode().IsRegular() {
			err = errors.New("not a regular file")
		}
		if err != nil {
			f.Close()
			return fmt.Errorf("job JAR %s: %w", j.Path, err)
		}
		name := dir + "/" + j.Name
		facts := flatten.JARFactsOf(f, info.Size(), "/"+name, "") // usrlib: the JVM loads no payload libraries from job JARs
		f.Close()
		if err := b.add(name, info.Size(), facts.Entries); err != nil {
			return fmt.Errorf("job JAR %s: %w", j.Path, err)
		}
		v.FS[name] = &memfs.File{Mode: jobJARMode, ModTime: info.ModTime(), Sys: &flatten.Node{Name: name, Type: tar.TypeReg, Mode: jobJARMode, Size: info.Size()}}
		v.JARs[name] = facts
		d.files[name] = diskFile{path: abs, size: info.Size()}
	}
	return nil
}

// Bytes is the size of the JARs d holds on disk (the job JARs' included).
func (d *FS) Bytes() int64 {
	var n int64
	for _, f := range d.files {
		n += f.size
	}
	return n
}

// With is d and its view v with the job JARs placed in usrlib, as Read
// would place them on a fresh reading: the same JARs counted against the
// same bounds. d and v are not changed (a kept image's, checked with
// other job JARs next).
func (d *FS) With(v *flatten.View, c settings.Config, jobs []JobJAR) (*FS, *flatten.View, error) {
	w := &flatten.View{FS: maps.Clone(v.FS), JARs: maps.Clone(v.JARs)}
	e := &FS{FS: w.FS, files: maps.Clone(d.files)}
	names, usrlib := deepNames(v, c.LibDir, c.PluginsDir, jobs)
	var b budget
	for _, name := range names {
		df, ok := d.files[name]
		if !ok {
			continue // not a layer's file: Read skips it too
		}
		if err := b.add(name, df.size, w.JARs[name].Entries); err != nil {
			return nil, nil, err
		}
	}
	if err := placeJobJARs(jobs, e, w, usrlib, &b); err != nil {
		return nil, nil, err
	}
	return e, w, nil
}
