package host

import (
	"context"
	"fmt"
	"io/fs"
	"strings"

	"go.yaml.in/yaml/v3"

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
func gatherDeep(ctx context.Context, fsys fs.FS, s Settings, f *admission.Facts) *admission.Deep {
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
	if s.ConfDir != "" {
		file := confFile(fsys, s.ConfDir, distVersion(f.Classpath))
		if extra := additionalParentFirst(fsys, file); len(extra) > 0 {
			d.ParentFirst = append(d.ParentFirst, extra...)
			d.ParentFirstFrom += "; " + keyParentFirstAdditional + " from " + file
		}
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

// additionalParentFirst reads classloader.parent-first-patterns.additional
// from the config file: a ';'-separated string or a YAML list, flat key or
// nested.
func additionalParentFirst(fsys fs.FS, file string) []string {
	data, err := readSmall(fsys, rel(file), 4<<20)
	if err != nil || !strings.Contains(string(data), "additional") {
		return nil
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil
	}
	n := lookupKey(&doc, "", keyParentFirstAdditional)
	if n == nil {
		return nil
	}
	var out []string
	add := func(s string) {
		for _, p := range strings.Split(s, ";") {
			if p = strings.TrimSpace(p); p != "" {
				out = append(out, p)
			}
		}
	}
	switch n.Kind {
	case yaml.ScalarNode:
		add(n.Value)
	case yaml.SequenceNode:
		for _, c := range n.Content {
			add(c.Value)
		}
	}
	return out
}

// lookupKey finds a flat Flink key in a YAML document, nested maps joined
// with dots.
func lookupKey(n *yaml.Node, prefix, key string) *yaml.Node {
	switch n.Kind {
	case yaml.DocumentNode:
		for _, c := range n.Content {
			if r := lookupKey(c, prefix, key); r != nil {
				return r
			}
		}
	case yaml.MappingNode:
		var found *yaml.Node
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i].Value
			if prefix != "" {
				k = prefix + "." + k
			}
			if k == key {
				found = n.Content[i+1]
			} else if strings.HasPrefix(key, k+".") {
				if r := lookupKey(n.Content[i+1], k, key); r != nil {
					found = r
				}
			}
		}
		return found
	}
	return nil
}
