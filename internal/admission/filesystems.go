package admission

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

// FileSystems is what Flink's FileSystem and PluginManager find once the
// process runs (internal/host reads it): plugins/ as Flink loads it, what
// the image entrypoint's ENABLE_BUILT_IN_PLUGINS adds to it, the file
// system factories of lib and of each plugin, and Hadoop on the class
// path (Flink's fallback).
type FileSystems struct {
	PluginsDir string   // absolute; "" when it does not exist
	Plugins    []Plugin // its subfolders, in name order, those ENABLE_BUILT_IN_PLUGINS makes included
	Loose      []string // JARs straight in plugins/, which Flink never loads
	// Nested are JARs in a subfolder of a plugin folder: Flink loads only
	// the files directly in the folder.
	Nested  []string
	Enabled []Enabled
	// Factories are the FileSystemFactory service providers of lib, then
	// of each plugin, as FileSystem.initialize registers them (a later
	// one of a scheme wins); read only when a location the configuration
	// names needs a scheme other than file (FactoriesRead).
	Factories     []Factory
	FactoriesRead bool
	// Reporters are the metric, trace and event reporter factories of lib
	// and of each plugin (Provider.Service says which), read only when the
	// configuration names a reporter (ReportersRead).
	Reporters     []Provider
	ReportersRead bool
	// Unreadable are the JARs of lib or a plugin that could not be opened
	// while the providers were read.
	Unreadable []Provider
	// Complete says every provider of lib and the plugins was read,
	// whatever the configuration names (an image's facts), so that another
	// configuration can be judged against them.
	Complete bool
	// Hadoop is where Hadoop's FileSystem comes from for Flink's fallback
	// factory: a lib JAR's path, or "HADOOP_CLASSPATH" (the scripts put it
	// on the class path); "" when nothing provides it.
	Hadoop string
	// Opt lists $FLINK_HOME/opt (the JARs ENABLE_BUILT_IN_PLUGINS can
	// name), for the fix of an unserved scheme.
	Opt []string
}

// Plugin is one subfolder of plugins/: Flink loads its JARs (the *.jar
// files directly in it) in one plugin class loader.
type Plugin struct {
	Name string
	Dir  string   // absolute
	JARs []string // absolute; none stops Flink at start
	// Enabled marks a folder the image entrypoint creates from
	// ENABLE_BUILT_IN_PLUGINS after the check; Linked says it was not
	// listed (a link to a directory elsewhere), so its JARs are unknown.
	Enabled, Linked bool
}

// Enabled is one entry of ENABLE_BUILT_IN_PLUGINS, which the official
// image's docker-entrypoint.sh links from $FLINK_HOME/opt into
// $FLINK_HOME/plugins/<name without .jar>/ before Flink starts, exiting 1
// when opt/ has no such file.
type Enabled struct {
	Name    string // as written
	Opt     string // absolute path in opt/
	Present bool
	// Unjudged is an entry whose opt/ file could not be looked for (an
	// image's facts hold no files of opt/): never reported missing.
	Unjudged bool `json:",omitempty"`
}

// Provider is one class a service file names (java.util.ServiceLoader's
// provider) in one class loader's JARs.
type Provider struct {
	Service string `json:",omitempty"` // the service interface
	Class   string // binary name
	JAR     string // the JAR whose service file names it
	Plugin  string // the plugin folder; "" for lib
	// Missing is a class none of the loader's JARs holds: ServiceLoader
	// fails on it, and Flink skips it. Err is a service file or JAR that
	// could not be read.
	Missing bool
	Err     string
}

// Factory is one FileSystemFactory provider with its scheme.
type Factory struct {
	Provider
	// Scheme is what its getScheme() returns, read from its bytecode.
	// Without one, SchemeErr says why: Unknown is a factory that loads but
	// whose scheme is computed at run time (it may serve any scheme);
	// otherwise it does not load, and serves nothing.
	Scheme    string
	Unknown   bool
	SchemeErr string
}

// directlySupported are the schemes Flink's FileSystem serves only from
// its plugins (FileSystem.DIRECTLY_SUPPORTED_FILESYSTEM, the same in 1.18
// and 2.2; TestDirectlySupportedIsFlinks reads it from flink-dist): with
// no plugin for one, Flink fails even when Hadoop is on the class path,
// unless fs.allowed-fallback-filesystems lists it. The values are the
// plugins' Maven artifacts.
var directlySupported = map[string][]string{
	"s3":    {"flink-s3-fs-hadoop", "flink-s3-fs-presto"},
	"s3a":   {"flink-s3-fs-hadoop"},
	"s3p":   {"flink-s3-fs-presto"},
	"gs":    {"flink-gs-fs-hadoop"},
	"oss":   {"flink-oss-fs-hadoop"},
	"wasb":  {"flink-azure-fs-hadoop"},
	"wasbs": {"flink-azure-fs-hadoop"},
	"abfs":  {"flink-azure-fs-hadoop"},
	"abfss": {"flink-azure-fs-hadoop"},
}

