// Package host gathers the facts admission decides on from a file system
// rooted at "/": the classpath as Flink's bin/config.sh builds it, every
// JAR on it read once, the job JARs in usrlib, the payloads in plugins, the
// JDK as Flink's scripts choose it (env.java.home of the config file the
// launch path leaves them, else JAVA_HOME, else PATH; javahome.go) and the
// platform's libc loader, and the configuration the process about to start
// runs with (ReadConfig, flinkconf.go: the config file of the release,
// FLINK_PROPERTIES as the image merges it, argv's -D). The files are read
// once per gather and parsed by internal/flinkconf, the one bounded reader
// of Flink's configuration (config.yaml as Flink 2.x loads it,
// flink-conf.yaml line by line as 1.18 reads it, the scripts' flat
// env.java.home line); host picks the file and applies the launch path.
//
// For the native libraries' rules it reads what the root offers the
// dynamic loader (ReadLibs, native.go): ld.so.conf's and the system
// directories, and the versions libraries define, with debug/elf; never
// by running ldd or the loader.
//
// It reads; it does not judge. The same code reads a live container
// (os.DirFS("/")), a test tree and a flattened image.
package host

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Settings say where to look. Paths are absolute, as in the environment.
type Settings struct {
	LibDir     string // FLINK_LIB_DIR, else $FLINK_HOME/lib
	PluginsDir string // FLINK_PLUGINS_DIR, else $FLINK_HOME/plugins
	FlinkHome  string // FLINK_HOME (its opt/ for ENABLE_BUILT_IN_PLUGINS); "": lib's parent
	// AllProviders reads every file system and reporter factory of lib
	// and the plugins, whatever the configuration names (as an image's
	// check does, to judge a deployment's configuration against them);
	// a start reads them only when its configuration needs them.
	AllProviders bool
	JavaHome     string // JAVA_HOME; empty: look for java on Path
	Path         string // PATH
	OS, Arch     string // platform, as uname reports it (x86_64, aarch64, arm64)
	Strict       bool
	Locale       string // the collation locale (LC_ALL, LC_COLLATE, LANG); see OrderFor
	Order        Order  // classpath order; nil: the order of Locale
	Workers      int    // JARs read at once; 0: 2

	// How Flink's scripts pick the JDK (see jdkAsFlink). Without ConfDir
	// the config file is not consulted: JAVA_HOME, else java on PATH.
	ConfDir         string                      // FLINK_CONF_DIR, else $FLINK_HOME/conf
	FlinkProperties string                      // FLINK_PROPERTIES, which the image entrypoint merges
	Launch          Launch                      // what starts Flink's scripts
	Getenv          func(string) (string, bool) // the environment, for envsubst as the image entrypoint runs it

	// Deep asks for the class indexes of every JAR of lib and usrlib and
	// the user class loader's patterns (admission.Deep), which the
	// shadowing and linkage rules read; the JARs stay open until
	// Facts.Deep.Close.
	Deep bool
	// Baked, without Deep, applies lib's baked deep verdict (VerdictFile)
	// when it has one: the JARs are fingerprinted as they are read and
	// compared with it (gatherBaked); Facts.Linkage says what came of it.
	Baked bool

	// Native asks for the ELF facts of the native libraries of the
	// payloads for the host's platform (payload.Options.Native) and what
	// the root offers them (ReadLibs), which the native-* rules judge;
	// Deep implies it.
	Native bool

	// The process about to start, for the configuration it runs with
	// (ReadConfig): its role (internal/roles' names; "" unknown) and its
	// arguments, whose -D properties win over the config file.
	Role string
	Args []string

	// ReadJAR reads one JAR of fsys; nil: payload.Open. The image tooling
	// answers from facts it read from the layers, without the bytes.
	ReadJAR func(fsys fs.FS, name string, opt payload.Options) *payload.JAR
	// ReadLibVersions reads the symbol versions a library of fsys defines
	// (name relative to its root); nil: its ELF, with DefinedVersions.
	// The image tooling answers from what it read of the layers.
	ReadLibVersions func(fsys fs.FS, name string) ([]string, error)
}

// Progress tells which files a running Gather is reading, so a caller that
// gives up (the admission deadline) can say where it hung.
type Progress struct {
	mu      sync.Mutex
	reading []string
}

func (p *Progress) begin(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	p.reading = append(p.reading, name)
	p.mu.Unlock()
}

func (p *Progress) end(name string) {
	if p == nil {
		return
	}
	p.mu.Lock()
	if i := slices.Index(p.reading, name); i >= 0 {
		p.reading = slices.Delete(p.reading, i, i+1)
	}
	p.mu.Unlock()
}

