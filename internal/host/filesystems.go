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

// gatherFileSystems reads what Flink's FileSystem and plugin loader will
// find: plugins/ as Flink's DirectoryBasedPluginFinder lists it (each
// subfolder one plugin, its JARs found recursively; files straight in it
// ignored), what the image entrypoint's ENABLE_BUILT_IN_PLUGINS links in
// after the check, and, only when a configured location needs a scheme
// other than file, the FileSystemFactory providers of lib and of each
// plugin with the scheme their getScheme() returns.
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
	if f.Config.Dir == "" || !admission.NeedsFactories(distVersion(f.Classpath), f.Config.Role, f.Config.Entries) {
		return out
	}
	if s.ReadJAR != nil {
		out.NotRead = "the image's JARs are judged from their facts, without their bytes"
		return out
	}
	out.FactoriesRead = true
	for _, j := range f.Classpath {
		if j.Err == nil && j.Hadoop && out.Hadoop == "" {
			out.Hadoop = j.Path
		}
		if j.Err == nil && slices.Contains(j.Services, fsFactoryService) {
			out.Factories = append(out.Factories, factories(fsys, []string{j.Path}, "")...)
		}
	}
	if out.Hadoop == "" && s.Getenv != nil {
		if v, _ := s.Getenv("HADOOP_CLASSPATH"); strings.TrimSpace(v) != "" {
			out.Hadoop = "HADOOP_CLASSPATH"
		}
	}
	for _, p := range out.Plugins {
		out.Factories = append(out.Factories, factories(fsys, p.JARs, p.Name)...)
	}
	return out
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

// factories reads the FileSystemFactory providers the services files of
// jars name (one class loader's JARs: lib's one JAR, or a plugin's), each
// with the scheme its getScheme() returns, found in the class or its
// superclasses among jars.
func factories(fsys fs.FS, jars []string, plugin string) []admission.Factory {
	var archives []*payload.Archive
	defer func() {
		for _, a := range archives {
			_ = a.Close() // read-only: nothing to lose
		}
	}()
	var out []admission.Factory
	var errs []admission.Factory
	for _, j := range jars {
		a, err := payload.OpenArchive(fsys, rel(j))
		if err != nil {
			errs = append(errs, admission.Factory{JAR: j, Plugin: plugin, Err: err.Error()})
			continue
		}
		archives = append(archives, a)
	}
	for _, a := range archives {
		if !slices.Contains(a.Services, "META-INF/services/"+fsFactoryService) {
			continue
		}
		data, err := a.File("META-INF/services/" + fsFactoryService)
		if err != nil {
			out = append(out, admission.Factory{JAR: a.Path, Plugin: plugin, Err: err.Error()})
			continue
		}
		for _, class := range payload.ServiceClasses(data) {
			fac := admission.Factory{Class: strings.ReplaceAll(class, "/", "."), JAR: a.Path, Plugin: plugin}
			fac.Scheme, fac.Unknown, fac.Err = schemeOf(archives, class)
			out = append(out, fac)
		}
	}
	return append(out, errs...)
}

// schemeOf finds getScheme() in class or its superclasses among archives
// and returns the constant it returns. unknown is a factory that loads but
// whose scheme is computed; err says why there is no scheme.
func schemeOf(archives []*payload.Archive, class string) (scheme string, unknown bool, err string) {
	name := class
	for range maxSuper {
		var data []byte
		for _, a := range archives {
			if _, ok := a.Classes[name]; ok {
				b, rerr := a.Class(name, nil)
				if rerr != nil {
					return "", false, rerr.Error()
				}
				data = b
				break
			}
		}
		if data == nil {
			if name == class {
				return "", false, fmt.Sprintf("the class %s is not in the JARs of its class loader: ServiceLoader fails on it and Flink skips it", strings.ReplaceAll(class, "/", "."))
			}
			return "", true, fmt.Sprintf("getScheme() is inherited from %s, outside the JARs read", strings.ReplaceAll(name, "/", "."))
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