// DirectlySupported returns the schemes Flink serves only from plugins,
// with their plugins' artifacts.
func DirectlySupported() map[string][]string { return directlySupported }

// NeedsProviders says whether the configuration names a location whose
// scheme is not file, or a reporter: only then does a start read the file
// system and reporter factories (internal/host).
func NeedsProviders(release, role string, entries []flinkconf.Entry) bool {
	for _, l := range locations(release, role, entries) {
		if l.Scheme != "file" {
			return true
		}
	}
	return len(enabledReporters(release, entries)) > 0
}

// locations are the configured FileSystem locations with the default
// scheme applied to those without one.
func locations(release, role string, entries []flinkconf.Entry) []flinkconf.Location {
	keys := TableFor(release)
	if keys == nil {
		return nil
	}
	ls := flinkconf.Locations(keys, entries, role)
	def, _, _ := flinkconf.DefaultScheme(keys, entries)
	for i := range ls {
		if ls[i].Default {
			ls[i].Scheme = def
		}
	}
	return ls
}

// fsSchemeUnserved judges every configured location as FileSystem.get
// resolves it: a factory of lib or of a plugin for its scheme; else, for
// a scheme only plugins serve (not in fs.allowed-fallback-filesystems),
// a failure; else Hadoop's fallback, which fails without Hadoop.
func fsSchemeUnserved(v *view) []Finding {
	rel, keys := v.confRelease()
	fsys := v.FileSystems
	if keys == nil || fsys == nil || !fsys.FactoriesRead {
		return nil
	}
	allowed := map[string]bool{}
	if e, ok := flinkconf.Get(keys, v.Config.Entries, "fs.allowed-fallback-filesystems"); ok {
		for _, s := range strings.Split(e.Value, ";") {
			allowed[strings.TrimSpace(s)] = true
		}
	}
	var out []Finding
	for _, l := range locations(rel, v.Config.Role, v.Config.Entries) {
		if l.Err != "" || l.Scheme == "file" || fsys.serves(l.Scheme) {
			continue
		}
		plugins, direct := directlySupported[l.Scheme]
		if (!direct || allowed[l.Scheme]) && fsys.Hadoop != "" {
			continue // Hadoop's own lookup decides; it is not read here
		}
		f := Finding{Path: v.Config.File, Message: fmt.Sprintf("the %s %s has scheme %s, which no file system of this image serves: Flink fails when it first opens it, not at start",
			l.What, l.Value, l.Scheme),
			Found:    fmt.Sprintf("%s: %s (%s); %s", l.Key, l.Value, l.Source, fsys.describe()),
			Required: "a file system plugin for " + l.Scheme + " in its own folder below plugins/"}
		if !direct {
			f.Required = fmt.Sprintf("a FileSystemFactory for %s in lib or a plugin, or Hadoop with a file system for it on the class path (HADOOP_CLASSPATH)", l.Scheme)
		}
		f.Fix = fsys.fixFor(l.Scheme, plugins, rel)
		if unread := fsys.unreadFactories(); len(unread) > 0 {
			f.Severity = Warning
			f.Message += fmt.Sprintf(", unless %s serves it (its scheme could not be read)", strings.Join(unread, ", "))
		}
		out = append(out, f)
	}
	return out
}

func (fs *FileSystems) serves(scheme string) bool {
	return slices.ContainsFunc(fs.Factories, func(f Factory) bool { return f.Scheme == scheme })
}

func (fs *FileSystems) unreadFactories() []string {
	var out []string
	for _, f := range fs.Factories {
		if f.Unknown {
			out = append(out, f.Class+" ("+f.JAR+")")
		}
	}
	return out
}

// describe says what serves which scheme, for a finding's Found.
func (fs *FileSystems) describe() string {
	var served []string
	for _, f := range fs.Factories {
		if f.Scheme != "" && !slices.Contains(served, f.Scheme) {
			served = append(served, f.Scheme)
		}
	}
	s := "file systems served: file"
	if len(served) > 0 {
		s += ", " + strings.Join(served, ", ")
	}
	if fs.Hadoop == "" {
		s += "; no Hadoop on the class path"
	}
	if len(fs.Loose) > 0 {
		s += "; not loaded, straight in plugins/: " + strings.Join(fs.Loose, ", ")
	}
	return s
}

