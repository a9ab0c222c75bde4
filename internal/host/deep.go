package host

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Keys and classes the user and plugin class loaders' models read.
const (
	keyParentFirstAdditional       = "classloader.parent-first-patterns.additional"
	keyPluginParentFirstAdditional = "plugin.classloader.parent-first-patterns.additional"
	coreOptionsClass               = "org/apache/flink/configuration/CoreOptions"
)

// fallbackParentFirst is classloader.parent-first-patterns.default as
// Flink 1.18 to 2.2 define it, used only when flink-dist's CoreOptions
// cannot be read (a test layout without one); the finding's facts say so.
var fallbackParentFirst = []string{"java.", "scala.", "org.apache.flink.", "com.esotericsoftware.kryo", "org.apache.hadoop.",
	"javax.annotation.", "org.xml", "javax.xml", "org.apache.xerces", "org.w3c", "org.rocksdb.", "org.slf4j", "org.apache.log4j",
	"org.apache.logging", "org.apache.commons.logging", "ch.qos.logback"}

// fallbackPluginParentFirst is plugin.classloader.parent-first-patterns.default
// as Flink 1.18 to 2.2 define it, used as fallbackParentFirst is.
var fallbackPluginParentFirst = []string{"java.", "org.apache.flink.", "javax.annotation.", "org.slf4j", "org.apache.log4j",
	"org.apache.logging", "org.apache.commons.logging", "ch.qos.logback"}

// gatherDeep indexes every JAR of lib, usrlib and the plugins to judge
// (openPlugins) for its classes (the bytes of a class are read only when
// a rule asks for it) and reads the user and plugin class loaders'
// parent-first patterns.
func gatherDeep(ctx context.Context, fsys fs.FS, f *admission.Facts) *admission.Deep {
	d := &admission.Deep{}
	open := func(jars []*payload.JAR) []*payload.Archive {
		out := make([]*payload.Archive, len(jars))
		for i, j := range jars {
			if ctx.Err() != nil || j.Err != nil {
				continue
			}
			if a, err := payload.OpenArchive(fsys, rel(j.Path)); err == nil {
				out[i] = a
			}
		}
		return out
	}
	d.Lib = open(f.Classpath)
	d.Usrlib = open(f.Usrlib)
	d.ParentFirst, d.ParentFirstFrom = defaultParentFirst(f.Classpath, d.Lib, jvm.UserParentFirst, fallbackParentFirst)
	d.ParentFirstDefault = len(d.ParentFirst)
	if extra, from := additionalParentFirst(f.Config, keyParentFirstAdditional); len(extra) > 0 {
		d.ParentFirst = append(d.ParentFirst, extra...)
		d.ParentFirstFrom += "; " + keyParentFirstAdditional + " from " + from
	}
	openPlugins(ctx, fsys, f, d, d.Lib)
	if err := ctx.Err(); err != nil {
		d.Err = err
	}
	return d
}

// openPlugins indexes the JARs of every plugin folder that has one to
// judge (a JAR read at the listing that is not the host's own: Flink's
// plugins of the host's release are only resolved against), and reads
// the plugin class loader's parent-first patterns. lib, parallel to
// f.Classpath, are lib's archives when they hold bytes (nil: flink-dist
// is opened for its CoreOptions, as with a baked verdict's class index).
// A folder ENABLE_BUILT_IN_PLUGINS fills after the check holds the
// distribution's own opt/ JARs: not judged.
func openPlugins(ctx context.Context, fsys fs.FS, f *admission.Facts, d *admission.Deep, lib []*payload.Archive) {
	if f.FileSystems == nil {
		return
	}
	read := map[string]*payload.JAR{}
	for _, j := range f.Plugins {
		read[j.Path] = j
	}
	release := distVersion(f.Classpath)
	for _, p := range f.FileSystems.Plugins {
		var jars []*payload.JAR
		judged := false
		for _, name := range p.JARs {
			if j := read[name]; j != nil && j.Err == nil {
				jars = append(jars, j)
				judged = judged || !admission.HostOwn(j, release)
			}
		}
		if !judged || ctx.Err() != nil {
			continue
		}
		dp := admission.DeepPlugin{Name: p.Name, Dir: p.Dir, JARs: jars, Archives: make([]*payload.Archive, len(jars))}
		for i, j := range jars {
			if a, err := payload.OpenArchive(fsys, rel(j.Path)); err == nil {
				dp.Archives[i] = a
			}
		}
		d.Plugins = append(d.Plugins, dp)
	}
	if len(d.Plugins) == 0 {
		return
	}
	if lib == nil {
		lib = make([]*payload.Archive, len(f.Classpath))
		for i, j := range f.Classpath {
			if isDist(j.Path) && j.Err == nil {
				if a, err := payload.OpenArchive(fsys, rel(j.Path)); err == nil {
					lib[i] = a
					defer a.Close() //nolint:errcheck // read-only: nothing is lost on a failed close
				}
			}
		}
	}
	d.PluginParentFirst, d.PluginParentFirstFrom = defaultParentFirst(f.Classpath, lib, jvm.PluginParentFirst, fallbackPluginParentFirst)
	if set, from := additionalParentFirst(f.Config, jvm.PluginParentFirst.Key); len(set) > 0 { // the default, as configured
		d.PluginParentFirst, d.PluginParentFirstFrom = set, jvm.PluginParentFirst.Key+" from "+from
	}
	if extra, from := additionalParentFirst(f.Config, keyPluginParentFirstAdditional); len(extra) > 0 {
		d.PluginParentFirst = append(d.PluginParentFirst, extra...)
		d.PluginParentFirstFrom += "; " + keyPluginParentFirstAdditional + " from " + from
	}
}

// defaultParentFirst reads the default patterns of a parent-first option
// from flink-dist's CoreOptions static initializer, else fallback.
func defaultParentFirst(jars []*payload.JAR, archives []*payload.Archive, opt jvm.ParentFirstOption, fallback []string) ([]string, string) {
	for i, j := range jars {
		if !isDist(j.Path) || archives[i] == nil {
			continue
		}
		data, err := archives[i].Class(coreOptionsClass, nil)
		if err != nil {
			break
		}
		c, err := classfile.Parse(data, classfile.Options{Init: true})
		if err != nil {
			break
		}
		if p, ok := jvm.DefaultParentFirst(c, opt); ok {
			return p, fmt.Sprintf("%s in %s", strings.ReplaceAll(coreOptionsClass, "/", "."), j.Path)
		}
	}
	return fallback, "the default of Flink 1.18 to 2.2 (no readable CoreOptions in flink-dist)"
}

// additionalParentFirst is a parent-first option (key: .additional, or a
// configured .default) as the process runs with it (ReadConfig: the config
// file, flat key or nested, FLINK_PROPERTIES, argv): a ';'-separated
// string or a YAML list, and where it was set.
func additionalParentFirst(c admission.Config, key string) (patterns []string, from string) {
	e, ok := c.Effective(key)
	if !ok {
		return nil, ""
	}
	items := e.Items
	if items == nil {
		items = []string{e.Value}
	}
	for _, s := range items {
		for _, p := range strings.Split(s, ";") {
			if p = strings.TrimSpace(p); p != "" {
				patterns = append(patterns, p)
			}
		}
	}
	from, _, _ = strings.Cut(e.Source, ", line ")
	return patterns, from
}
