package host

import (
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// gatherFileSystems reads what Flink's FileSystem, plugin loader and
// reporter setup will find: plugins/ as Flink's DirectoryBasedPluginFinder
// lists it (each subfolder one plugin, the *.jar files directly in it its
// JARs; files straight in plugins/ and JARs of a plugin's subfolders
// ignored), what the image entrypoint's
// ENABLE_BUILT_IN_PLUGINS links in after the check, and the file system
// and reporter factories of lib and of each plugin.
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
			// An image's facts keep no files of opt/ (only lib, usrlib and
			// plugins are read): what the names lead to is not known there.
			enable(fsys, home, v, out, s.ReadJAR == nil)
		}
	}
	providers(fsys, s, f, out)
	return out
}

// providers takes the file system and reporter factories of lib and of
// every plugin from the JARs' reads (payload.Options.Providers: each JAR's
// service files and the getScheme() constants). An image's check (and
// AllProviders) reads all of them, whatever the configuration names, so
// that another configuration (a deployment's) can be judged against them
// (Complete); a start reads them only when its configuration names a
// location with a scheme other than file or a reporter, and then only the
// JARs whose directory lists such a service file. A class a JAR's service file
// names but that JAR lacks may be in another JAR of its class loader: it
// counts as unknown, never as missing, except in a plugin of one JAR. A
// plugin JAR not read with the others (a linked folder, an
// ENABLE_BUILT_IN_PLUGINS JAR of opt/) is read here.
func providers(fsys fs.FS, s Settings, f *admission.Facts, out *admission.FileSystems) {
	all := s.AllProviders || s.ReadJAR != nil
	if !all && (f.Config.Dir == "" || !admission.NeedsProviders(distVersion(f.Classpath), f.Config.Role, f.Config.Entries)) {
		return
	}
	out.FactoriesRead, out.ReportersRead, out.Complete = true, true, all
	read := s.ReadJAR
	if read == nil {
		read = payload.Open
	}
	byPath := map[string]*payload.JAR{}
	for _, j := range slices.Concat(f.Classpath, f.Plugins) {
		byPath[j.Path] = j
	}
	// withProviders is j with its providers: a JAR read without them (a
	// start reads them only now, when the configuration needs them) is
	// read again if its directory lists one of their service files.
	withProviders := func(j *payload.JAR) *payload.JAR {
		if j.Err != nil || j.Providers != nil || !slices.ContainsFunc(j.Services, func(svc string) bool { return slices.Contains(payload.ProviderServices, svc) }) {
			return j
		}
		return read(fsys, rel(j.Path), payload.Options{Providers: true})
	}
	add := func(j *payload.JAR, plugin string, alone bool) {
		j = withProviders(j)
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
				j = read(fsys, rel(path), payload.Options{Providers: true})
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
			var below []string
			if linked {
				names, _, _ := List(fsys, p)
				for _, n := range names {
					below = append(below, "/"+n)
				}
			} else {
				for _, j := range jars {
					if strings.HasPrefix(j.Path, p+"/") {
						below = append(below, j.Path)
					}
				}
			}
			// Flink lists a plugin folder's own files (Files.list in
			// DirectoryBasedPluginFinder, both lines): a JAR of a
			// subfolder is never loaded.
			for _, j := range below {
				if path.Dir(j) == p {
					pl.JARs = append(pl.JARs, j)
				} else {
					out.Nested = append(out.Nested, j)
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
// .jar>/; a name opt/ lacks ends the script. Unless judged (an image's
// facts, which hold no files of opt/), every name is taken as there, its
// JAR unread.
func enable(fsys fs.FS, home, value string, out *admission.FileSystems, judged bool) {
	for _, name := range strings.Fields(strings.ReplaceAll(value, ";", " ")) {
		opt := "/" + rel(path.Join(home, "opt", name))
		_, _, err := rootfs.Resolve(fsys, rel(opt))
		out.Enabled = append(out.Enabled, admission.Enabled{Name: name, Opt: opt, Present: err == nil, Unjudged: !judged})
		if err != nil && judged {
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
