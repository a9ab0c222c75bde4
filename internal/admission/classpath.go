package admission

import (
	"slices"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// Deep are the facts the shadowing and linkage rules read, gathered only
// when asked for (host.Settings.Deep): every JAR of lib and usrlib indexed
// for its classes, and the parent-first patterns of the user class loader.
// The indexes read a class's bytes when a rule asks for it.
type Deep struct {
	Lib    []*payload.Archive // parallel to Facts.Classpath; nil where the JAR is unreadable
	Usrlib []*payload.Archive // parallel to Facts.Usrlib
	// ParentFirst are the patterns usrlib's class loader leaves to lib:
	// classloader.parent-first-patterns.default as the host's flink-dist
	// defines it, then .additional from the config file.
	ParentFirst     []string
	ParentFirstFrom string // where the default came from
	// ParentFirstDefault is how many of ParentFirst are the default's
	// (the rest are .additional).
	ParentFirstDefault int
	Err                error // the deep facts could not be gathered; the rules say so

	// Baked is the image's baked deep verdict when it applies (Lib is
	// then its class index); VerdictErr says why the image's verdict file
	// could not be used (the rules ran in full), at VerdictPath.
	Baked       *Baked
	VerdictErr  error
	VerdictPath string

	// Plugins are the plugin folders with a JAR to judge (one not the
	// host's own), each judged in the class loader Flink's PluginLoader
	// gives it: its JARs, lib only for PluginParentFirst.
	Plugins               []DeepPlugin
	PluginParentFirst     []string
	PluginParentFirstFrom string

	// Prewalk is parsing usrlib's classes ahead of the linkage walk
	// (jvm.StartPrewalk), nil when nothing is; the classpath model of
	// the rules adopts it, Close stops it.
	Prewalk *jvm.Prewalk
}

// DeepPlugin is one plugin folder of the deep facts: its JARs as read at
// the listing and, parallel to them, their archives (nil where one could
// not be opened).
type DeepPlugin struct {
	Name, Dir string
	JARs      []*payload.JAR
	Archives  []*payload.Archive
}

// Close releases the JARs the indexes keep open.
func (d *Deep) Close() {
	if d == nil {
		return
	}
	d.Prewalk.Stop()
	all := slices.Concat(d.Lib, d.Usrlib)
	for _, p := range d.Plugins {
		all = append(all, p.Archives...)
	}
	for _, a := range all {
		_ = a.Close() // read-only files: nothing is lost on a failed close
	}
}

// searched says where a loader looks for a class, for a finding.
func searched(l *jvm.Loader, name string) string {
	switch {
	case l.Isolated && l.ParentFirstFor(name):
		return "lib, then " + l.Name + " (a plugin parent-first pattern)"
	case l.Isolated:
		return l.Name + " (" + plural(len(l.JARs), "JAR") + "; a plugin's class loader takes from lib only the classes of its parent-first patterns)"
	case l.Parent == nil:
		return "lib (" + plural(len(l.JARs), "JAR") + ", flink-dist last)"
	case l.ParentFirstFor(name):
		return "lib, then usrlib (parent-first pattern)"
	default:
		return "usrlib, then lib (child-first)"
	}
}

// clusterProvided: a class of a package the parent-first patterns leave to
// the cluster's class path beyond lib, java. and the ones lib already has
// aside: Hadoop (HADOOP_CLASSPATH), which Flink's docs tell users to add
// outside lib. A library there that nothing in lib provides is not judged
// missing.
func clusterProvided(parentFirst []string, class string) bool {
	binary := strings.ReplaceAll(class, "/", ".")
	for _, p := range parentFirst {
		if strings.HasPrefix(p, "org.apache.hadoop") && strings.HasPrefix(binary, p) {
			return true
		}
	}
	return false
}

// newClasspath arranges the deep facts as Flink's class loaders do.
func newClasspath(d *Deep) *jvm.Classpath {
	var indexed jvm.Indexed
	if d.Baked != nil {
		indexed = d.Baked.Classes
	}
	cp := jvm.NewClasspath(d.Lib, d.Usrlib, d.ParentFirst, indexed)
	cp.Adopt(d.Prewalk)
	return cp
}

func plural(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.Itoa(n) + " " + what + "s"
}