// Reading returns the files being read now (none for a nil Progress).
func (p *Progress) Reading() []string {
	if p == nil {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return slices.Clone(p.reading)
}

// rel turns an absolute path into a name in a file system rooted at "/".
func rel(p string) string {
	p = strings.TrimPrefix(path.Clean("/"+p), "/")
	if p == "" {
		return "."
	}
	return p
}

// InstallJournal is the file inside lib that `streamfusion install` keeps
// while it changes lib (internal/install). Its presence is all Gather
// asks of it: one stat of a fixed name, nothing read or listed.
const InstallJournal = ".streamfusion-install.journal"

// Gather reads the facts. Reading stops early only when ctx is done.
func Gather(ctx context.Context, fsys fs.FS, s Settings, progress *Progress) (*admission.Facts, error) {
	f := &admission.Facts{LibDir: path.Clean(s.LibDir), Strict: s.Strict, Platform: platform(fsys, s.OS, s.Arch)}

	names, unlisted, err := List(fsys, s.LibDir)
	if err != nil {
		f.LibErr = err
		f.JDK = jdkAsFlink(fsys, s, "")
		return f, nil
	}
	if j := path.Join(rel(s.LibDir), InstallJournal); statOK(fsys, j) {
		f.InstallJournal = "/" + j
	}
	order := s.Order
	if order == nil {
		order, f.Order = OrderFor(fsys, s.Locale)
	}
	names = Classpath(names, order)
	usrlib, unlistedUsrlib, _ := List(fsys, path.Join(path.Dir(path.Clean(s.LibDir)), "usrlib"))
	var plugins []string
	var unlistedPlugins []admission.Unlisted
	if s.PluginsDir != "" {
		plugins, unlistedPlugins, _ = List(fsys, s.PluginsDir)
	}
	f.Unlisted = slices.Concat(unlisted, unlistedUsrlib, unlistedPlugins)
	all := append(append(append([]string(nil), names...), usrlib...), plugins...)
	native := ""
	if s.Native || s.Deep {
		native = f.Platform.Name()
	}
	var verdict *bakedFile
	fingerprinted := 0 // how many of all are fingerprinted: lib and usrlib, with a verdict to compare
	if s.Baked && !s.Deep {
		if verdict = readVerdict(fsys, s.LibDir); verdict != nil && verdict.err == nil {
			fingerprinted = len(names) + len(usrlib)
		}
	}
	early := readEarlyConfig(fsys, s, names)
	jars, err := readAll(ctx, fsys, all, s.Workers, s.ReadJAR, native, len(names), progress, fingerprinted, early.providers(s))
	if err != nil {
		return nil, err
	}
	f.Classpath = jars[:len(names)]
	f.Usrlib = jars[len(names) : len(names)+len(usrlib)]
	f.Plugins = jars[len(names)+len(usrlib):]
	release := distVersion(f.Classpath)
	if s.ConfDir != "" {
		conf, config := early.file, early.config
		if early.release != release { // the file name said another release than the JAR
			conf = readConfFile(fsys, s.ConfDir, release) // read once, for the JDK lookup and the config
			config = readConfig(fsys, s, release, conf)
		}
		f.JDK = jdkFromConf(fsys, s, conf)
		f.Config = config
	} else {
		f.JDK = jdkAsFlink(fsys, s, release)
	}
	f.FileSystems = gatherFileSystems(fsys, s, f)
	if native != "" {
		release := ""
		if f.JDK.Err == nil {
			release = f.JDK.Source
		}
		f.Libs = ReadLibs(fsys, f.Platform.Arch, release, f.Classpath, s.ReadLibVersions)
	}
	switch {
	case s.Deep:
		f.Deep = gatherDeep(ctx, fsys, f)
		f.SQL = gatherSQL(fsys, s, f) // the table factories its statements name: a deep rule's
	case s.Baked:
		f.Deep, f.Linkage = gatherBaked(ctx, fsys, s, f, verdict)
	}
	return f, nil
}

// statOK says whether anything is at name: one lstat (a link counts as
// there, whatever it points at).
func statOK(fsys fs.FS, name string) bool {
	_, err := fs.Lstat(fsys, name)
	return err == nil
}

// distVersion is the release of the one flink-dist on the classpath, "" when
// there is none, several or no version: it says which config file Flink's
// scripts read.
func distVersion(jars []*payload.JAR) string {
	v := ""
	for _, j := range jars {
		if !isDist(j.Path) {
			continue
		}
		if v != "" {
			return ""
		}
		v = j.Properties["project.version"]
		if v == "" && j.Manifest != nil {
			v, _ = j.Manifest.Get("Implementation-Version")
		}
	}
	return v
}

func isDist(name string) bool { return admission.IsDist(path.Base(name)) }

// earlyConfig is the configuration read before the JARs, with the
// release flink-dist's file name says (flink-dist-2.2.1.jar): whether the
// start needs lib's and the plugins' service providers is known before
// they are read, so each JAR is read once. The JAR's own release decides
// in the end; when it differs, the configuration is read again with it.
type earlyConfig struct {
	release string
	file    *confFileData
	config  admission.Config
}

func readEarlyConfig(fsys fs.FS, s Settings, classpath []string) earlyConfig {
	var e earlyConfig
	for _, n := range classpath {
		if b := path.Base(n); isDist(b) && e.release == "" {
			e.release = strings.TrimSuffix(strings.TrimPrefix(b, "flink-dist-"), ".jar")
		}
	}
	if _, ok := admission.ParseFlinkVersion(e.release); !ok || s.ConfDir == "" {
		return earlyConfig{release: "\x00"} // matches no JAR's release
	}
	e.file = readConfFile(fsys, s.ConfDir, e.release)
	e.config = readConfig(fsys, s, e.release, e.file)
	return e
}

// providers says whether the JARs are read with their service providers
// (payload.Options.Providers): when the configuration names a location or
// a reporter Flink resolves through them (providers in filesystems.go), or
// a check that reads them all (AllProviders).
func (e earlyConfig) providers(s Settings) bool {
	if s.ReadJAR != nil {
		return false // an image's facts: providers reads them from the layers' facts
	}
	return s.AllProviders || e.file != nil && admission.NeedsProviders(e.release, e.config.Role, e.config.Entries)
}

// readAll reads every JAR, a few at a time, keeping their order; the
// first nativeUpTo with the ELF facts of their native libraries for the
// platform native (when not empty), the first fingerprinted with their
// fingerprints, all with their service providers when providers.
func readAll(ctx context.Context, fsys fs.FS, names []string, workers int, read func(fs.FS, string, payload.Options) *payload.JAR, native string, nativeUpTo int, progress *Progress, fingerprinted int, providers bool) ([]*payload.JAR, error) {
	if workers <= 0 {
		workers = 2
	}
	if read == nil {
		read = payload.Open
	}
	out := make([]*payload.JAR, len(names))
	next := make(chan int)
	var wg sync.WaitGroup
	for range min(workers, len(names)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				progress.begin("/" + names[i])
				opt := payload.Options{Properties: isDist(names[i]), Fingerprint: i < fingerprinted, Providers: providers}
				if i < nativeUpTo { // the classpath's: those the JVM loads libraries of
					opt.Native = native
				}
				out[i] = read(fsys, names[i], opt)
				progress.end("/" + names[i])
			}
		}()
	}
	// flink-dist holds most of the entries: start it first, so the workers
	// do not wait on it at the end (the classpath puts it last).
	order := make([]int, 0, len(names))
	for i, n := range names {
		if isDist(n) {
			order = append(order, i)
		}
	}
	for i, n := range names {
		if !isDist(n) {
			order = append(order, i)
		}
	}
	var err error
