package host

import (
	"bufio"
	"bytes"
	"debug/elf"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Bounds of what is read of the root's libraries and loader configuration.
const (
	maxLdConf      = 64 << 10 // bytes of one ld.so.conf file
	maxLdConfFiles = 64       // files ld.so.conf includes, altogether
	maxLibDirs     = 64
	maxLibBytes    = 1 << 30 // a library larger than this is not opened for its versions
)

// multiarch are Debian's tuples of the platforms' system library
// directories.
var multiarch = map[string]string{"x86_64": "x86_64-linux-gnu", "aarch64": "aarch64-linux-gnu"}

// ReadLibs finds, in the root fsys, what the dynamic loader would give the
// native libraries of the JARs: each DT_NEEDED name they have in the
// loader's search path (/etc/ld.so.conf's directories, which its cache is
// made from, then the system directories), or in the JDK's library
// directories (javaRelease is the JDK's release file); and for each file
// they need versions from, the versions it defines (.gnu.version_d, read
// with debug/elf; only the headers and the version sections are read). It
// reads what ldd would ask the loader, without running anything of the
// root.
func ReadLibs(fsys fs.FS, arch, javaRelease string, jars []*payload.JAR, versionsOf func(fs.FS, string) ([]string, error)) *admission.Libs {
	var names, versioned []string
	for _, j := range jars {
		for _, n := range j.ELF {
			for _, need := range n.Needed {
				if !slices.Contains(names, need) {
					names = append(names, need)
				}
			}
			for _, v := range n.Versions {
				if !slices.Contains(versioned, v.File) {
					versioned = append(versioned, v.File)
				}
			}
		}
	}
	libs := &admission.Libs{Dirs: libDirs(fsys, arch, javaRelease), Found: map[string]string{}, Defs: map[string]admission.LibDefs{}}
	if len(names)+len(versioned) == 0 {
		return libs
	}
	for _, name := range append(names, versioned...) {
		if _, done := libs.Found[name]; !done {
			libs.Found[name] = findLib(fsys, libs.Dirs, name)
		}
	}
	var err error
	for _, name := range versioned {
		if p := libs.Found[name]; p != "" {
			if versionsOf != nil {
				d := admission.LibDefs{Path: p}
				if d.Versions, err = versionsOf(fsys, rel(p)); err != nil {
					d.Err = err.Error()
				}
				libs.Defs[name] = d
				continue
			}
			libs.Defs[name] = readDefs(fsys, p)
		}
	}
	return libs
}

// SystemLibDirs are the directories the loader searches without
// ld.so.conf: Debian's multiarch ones and the usual others, and the
// directories Debian's ld.so.conf.d names.
func SystemLibDirs(arch string) []string {
	var out []string
	if t, ok := multiarch[arch]; ok {
		out = append(out, "/usr/local/lib/"+t, "/lib/"+t, "/usr/lib/"+t)
	}
	return append(out, "/usr/local/lib", "/lib64", "/usr/lib64", "/lib", "/usr/lib")
}

// libDirs is the loader's search path in the root: ld.so.conf's
// directories, the system directories of the platform, the JDK's.
func libDirs(fsys fs.FS, arch, javaRelease string) []string {
	var dirs []string
	add := func(d string) {
		d = path.Clean(d)
		if strings.HasPrefix(d, "/") && !slices.Contains(dirs, d) && len(dirs) < maxLibDirs {
			dirs = append(dirs, d)
		}
	}
	files := 0
	var conf func(name string)
	conf = func(name string) {
		if files++; files > maxLdConfFiles {
			return
		}
		data, err := readSmall(fsys, rel(name), maxLdConf)
		if err != nil {
			return
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			line, _, _ := strings.Cut(sc.Text(), "#")
			line = strings.TrimSpace(line)
			if rest, ok := strings.CutPrefix(line, "include"); ok && (rest == "" || rest[0] == ' ' || rest[0] == '\t') {
				for _, pat := range strings.Fields(rest) {
					if !strings.HasPrefix(pat, "/") {
						pat = path.Join(path.Dir(name), pat)
					}
					matches, _ := fs.Glob(fsys, rel(pat))
					slices.Sort(matches)
					for _, m := range matches {
						conf("/" + m)
					}
				}
				continue
			}
			if line != "" {
				add(line)
			}
		}
	}
	conf("/etc/ld.so.conf")
	for _, d := range SystemLibDirs(arch) {
		add(d)
	}
	if javaRelease != "" {
		home := path.Dir(javaRelease)
		add(path.Join(home, "lib"))
		add(path.Join(home, "lib", "server"))
	}
	return dirs
}

// findLib returns where name is first found in dirs as a regular file
// (links followed within the root), "" when nowhere.
func findLib(fsys fs.FS, dirs []string, name string) string {
	if strings.Contains(name, "/") || name == "" || name == "." || name == ".." {
		return ""
	}
	for _, d := range dirs {
		p := path.Join(d, name)
		if _, info, err := rootfs.Resolve(fsys, rel(p)); err == nil && info.Mode().IsRegular() {
			return p
		}
	}
	return ""
}

// readDefs reads the versions the library at p defines.
func readDefs(fsys fs.FS, p string) admission.LibDefs {
	d := admission.LibDefs{Path: p}
	f, _, info, err := rootfs.OpenRegular(fsys, rel(p))
	if err != nil {
		d.Err = err.Error()
		return d
	}
	defer f.Close()
	r, ok := f.(io.ReaderAt)
	switch {
	case !ok:
		d.Err = "file system gives no random access"
		return d
	case info.Size() > maxLibBytes:
		d.Err = fmt.Sprintf("%d bytes, more than the %d this tool opens", info.Size(), maxLibBytes)
		return d
	}
	versions, err := DefinedVersions(io.NewSectionReader(r, 0, info.Size()))
	if err != nil {
		d.Err = err.Error()
		return d
	}
	d.Versions = versions
	return d
}

// DefinedVersions reads the symbol versions an ELF object defines
// (.gnu.version_d), the base version (the file's own name) left out.
func DefinedVersions(r io.ReaderAt) (out []string, err error) {
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, fmt.Errorf("damaged ELF object: %v", p)
		}
	}()
	f, err := elf.NewFile(r)
	if err != nil {
		return nil, err
	}
	defs, err := f.DynamicVersions()
	if err != nil {
		return nil, err
	}
	for _, d := range defs {
		if d.Flags&elf.VER_FLG_BASE == 0 {
			out = append(out, d.Name)
		}
	}
	return out, nil
}
