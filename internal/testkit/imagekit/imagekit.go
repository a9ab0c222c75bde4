// Package imagekit builds container images from scratch for tests, with
// go-containerregistry: no base image can be pulled here. An image is a
// busybox layer (the static busybox of the machine, for /bin/sh), a
// Flink-like /opt/flink written by the test kit, a JDK release file, and a
// test double of Flink's docker-entrypoint.sh that reports how it was
// started. Bake then adds the StreamFusion layer exactly as images get it.
package imagekit

import (
	"archive/tar"
	"bytes"
	"cmp"
	"fmt"
	"io"
	"os"
	"path"
	"slices"
	"sort"
	"strings"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// FlinkDouble stands in for Flink's docker-entrypoint.sh: it prints one
// line naming what started, its PID and its arguments, then exits 0. It is
// written for this project; it dispatches on the same words Flink's does.
const FlinkDouble = `#!/bin/sh
case "$1" in
  jobmanager|standalone-job|taskmanager|history-server) role="$1"; shift ;;
  help) echo "flink-double: usage: jobmanager|standalone-job|taskmanager|history-server"; exit 0 ;;
  *) role="pass-through" ;;
esac
echo "flink-double: started role=$role pid=$$ uid=$(id -u) args=$*"
if [ "$role" = "pass-through" ]; then exec "$@"; fi
`

// Entry is one file of a layer.
type Entry struct {
	Name     string // absolute or relative to /
	Data     []byte
	Mode     int64
	Link     string // a symbolic link to Link, when set
	Dir      bool
	Whiteout bool
	Opaque   bool // the .wh..wh..opq marker of directory Name
	UID, GID int  // owner and group (default root)
}

// Layer writes entries as an uncompressed-tar layer (OCI media type).
func Layer(entries ...Entry) v1.Layer {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	sort.SliceStable(entries, func(i, j int) bool { return entries[i].Name < entries[j].Name })
	mod := time.Unix(0, 0)
	for _, e := range entries {
		name := strings.TrimPrefix(e.Name, "/")
		h := &tar.Header{Name: name, Mode: e.Mode, ModTime: mod, Typeflag: tar.TypeReg, Size: int64(len(e.Data)), Uid: e.UID, Gid: e.GID}
		switch {
		case e.Whiteout:
			h.Name, h.Size = path.Join(path.Dir(name), ".wh."+path.Base(name)), 0
		case e.Opaque:
			h.Name, h.Size = path.Join(name, ".wh..wh..opq"), 0
		case e.Dir:
			h.Typeflag, h.Name, h.Size = tar.TypeDir, name+"/", 0
		case e.Link != "":
			h.Typeflag, h.Linkname, h.Size = tar.TypeSymlink, e.Link, 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		must(tw.WriteHeader(h))
		if h.Size > 0 {
			_, err := tw.Write(e.Data)
			must(err)
		}
	}
	must(tw.Close())
	data := buf.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(data)), nil }, tarball.WithMediaType(types.OCILayer))
	must(err)
	return l
}

func must(err error) {
	if err != nil {
		panic(err)
	}
}

// Busybox returns a layer with the static busybox at /bin/busybox and the
// applets a shell script needs linked to it. path is the busybox binary
// (Debian's busybox-static installs /bin/busybox).
func Busybox(binary string) (v1.Layer, error) {
	data, err := os.ReadFile(binary)
	if err != nil {
		return nil, fmt.Errorf("busybox for test images: %w (apt-get install busybox-static)", err)
	}
	entries := []Entry{{Name: "bin/busybox", Data: data, Mode: 0o755}}
	for _, applet := range []string{"sh", "id", "cat", "echo", "ls", "sleep", "env", "true", "false", "test", "bash"} {
		entries = append(entries, Entry{Name: "bin/" + applet, Link: "busybox"})
	}
	return Layer(entries...), nil
}

// Base describes a Flink-like base image.
type Base struct {
	Dist    testkit.Dist
	User    string // "flink" image user: "9999" (2.2) or "" (1.18 starts as root)
	Arch    string // amd64 (default) or arm64
	Busybox v1.Layer
	Env     []string // more Env, before the usual (the first of a name wins, as getenv reads it)
	Extra   []Entry  // more files in the Flink layer
}

// Image builds the base image: a Flink image as the official ones are laid
// out, with the test double of Flink's script at /docker-entrypoint.sh.
func (b Base) Image() (v1.Image, error) {
	var entries []Entry
	for name, data := range b.Dist.Tree() {
		mode := int64(0o644)
		if strings.Contains(name, "/bin/") {
			mode = 0o755
		}
		entries = append(entries, Entry{Name: name, Data: data, Mode: mode})
	}
	entries = append(entries,
		Entry{Name: "docker-entrypoint.sh", Data: []byte(FlinkDouble), Mode: 0o755},
		Entry{Name: "tmp", Dir: true, Mode: 0o1777},
		Entry{Name: "dev", Dir: true, Mode: 0o755},
		Entry{Name: "usr/lib/locale/locale-archive", Data: []byte("stand-in"), Mode: 0o644},
	)
	entries = append(entries, b.Extra...)
	img := empty.Image
	img = mutate.MediaType(img, types.OCIManifestSchema1)
	img = mutate.ConfigMediaType(img, types.OCIConfigJSON)
	var layers []v1.Layer
	if b.Busybox != nil {
		layers = append(layers, b.Busybox)
	}
	layers = append(layers, Layer(entries...))
	img, err := mutate.AppendLayers(img, layers...)
	if err != nil {
		return nil, err
	}
	return Configure(img, b.Arch, b.User, append(slices.Clone(b.Env),
		"PATH=/opt/flink/bin:/opt/java/openjdk/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"JAVA_HOME=/opt/java/openjdk", "LANG=en_US.UTF-8", "LC_ALL=en_US.UTF-8", "FLINK_HOME=/opt/flink",
	))
}

// Configure gives img the config of a Flink image as the official ones
// have it: linux on arch (amd64 when empty), env, ENTRYPOINT
// /docker-entrypoint.sh, CMD help, the user, the working directory
// /opt/flink, created at the epoch; more changes the rest.
func Configure(img v1.Image, arch, user string, env []string, more ...func(*v1.Config)) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.OS, cf.Architecture = "linux", cmp.Or(arch, "amd64")
	cf.Created = v1.Time{Time: time.Unix(0, 0).UTC()}
	c := &cf.Config
	c.Env, c.Entrypoint, c.Cmd, c.User, c.WorkingDir = env, []string{"/docker-entrypoint.sh"}, []string{"help"}, user, "/opt/flink"
	for _, m := range more {
		m(c)
	}
	return mutate.ConfigFile(img, cf)
}

// WithEnv is img with env added to its config's environment: the same
// layers, another image (a label alone may be answered as the same
// content).
func WithEnv(img v1.Image, env ...string) (v1.Image, error) {
	cf, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cf = cf.DeepCopy()
	cf.Config.Env = append(cf.Config.Env, env...)
	return mutate.ConfigFile(img, cf)
}
