package flatten

import (
	"bytes"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// What the native-* rules need of an image besides its payloads' ELF
// facts: the loader's configuration (/etc/ld.so.conf and what it
// includes, kept whole), which libraries its search path holds (kept as
// stand-ins), and the symbol versions its C and C++ runtime libraries
// define (read from the layer as it streams by, kept as libFacts).

// maxRuntimeLib bounds a runtime library read for its versions (libc.so.6
// and libstdc++.so.6 are 2-3 MB).
const maxRuntimeLib = 64 << 20

// libFacts are the versions a runtime library defines (host.DefinedVersions).
type libFacts struct {
	Versions []string `json:"v,omitempty"`
	Err      string   `json:"e,omitempty"`
}

// nativeSelection is the image's platform as StreamFusion-Native-Platforms
// spells it and the directories of its loader's search path whose
// libraries are kept: the system directories for the architecture, the
// usual ld.so.conf directories, and the JDK's. Directories that only an
// image's own ld.so.conf names are not kept (a library there is reported
// missing; the docs say so).
func nativeSelection(c settings.Config, arch string) (string, map[string]bool) {
	arch = host.NormalizeArch(arch)
	if arch == "" {
		return "", nil
	}
	dirs := map[string]bool{}
	for _, d := range host.SystemLibDirs(arch) {
		dirs[strings.TrimPrefix(d, "/")] = true
	}
	if c.JavaHome != "" {
		home := strings.TrimPrefix(path.Clean(c.JavaHome), "/")
		dirs[home+"/lib"], dirs[home+"/lib/server"] = true, true
	}
	return "linux-" + arch, dirs
}

// isLdConf matches the loader's configuration files.
func isLdConf(name string) bool {
	return name == "etc/ld.so.conf" || (path.Dir(name) == "etc/ld.so.conf.d" && strings.HasSuffix(name, ".conf"))
}

// runtimeLib matches the libraries whose version definitions are kept:
// glibc's and the GCC runtime's, the ones payload libraries need
// versions from (GLIBC_, GLIBCXX_, CXXABI_, GCC_).
func runtimeLib(base string) bool {
	for _, p := range []string{"libc.so", "libc-", "libm.so", "libm-", "libstdc++.so", "libgcc_s.so", "libpthread", "libdl.so", "libdl-", "librt.so", "librt-", "ld-linux"} {
		if strings.HasPrefix(base, p) {
			return true
		}
	}
	return false
}

// readLib reads a runtime library from the layer's stream for the
// versions it defines.
func (s *scanner) readLib(r io.Reader, size int64) (*libFacts, error) {
	if size > maxRuntimeLib {
		return &libFacts{Err: fmt.Sprintf("%d bytes, more than the %d this tool reads of a library", size, maxRuntimeLib)}, nil
	}
	data := make([]byte, size)
	if _, err := io.ReadFull(r, data); err != nil {
		return nil, err
	}
	vs, err := host.DefinedVersions(bytes.NewReader(data))
	if err != nil {
		return &libFacts{Err: err.Error()}, nil
	}
	return &libFacts{Versions: vs}, nil
}

// ReadLibVersions answers host.ReadLibs from the facts: the versions the
// library at name (links resolved in the merged view) defines.
func (v *View) ReadLibVersions(fsys fs.FS, name string) ([]string, error) {
	target, _, err := rootfs.Resolve(fsys, name)
	if err != nil {
		return nil, err
	}
	mf, ok := v.FS[target]
	if !ok {
		return nil, fmt.Errorf("/%s: %w", target, fs.ErrNotExist)
	}
	n, _ := mf.Sys.(*Node)
	if n == nil || n.Lib == nil {
		return nil, fmt.Errorf("/%s: not a library whose versions this tool keeps", target)
	}
	if n.Lib.Err != "" {
		return nil, fmt.Errorf("/%s: %s", target, n.Lib.Err)
	}
	return n.Lib.Versions, nil
}