// fixFor names the plugin to add: the copy opt/ holds (an
// ENABLE_BUILT_IN_PLUGINS value), else the artifact by coordinates.
func (fs *FileSystems) fixFor(scheme string, plugins []string, release string) string {
	for _, loose := range fs.Loose {
		for _, p := range plugins {
			if strings.HasPrefix(path.Base(loose), p+"-") {
				return fmt.Sprintf("move %s into a folder of its own: %s/%s/", loose, fs.pluginsDir(), strings.TrimSuffix(path.Base(loose), ".jar"))
			}
		}
	}
	for _, p := range plugins {
		for _, o := range fs.Opt {
			if strings.HasPrefix(path.Base(o), p+"-") && strings.HasSuffix(o, ".jar") {
				return fmt.Sprintf("set ENABLE_BUILT_IN_PLUGINS=%s (the image links it from opt/ into plugins/), or copy it into %s/%s/", path.Base(o), fs.pluginsDir(), strings.TrimPrefix(p, "flink-"))
			}
		}
	}
	if len(plugins) == 0 {
		return fmt.Sprintf("add a file system for %s (a plugin folder below plugins/ holding its FileSystemFactory), or set HADOOP_CLASSPATH to a Hadoop that has one; or point the location at a scheme the image serves", scheme)
	}
	var coords []string
	for _, p := range plugins {
		coords = append(coords, fmt.Sprintf("org.apache.flink:%s:%s into %s/%s/", p, cmp.Or(release, "<release>"), fs.pluginsDir(), strings.TrimPrefix(p, "flink-")))
	}
	return "add the plugin: " + strings.Join(coords, ", or ")
}

func (fs *FileSystems) pluginsDir() string { return cmp.Or(fs.PluginsDir, "plugins") }

// pluginsLoose reports JARs straight in plugins/ and in a plugin folder's
// subfolders: Flink loads only the JARs directly in each subfolder of
// plugins/. A warning: where a configured location needs what one of
// them would serve, fs-scheme-unserved is the error, and its fix moves it.
func pluginsLoose(v *view) []Finding {
	fsys := v.FileSystems
	if fsys == nil {
		return nil
	}
	var out []Finding
	for _, j := range fsys.Loose {
		out = append(out, Finding{Severity: Warning, Path: j, Message: "a JAR straight in plugins/ is never loaded: Flink loads each subfolder of plugins/ as one plugin",
			Found: j, Required: "every plugin JAR in a folder of its own below " + fsys.pluginsDir(),
			Fix: fmt.Sprintf("move it into %s/%s/, or remove it", fsys.pluginsDir(), strings.TrimSuffix(path.Base(j), ".jar"))})
	}
	for _, j := range fsys.Nested {
		folder := fsys.folderOf(j)
		out = append(out, Finding{Severity: Warning, Path: j, Message: "a JAR in a subfolder of a plugin folder is never loaded: Flink loads the *.jar files directly in each plugin folder",
			Found: j, Required: "the plugin's JARs directly in " + folder,
			Fix: fmt.Sprintf("move it into %s/, or remove it", folder)})
	}
	return out
}

// folderOf is the plugin folder a path below plugins/ is in.
func (fs *FileSystems) folderOf(p string) string {
	rest := strings.TrimPrefix(p, fs.pluginsDir()+"/")
	name, _, _ := strings.Cut(rest, "/")
	return fs.pluginsDir() + "/" + name
}

// pluginsEmpty reports a subfolder of plugins/ without a JAR: Flink's
// plugin finder refuses it and the process fails at start.
func pluginsEmpty(v *view) []Finding {
	fsys := v.FileSystems
	if fsys == nil {
		return nil
	}
	var out []Finding
	for _, p := range fsys.Plugins {
		if len(p.JARs) > 0 || p.Linked || p.Enabled {
			continue
		}
		f := Finding{Path: p.Dir, Message: "a plugin folder holds no JAR: Flink refuses it and fails at start (\"Cannot find any jar files for plugin in directory\")",
			Found: p.Dir + " without a *.jar", Required: "each folder below plugins/ holding the plugin's JARs",
			Fix: "put the plugin's JAR into " + p.Dir + ", or remove the folder"}
		var nested []string
		for _, j := range fsys.Nested {
			if strings.HasPrefix(j, p.Dir+"/") {
				nested = append(nested, j)
			}
		}
		if len(nested) > 0 {
			f.Found = p.Dir + " without a *.jar of its own; in its subfolders, which Flink does not look in: " + strings.Join(nested, ", ")
			f.Fix = "move the plugin's JARs up into " + p.Dir + "/"
		}
		out = append(out, f)
	}
	return out
}

