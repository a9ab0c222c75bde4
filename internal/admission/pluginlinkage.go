package admission

import (
	"fmt"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// keyPluginParentFirstAdditional is the option that lets a plugin's class
// loader take more of lib's classes parent-first.
const keyPluginParentFirstAdditional = "plugin.classloader.parent-first-patterns.additional"

// judgePlugins judges the code of every plugin folder of the deep facts
// in the class loader Flink's PluginLoader gives it (jvm.Classpath.Plugin):
// its own JARs first and only, lib for the classes of the plugin
// parent-first patterns (Flink's own API and the logging APIs). The
// classes reachable from each JAR's service providers are resolved as the
// linkage rules resolve lib's; a JAR of the host's own release is only
// resolved against. libJARs are lib's (and usrlib's) deep JARs, for the
// packages the policy asks about.
//
// Severity: a plugin a configured location's scheme needs is an error
// where the policy says the JAR's severity, as a payload's; any other
// plugin's findings are warnings: Flink loads its factories at start but
// fails only when the plugin is used (a reporter's: runs without it).
func (v *view) judgePlugins(cp *jvm.Classpath, libJARs []*deepJAR, out *linkage) {
	if v.Deep == nil || len(v.Deep.Plugins) == 0 {
		return
	}
	used := v.pluginsInUse()
	for _, p := range v.Deep.Plugins {
		v.judgePlugin(cp, libJARs, p, used[p.Name] != "", out)
	}
}

// judgePlugin judges one plugin folder (judgePlugins); used: a configured
// location needs it.
func (v *view) judgePlugin(cp *jvm.Classpath, libJARs []*deepJAR, p DeepPlugin, used bool, out *linkage) {
	l := cp.Plugin(p.Dir, nil, v.Deep.PluginParentFirst)
	var judge, mine []*deepJAR
	for i, j := range p.JARs {
		a := p.Archives[i]
		if a == nil {
			continue
		}
		l.JARs = append(l.JARs, a)
		d := &deepJAR{jar: j, archive: a, loader: l, sev: Warning, plugin: p.Name, host: v.pluginHostOwn(j), roots: flinkServiceProviders(a)}
		if used {
			d.sev, d.mustLoad = Error, true
		}
		if s := v.stockOf[j.Path]; s != nil && s.Line != "" {
			d.builtFor = "Flink " + s.Line + " (" + s.Evidence + ")"
		}
		mine = append(mine, d)
		if d.host {
			cp.ResolveOnly(a)
		} else {
			judge = append(judge, d)
		}
	}
	if len(judge) == 0 {
		return
	}
	// The packages the plugin's loader sees: its JARs', and lib's that
	// the plugin parent-first patterns cover.
	visible := func() map[string]bool {
		visible := packages(mine)
		for _, d := range libJARs {
			for name := range d.archive.Classes {
				if l.ParentFirstFor(name) {
					visible[pkg(name)] = true
				}
			}
		}
		return visible
	}
	r := &resolver{cp: cp, packages: lazy(visible), maxMajor: v.maxClassMajor(), line: v.line(),
		hostPackages: lazy(func() map[string]bool { return hostPackages(libJARs) }),
		parentFirst:  v.Deep.PluginParentFirst}
	r.dropped = v.droppedPackages(judge)
	var fresh linkage
	r.judge(judge, &fresh)
	if !used {
		// A plugin nothing needs fails only when used: at most a warning.
		for _, list := range []*[]Finding{&fresh.class, &fresh.method, &fresh.field, &fresh.version} {
			for i := range *list {
				(*list)[i].Severity = Warning
			}
		}
	}
	out.class = append(out.class, fresh.class...)
	out.method = append(out.method, fresh.method...)
	out.field = append(out.field, fresh.field...)
	out.version = append(out.version, fresh.version...)
}

// pluginHostOwn: a plugin JAR of the host's release, by the planner's
// release or flink-dist's (an image without a planner in lib).
func (v *view) pluginHostOwn(j *payload.JAR) bool {
	return v.hostOwn(j) || v.release != nil && HostOwn(j, v.release.Version)
}

// flinkServiceProviders are the classes a plugin JAR's service files for
// Flink's own services name: what Flink's PluginLoader loads of it (a
// plugin's other service files, Hadoop's, are its bundled code's).
func flinkServiceProviders(a *payload.Archive) []string {
	out := []string{}
	for _, s := range a.Services {
		if !strings.HasPrefix(path.Base(s), "org.apache.flink.") {
			continue
		}
		if data, err := a.File(s); err == nil {
			out = append(out, payload.ServiceClasses(data)...)
		}
	}
	return out
}

// pluginsInUse maps each plugin folder a configured location needs (one
// of its file system factories serves the location's scheme) to the
// location, "key: value (source)".
func (v *view) pluginsInUse() map[string]string {
	fsys := v.FileSystems
	used := map[string]string{}
	if fsys == nil || !fsys.FactoriesRead {
		return used
	}
	rel, _ := v.confRelease()
	for _, l := range locations(rel, v.Config.Role, v.Config.Entries) {
		for _, f := range fsys.Factories {
			if f.Plugin != "" && l.Err == "" && f.Scheme == l.Scheme && used[f.Plugin] == "" {
				used[f.Plugin] = fmt.Sprintf("%s: %s (%s)", l.Key, l.Value, l.Source)
			}
		}
	}
	return used
}
