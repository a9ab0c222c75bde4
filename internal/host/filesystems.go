package host

import (
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// fsFactoryService is the service Flink's FileSystem loads its factories by.
const fsFactoryService = "org.apache.flink.core.fs.FileSystemFactory"

// maxSuper bounds the walk up a factory's superclasses to its getScheme.
const maxSuper = 16

// gatherFileSystems reads what Flink's FileSystem, plugin loader and
// reporter setup will find: plugins/ as Flink's DirectoryBasedPluginFinder
// lists it (each subfolder one plugin, its JARs found recursively; files
// straight in it ignored), what the image entrypoint's
// ENABLE_BUILT_IN_PLUGINS links in after the check; only when a configured
// location needs a scheme other than file, the FileSystemFactory providers
// of lib and of each plugin with the scheme their getScheme() returns; and
// only when the configuration names reporters, the reporter factories of
// lib and the plugins.
func gatherFileSystems(fsys fs.FS, s Settings, f *admission.Facts) *admission.FileSystems {
	out := &admission.FileSystems{}
	home := s.FlinkHome
	if home == "" {
		home = path.Dir(path.Clean(s.LibDir))
	}
	if entries, err := fs.ReadDir(fsys, rel(path.Join(home, "opt"))); err == nil {
		for _, e := range entries {
			if strings.HasSuffix(e.Name(), ".jar") {
				out.Opt = append(out.Opt, "/"+rel(path.Join(home, "opt", e.Name())))
			}
		}
	}
	if s.PluginsDir != "" {
		readPlugins(fsys, "/"+rel(s.PluginsDir), f.Plugins, out)
	}
	if s.Launch == LaunchImage && s.Getenv != nil {
		if v, _ := s.Getenv("ENABLE_BUILT_IN_PLUGINS"); v != "" {
			enable(fsys, home, v, out)
		}
	}
	if s.ReadJAR != nil {
		fromFacts(fsys, s, f, out)
	} else {
		fromJARs(fsys, s, f, out)
	}
	return out
}

// fromJARs reads the providers the configuration needs from the JARs'
// bytes (a start, `check`): none when no location needs a scheme other
// than file and no reporter is named.
func fromJARs(fsys fs.FS, s Settings, f *admission.Facts, out *admission.FileSystems) {
	rel := distVersion(f.Classpath)
	needFS := f.Config.Dir != "" && admission.NeedsFactories(rel, f.Config.Role, f.Config.Entries)
	kinds := admission.ReporterKindsNamed(rel, f.Config.Entries)
	if !needFS && len(kinds) == 0 {
		return
	}
	var services []string
	if needFS {
		services = append(services, fsFactoryService)
	}
	for _, k := range kinds {
		services = append(services, k.Service)
	}
	// lib's loader: the JARs whose directory lists one of the services.
	var libJARs []string
	for _, j := range f.Classpath {
		if j.Err == nil && j.Hadoop && out.Hadoop == "" {
			out.Hadoop = j.Path
		}
		if j.Err == nil && slices.ContainsFunc(services, func(svc string) bool { return slices.Contains(j.Services, svc) }) {
			libJARs = append(libJARs, j.Path)
		}
	}
	if out.Hadoop == "" && s.Getenv != nil {
		if v, _ := s.Getenv("HADOOP_CLASSPATH"); strings.TrimSpace(v) != "" {
			out.Hadoop = "HADOOP_CLASSPATH"
		}
	}
	loaders := []*loader{openLoader(fsys, libJARs, "")}
	for _, p := range out.Plugins {
		loaders = append(loaders, openLoader(fsys, p.JARs, p.Name))
	}
	defer func() {
		for _, l := range loaders {
			l.close()
		}
	}()
	out.FactoriesRead = needFS
	out.ReportersRead = len(kinds) > 0
	for _, l := range loaders {
		out.Unreadable = append(out.Unreadable, l.errs...)
		if needFS {
			for _, p := range l.providers(fsFactoryService) {
				fac := admission.Factory{Provider: p}
				if !p.Missing && p.Err == "" {
					fac.Scheme, fac.Unknown, fac.SchemeErr = l.schemeOf(strings.ReplaceAll(p.Class, ".", "/"))
				}
				out.Factories = append(out.Factories, fac)
			}
		}
		for _, k := range kinds {
			for _, p := range l.providers(k.Service) {
				p.Service = k.Service
				out.Reporters = append(out.Reporters, p)
			}
		}
	}
}

// fromFacts takes the providers of lib and every plugin from the JARs'
// facts (payload.Options.Providers), as the image tooling read them from
// the layers: all of them, whatever the image's own configuration names,
// so that a deployment's configuration can be judged against them
// (Complete). A class a JAR's service file names but that JAR lacks may be
// in another JAR of its class loader: it counts as unknown, never as
// missing, except in a plugin of one JAR.
func fromFacts(fsys fs.FS, s Settings, f *admission.Facts, out *admission.FileSystems) {
	out.FactoriesRead, out.ReportersRead, out.Complete = true, true, true
	byPath := map[string]*payload.JAR{}
	for _, j := range slices.Concat(f.Classpath, f.Plugins) {
		byPath[j.Path] = j
	}
	add := func(j *payload.JAR, plugin string, alone bool) {
		for _, p := range j.Providers {
			pr := admission.Provider{Service: p.Service, Class: p.Class, JAR: j.Path, Plugin: plugin, Missing: !p.Present && alone}
			if p.Service != payload.FileSystemFactoryService {
				if p.Present || !alone {
					pr.Missing = false
				}
				out.Reporters = append(out.Reporters, pr)
				continue
			}
			fac := admission.Factory{Provider: pr, Scheme: p.Scheme, SchemeErr: p.SchemeErr}
			fac.Unknown = p.Scheme == "" && (p.Present || !alone)
			if !p.Present && !alone {
				fac.SchemeErr = "the class is not in the JAR its service file is in"
			}
			out.Factories = append(out.Factories, fac)
		}
	}
	for _, j := range f.Classpath {
		if j.Err != nil {
			continue
		}
		if j.Hadoop && out.Hadoop == "" {
			out.Hadoop = j.Path
		}
		add(j, "", false)
	}
	if out.Hadoop == "" && s.Getenv != nil {
		if v, _ := s.Getenv("HADOOP_CLASSPATH"); strings.TrimSpace(v) != "" {
			out.Hadoop = "HADOOP_CLASSPATH"
		}
	}
	for _, p := range out.Plugins {
		for _, path := range p.JARs {
			j := byPath[path]
			if j == nil {
				j = s.ReadJAR(fsys, rel(path), payload.Options{Providers: true})
			}
			if j == nil || j.Err != nil {
				why := "not read"
				if j != nil {
					why = j.Err.Error()
				}
				out.Unreadable = append(out.Unreadable, admission.Provider{JAR: path, Plugin: p.Name, Err: why})
				out.Factories = append(out.Factories, admission.Factory{Provider: admission.Provider{Class: "(unread)", JAR: path, Plugin: p.Name}, Unknown: true, SchemeErr: why})
				continue
			}
			add(j, p.Name, len(p.JARs) == 1)
		}
	}
}

// readPlugins lists plugins/ (dir, absolute): its subfolders, links to
// directories included, with the JARs below each (those of jars, which
// List found); the JARs straight in it are Loose.
func readPlugins(fsys fs.FS, dir string, jars []*payload.JAR, out *admission.FileSystems) {
	resolved, info, err := rootfs.Resolve(fsys, rel(dir))
	if err != nil || !info.IsDir() {
		return
	}
	entries, err := fs.ReadDir(fsys, resolved)
	if err != nil {
		return
	}
	out.PluginsDir = dir
	for _, e := range entries {
		p := path.Join(dir, e.Name())
		isDir := e.IsDir()
		linked := false
		if e.Type()&fs.ModeSymlink != 0 {
			if _, ti, err := rootfs.Resolve(fsys, rel(p)); err == nil && ti.IsDir() {
				isDir, linked = true, true
			}
		}
		switch {
		case isDir:
			pl := admission.Plugin{Name: e.Name(), Dir: p, Linked: linked}
			if linked {
				names, _, _ := List(fsys, p)
				for _, n := range names {
					pl.JARs = append(pl.JARs, "/"+n)
				}
			} else {
				for _, j := range jars {
					if strings.HasPrefix(j.Path, p+"/") {
						pl.JARs = append(pl.JARs, j.Path)
					}
				}
			}
			out.Plugins = append(out.Plugins, pl)
		case strings.HasSuffix(e.Name(), ".jar"):
			out.Loose = append(out.Loose, p)
		}
	}
}

// enable applies ENABLE_BUILT_IN_PLUGINS as the official image's
// docker-entrypoint.sh does after this check: each ';'-separated name is a
// file of $FLINK_HOME/opt, linked into $FLINK_HOME/plugins/<name without
// .jar>/; a name opt/ lacks ends the script.
func enable(fsys fs.FS, home, value string, out *admission.FileSystems) {
	for _, name := range strings.Fields(strings.ReplaceAll(value, ";", " ")) {
		opt := "/" + rel(path.Join(home, "opt", name))
		_, _, err := rootfs.Resolve(fsys, rel(opt))
		out.Enabled = append(out.Enabled, admission.Enabled{Name: name, Opt: opt, Present: err == nil})
		if err != nil {
			continue
		}
		dir := "/" + rel(path.Join(home, "plugins", strings.TrimSuffix(name, ".jar")))
		i := slices.IndexFunc(out.Plugins, func(p admission.Plugin) bool { return p.Dir == dir })
		if i < 0 {
			out.Plugins = append(out.Plugins, admission.Plugin{Name: path.Base(dir), Dir: dir, Enabled: true})
			i = len(out.Plugins) - 1
		}
		if !slices.Contains(out.Plugins[i].JARs, opt) {
			out.Plugins[i].JARs = append(out.Plugins[i].JARs, opt)
		}
	}
}

// loader is one class loader's JARs (lib's, or a plugin's), opened for
// their classes and service files.
type loader struct {
	plugin   string
	archives []*payload.Archive
	errs     []admission.Provider // JARs that could not be opened
}

func openLoader(fsys fs.FS, jars []string, plugin string) *loader {
	l := &loader{plugin: plugin}
	for _, j := range jars {
		a, err := payload.OpenArchive(fsys, rel(j))
		if err != nil {
			l.errs = append(l.errs, admission.Provider{JAR: j, Plugin: plugin, Err: err.Error()})
			continue
		}
		l.archives = append(l.archives, a)
	}
	return l
}

func (l *loader) close() {
	for _, a := range l.archives {
		_ = a.Close() // read-only: nothing to lose
	}
}

// providers are the classes the loader's service files of service name
// (every JAR's copy, as ServiceLoader reads them), each marked Missing
// when none of the loader's JARs holds it: ServiceLoader fails on it and
// Flink skips it.
func (l *loader) providers(service string) []admission.Provider {
	var out []admission.Provider
	for _, a := range l.archives {
		if !slices.Contains(a.Services, "META-INF/services/"+service) {
			continue
		}
		data, err := a.File("META-INF/services/" + service)
		if err != nil {
			out = append(out, admission.Provider{JAR: a.Path, Plugin: l.plugin, Err: err.Error()})
			continue
		}
		for _, class := range payload.ServiceClasses(data) {
			out = append(out, admission.Provider{Class: strings.ReplaceAll(class, "/", "."), JAR: a.Path, Plugin: l.plugin,
				Missing: l.archive(class) == nil})
		}
	}
	return out
}

func (l *loader) archive(class string) *payload.Archive {
	for _, a := range l.archives {
		if _, ok := a.Classes[class]; ok {
			return a
		}
	}
	return nil
}

// schemeOf finds getScheme() in class or its superclasses among the
// loader's JARs and returns the constant it returns. unknown is a factory
// whose scheme is computed (or inherited from outside the JARs read); err
// says why there is no scheme.
func (l *loader) schemeOf(class string) (scheme string, unknown bool, err string) {
	name := class
	for range maxSuper {
		a := l.archive(name)
		if a == nil {
			return "", true, fmt.Sprintf("getScheme() is inherited from %s, outside the JARs read", strings.ReplaceAll(name, "/", "."))
		}
		data, rerr := a.Class(name, nil)
		if rerr != nil {
			return "", false, rerr.Error()
		}
		c, perr := classfile.Parse(data, classfile.Options{MembersOnly: true, Returns: "getScheme"})
		if perr != nil {
			return "", false, perr.Error()
		}
		if c.Returns != "" {
			return c.Returns, false, ""
		}
		if slices.ContainsFunc(c.Methods, func(m classfile.Member) bool {
			return m.Name == "getScheme" && m.Descriptor == "()Ljava/lang/String;"
		}) {
			return "", true, "getScheme() computes its scheme at run time"
		}
		if c.Super == "" {
			break
		}
		name = c.Super
	}
	return "", true, "getScheme() not found in " + strings.ReplaceAll(class, "/", ".") + "'s superclasses"
}