// pluginsEnableMissing reports an ENABLE_BUILT_IN_PLUGINS entry opt/ does
// not have: the image entrypoint exits 1 ("does not exist") before Flink.
func pluginsEnableMissing(v *view) []Finding {
	fsys := v.FileSystems
	if fsys == nil {
		return nil
	}
	var out []Finding
	for _, e := range fsys.Enabled {
		if e.Present || e.Unjudged {
			continue
		}
		have := "opt/ holds no JAR"
		if len(fsys.Opt) > 0 {
			var names []string
			for _, o := range fsys.Opt {
				names = append(names, path.Base(o))
			}
			have = "opt/ holds " + strings.Join(names, ", ")
		}
		out = append(out, Finding{Path: e.Opt, Message: fmt.Sprintf("ENABLE_BUILT_IN_PLUGINS names %s, which opt/ does not have: the image's entrypoint exits 1 before Flink starts", e.Name),
			Found: "ENABLE_BUILT_IN_PLUGINS entry " + e.Name + "; " + have, Required: "each ';'-separated entry the file name of a JAR in " + path.Dir(e.Opt),
			Fix: "name a JAR opt/ holds (with its release, as in flink-s3-fs-hadoop-<release>.jar), or drop the entry and put the plugin into its own folder below plugins/"})
	}
	return out
}

// pluginsRelease reports a plugin's JAR that is a module of another Flink
// release than the host's (IdentifyStock, as stock-release judges lib's):
// the plugin's code calls the host's Flink API, which changes between
// releases. Real Flink 2.2.0 with flink-s3-fs-hadoop 1.18.1 in
// plugins/s3-fs-hadoop/ finds the plugin's factory at start and fails to
// create the file system (NoSuchMethodError:
// Configuration.getString(ConfigOption)) when a checkpoint first opens it
// (internal/realflink's file system oracle), and so does 1.18.1 with the
// 2.2.0 plugin; 2.2.0 with the 2.1.1 plugin opens it. An error when the
// major differs and a location the configuration names has a scheme that
// plugin serves; a warning otherwise: a plugin nothing configured uses may
// still be used (a savepoint target given when the savepoint is
// triggered), and another minor of the same major kept the API it uses.
func pluginsRelease(v *view) []Finding {
	fsys := v.FileSystems
	if v.release == nil || fsys == nil {
		return nil
	}
	folderOf := map[string]string{}
	for _, p := range fsys.Plugins {
		for _, j := range p.JARs {
			folderOf[j] = p.Name
		}
	}
	used := v.pluginsInUse()
	host := strings.Split(v.release.Version, ".")
	var out []Finding
	for _, j := range v.Plugins {
		folder := folderOf[j.Path]
		if j.Err != nil || folder == "" {
			continue // unreadable, or loose in plugins/ and never loaded (plugins-loose-jar)
		}
		s := IdentifyStock(j)
		if s == nil || s.Kind != StockModule || s.Release == v.flink {
			continue
		}
		wanted := fmt.Sprintf("%s-%s.jar", s.Artifact, v.flink)
		f := Finding{Path: j.Path, Severity: Warning,
			Message:  fmt.Sprintf("the plugin %s is %s, a module of another Flink release: its code calls the host's Flink API, which it was not built against (a plugin of another major may fail when it is used: a file system when a checkpoint or savepoint first opens it; the deep check's linkage findings on it say where)", folder, s),
			Found:    "Flink " + s.Release + " (" + s.Evidence + ")",
			Required: "Flink " + v.flink + ", the host's",
			Fix:      fmt.Sprintf("put the host's %s into %s/%s/ in its place: $FLINK_HOME/opt holds it in the official image (ENABLE_BUILT_IN_PLUGINS=%s)", wanted, fsys.pluginsDir(), folder, wanted)}
		if seg := strings.Split(s.Release, "."); seg[0] != host[0] && used[folder] != "" {
			f.Severity = Error
			f.Found += "; it serves " + used[folder]
		}
		out = append(out, f)
	}
	return out
}