feed:
	for _, i := range order {
		if err = ctx.Err(); err != nil {
			break
		}
		select {
		case next <- i:
		case <-ctx.Done():
			err = ctx.Err()
			break feed
		}
	}
	close(next)
	wg.Wait()
	return out, err
}

// List returns the names (relative to the root) of every non-directory
// entry called *.jar below dir, recursively, not following links to
// directories: what `find dir ! -type d -name '*.jar'` prints; and the
// subdirectories that cannot be listed, whose JARs it cannot name.
func List(fsys fs.FS, dir string) ([]string, []admission.Unlisted, error) {
	root := rel(dir)
	if _, info, err := rootfs.Resolve(fsys, root); err != nil {
		return nil, nil, err
	} else if !info.IsDir() {
		return nil, nil, fmt.Errorf("%s is not a directory", dir)
	}
	var names []string
	var unlisted []admission.Unlisted
	err := fs.WalkDir(fsys, root, func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			if name == root {
				return err
			}
			unlisted = append(unlisted, admission.Unlisted{Path: "/" + name, Err: err})
			return nil
		}
		if !d.IsDir() && strings.HasSuffix(d.Name(), ".jar") {
			names = append(names, name)
		}
		return nil
	})
	if err != nil {
		return nil, nil, err
	}
	return names, unlisted, nil
}

// Order sorts classpath names the way `sort -z` does under some locale.
type Order func(names []string)

// ByteOrder is `sort` under the C or POSIX locale.
func ByteOrder(names []string) { slices.Sort(names) }

