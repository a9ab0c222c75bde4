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

// Keys and classes the user class loader's model reads.
const (
	keyParentFirstAdditional = "classloader.parent-first-patterns.additional"
	coreOptionsClass         = "org/apache/flink/configuration/CoreOptions"
)

// fallbackParentFirst is classloader.parent-first-patterns.default as
// Flink 1.18 to 2.2 define it, used only when flink-dist's CoreOptions
// cannot be read (a test layout without one); the finding's facts say so.
var fallbackParentFirst = []string{"java.", "scala.", "org.apache.flink.", "com.esotericsoftware.kryo", "org.apache.hadoop.",
	"javax.annotation.", "org.xml", "javax.xml", "org.apache.xerces", "org.w3c", "org.rocksdb.", "org.slf4j", "org.apache.log4j",
	"org.apache.logging", "org.apache.commons.logging", "ch.qos.logback"}

// gatherDeep indexes every JAR of lib and usrlib for its classes (the
// bytes of a class are read only when a rule asks for it) and reads the
// user class loader's parent-first patterns.
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
	d.ParentFirst, d.ParentFirstFrom = defaultParentFirst(f.Classpath, d.Lib)
	d.ParentFirstDefault = len(d.ParentFirst)
	if extra, from := additionalParentFirst(f.Config); len(extra) > 0 {
		d.ParentFirst = append(d.ParentFirst, extra...)
		d.ParentFirstFrom += "; " + keyParentFirstAdditional + " from " + from
	}
	if err := ctx.Err(); err != nil {
		d.Err = err
	}
	return d
}

// defaultParentFirst reads the default patterns from flink-dist's
// CoreOptions static initializer.
func defaultParentFirst(jars []*payload.JAR, archives []*payload.Archive) ([]string, string) {
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
		if p, ok := jvm.DefaultParentFirst(c); ok {
			return p, fmt.Sprintf("%s in %s", strings.ReplaceAll(coreOptionsClass, "/", "."), j.Path)
		}
	}
	return fallbackParentFirst, "the default of Flink 1.18 to 2.2 (no readable CoreOptions in flink-dist)"
}

// additionalParentFirst is classloader.parent-first-patterns.additional
// as the process runs with it (ReadConfig: the config file, flat key or
// nested, FLINK_PROPERTIES, argv): a ';'-separated string or a YAML list,
// and where it was set.
func additionalParentFirst(c admission.Config) (patterns []string, from string) {
	e, ok := c.Effective(keyParentFirstAdditional)
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