// Classpath orders names as bin/config.sh does: sorted, then the
// flink-dist JARs moved to the end.
func Classpath(names []string, order Order) []string {
	names = slices.Clone(names)
	order(names)
	var rest, dist []string
	for _, n := range names {
		if isDist(n) {
			dist = append(dist, n)
		} else {
			rest = append(rest, n)
		}
	}
	return append(rest, dist...)
}

// jdk finds the JDK's release file: $JAVA_HOME/release, else the release
// file beside the bin/ of the java found on PATH, links resolved.
func jdk(fsys fs.FS, javaHome, pathEnv string) admission.JDK {
	if javaHome == "" {
		java := lookJava(fsys, pathEnv)
		if java == "" {
			return admission.JDK{Source: "java on PATH", Err: fmt.Errorf("JAVA_HOME is not set and no java on PATH (%s)", pathEnv)}
		}
		javaHome = path.Dir(path.Dir(java))
	}
	release := path.Join(javaHome, "release")
	data, err := readSmall(fsys, rel(release), 64<<10)
	if err != nil {
		return admission.JDK{Source: release, Err: fmt.Errorf("no readable JDK release file at %s: %w", release, err)}
	}
	v, ok := releaseValue(data, "JAVA_VERSION")
	if !ok {
		return admission.JDK{Source: release, Version: "", Err: nil}
	}
	return admission.JDK{Source: release, Version: v}
}

// lookJava returns the resolved absolute path of the first java on PATH.
func lookJava(fsys fs.FS, pathEnv string) string {
	for _, dir := range strings.Split(pathEnv, ":") {
		if !strings.HasPrefix(dir, "/") {
			continue // relative PATH entries depend on the working directory; Flink's scripts do not use them
		}
		name, info, err := rootfs.Resolve(fsys, rel(path.Join(dir, "java")))
		if err == nil && info.Mode().IsRegular() && info.Mode()&0o111 != 0 {
			return "/" + name
		}
	}
	return ""
}

func releaseValue(data []byte, key string) (string, bool) {
	for _, line := range bytes.Split(data, []byte("\n")) {
		k, v, ok := bytes.Cut(bytes.TrimSpace(line), []byte("="))
		if ok && string(k) == key {
			return strings.Trim(string(v), `"`), true
		}
	}
	return "", false
}

// errTooLarge is readSmall's error for a file beyond its limit.
var errTooLarge = errors.New("larger than a release file can be")

func readSmall(fsys fs.FS, name string, limit int64) ([]byte, error) {
	file, _, info, err := rootfs.OpenRegular(fsys, name)
	if err != nil {
		return nil, err
	}
	defer file.Close()
	// Room for the file as its stat says, and a byte to see its end: one
	// read, where io.ReadAll grows from 512 bytes.
	data := make([]byte, 0, min(max(info.Size(), 0), limit)+1)
	r := io.LimitReader(file, limit+1)
	for {
		if len(data) == cap(data) {
			data = slices.Grow(data, 4096)
		}
		n, err := r.Read(data[len(data):cap(data)])
		data = data[:len(data)+n]
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, err
		}
	}
	if int64(len(data)) > limit {
		return nil, errTooLarge
	}
	return data, nil
}

// Loaders of the C library, by architecture.
var glibcLoaders = map[string]string{
	"x86_64":  "/lib64/ld-linux-x86-64.so.2",
	"aarch64": "/lib/ld-linux-aarch64.so.1",
}

// NormalizeArch maps Go and OCI architecture names to uname's.
func NormalizeArch(arch string) string {
	switch arch {
	case "amd64", "x86-64":
		return "x86_64"
	case "arm64", "armv8", "aarch64_be":
		return "aarch64"
	}
	return arch
}

func platform(fsys fs.FS, goos, arch string) admission.Platform {
	p := admission.Platform{OS: cmp.Or(goos, "linux"), Arch: NormalizeArch(arch)}
	if loader, ok := glibcLoaders[p.Arch]; ok && exists(fsys, loader) {
		p.Libc, p.Evidence = "glibc", loader
		return p
	}
	if musl, _ := fs.Glob(fsys, "lib/ld-musl-*.so.1"); len(musl) > 0 {
		p.Libc, p.Evidence = "musl", "/"+musl[0]
		return p
	}
	p.Libc = "unknown"
	p.Evidence = "no glibc loader"
	if loader, ok := glibcLoaders[p.Arch]; ok {
		p.Evidence = "no " + loader + " and no /lib/ld-musl-*.so.1"
	}
	return p
}

func exists(fsys fs.FS, name string) bool {
	_, _, err := rootfs.Resolve(fsys, rel(name))
	return err == nil
}
