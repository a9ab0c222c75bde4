package imagekit

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// JavaHome is where Debian's openjdk-17-jre-headless lives in the real base.
const JavaHome = "/usr/lib/jvm/java-17-openjdk-amd64"

// FlinkUID is the uid and gid of the flink user of Flink's official images.
const FlinkUID = 9999

// RealBase is a realistic Flink image made from parts: a Debian root
// filesystem (a tarball, scripts/build-base-root), a real Flink
// distribution at /opt/flink owned by flink (uid 9999) as the official
// images own it, and a stand-in for Flink's docker-entrypoint.sh.
type RealBase struct {
	RootFS     string // root filesystem tarball
	FlinkHome  string // a real Flink distribution's FLINK_HOME layout
	Entrypoint []byte // the script installed at /docker-entrypoint.sh
	User       string // "flink" (2.2) or "" (1.18 starts as root)
}

// key identifies the inputs: the root tarball's name (which carries its
// own key), the distribution's files (names, sizes, times), the script and
// the user.
func (b RealBase) key() (string, error) {
	h := sha256.New()
	fmt.Fprintf(h, "realbase v1\n%s\n%s\n%s\n", filepath.Base(b.RootFS), b.User, b.Entrypoint)
	fi, err := os.Stat(b.RootFS)
	if err != nil {
		return "", err
	}
	fmt.Fprintf(h, "%d %d\n", fi.Size(), fi.ModTime().UnixNano())
	home, err := filepath.EvalSymlinks(b.FlinkHome)
	if err != nil {
		return "", err
	}
	err = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		fmt.Fprintf(h, "%s %o %d %d\n", rel, fi.Mode(), fi.Size(), fi.ModTime().UnixNano())
		return nil
	})
	return hex.EncodeToString(h.Sum(nil))[:16], err
}

// Cached returns the base image from cacheDir, building and writing it
// there (a docker-archive tarball with gzip layers) when it is missing.
// A rerun with the same inputs reads the tarball and recomputes nothing.
func (b RealBase) Cached(cacheDir, tag string) (v1.Image, string, error) {
	key, err := b.key()
	if err != nil {
		return nil, "", err
	}
	file := filepath.Join(cacheDir, fmt.Sprintf("flink-base-%s.tar", key))
	if _, err := os.Stat(file); err != nil {
		if err := os.MkdirAll(cacheDir, 0o755); err != nil {
			return nil, "", err
		}
		if err := b.write(file, tag); err != nil {
			return nil, "", err
		}
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return nil, "", err
	}
	img, err := tarball.ImageFromPath(file, &ref)
	if err != nil {
		// Written under another tag: take the only image.
		img, err = tarball.ImageFromPath(file, nil)
	}
	return img, file, err
}

func (b RealBase) write(file, tag string) error {
	flinkLayer, err := os.CreateTemp(filepath.Dir(file), "flink-layer-*.tar")
	if err != nil {
		return err
	}
	defer os.Remove(flinkLayer.Name())
	defer flinkLayer.Close()
	if err := b.writeFlinkLayer(flinkLayer); err != nil {
		return fmt.Errorf("flink layer: %w", err)
	}
	if err := flinkLayer.Close(); err != nil {
		return err
	}
	opts := []tarball.LayerOption{tarball.WithCompressionLevel(gzip.BestSpeed), tarball.WithMediaType(types.OCILayer)}
	root, err := tarball.LayerFromFile(b.RootFS, opts...)
	if err != nil {
		return err
	}
	flink, err := tarball.LayerFromFile(flinkLayer.Name(), opts...)
	if err != nil {
		return err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	if img, err = mutate.AppendLayers(img, root, flink); err != nil {
		return err
	}
	img, err = Configure(img, "amd64", b.User, []string{
		"PATH=/opt/flink/bin:" + JavaHome + "/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
		"JAVA_HOME=" + JavaHome, "FLINK_HOME=/opt/flink", "LANG=C.UTF-8",
	}, func(c *v1.Config) { c.ExposedPorts = map[string]struct{}{"6123/tcp": {}, "8081/tcp": {}} })
	if err != nil {
		return err
	}
	ref, err := name.NewTag(tag)
	if err != nil {
		return err
	}
	tmp := file + ".tmp"
	if err := tarball.WriteToFile(tmp, ref, img); err != nil {
		os.Remove(tmp)
		return err
	}
	return os.Rename(tmp, file)
}

// writeFlinkLayer writes /opt/flink (owned by flink), /opt/flink/log and
// /docker-entrypoint.sh.
func (b RealBase) writeFlinkLayer(w io.Writer) error {
	home, err := filepath.EvalSymlinks(b.FlinkHome)
	if err != nil {
		return err
	}
	tw := tar.NewWriter(w)
	mod := time.Unix(0, 0)
	dir := func(name string, uid int) error {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: name + "/", Mode: 0o755, Uid: uid, Gid: uid, ModTime: mod})
	}
	if err := dir("opt", 0); err != nil {
		return err
	}
	err = filepath.WalkDir(home, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(home, p)
		if strings.HasPrefix(rel, ".fetch-flink-dist") {
			return nil // the fetch script's marker and lock, not Flink's
		}
		name := filepath.ToSlash(filepath.Join("opt/flink", rel))
		fi, err := d.Info()
		if err != nil {
			return err
		}
		h := &tar.Header{Name: name, Mode: int64(fi.Mode().Perm()), Uid: FlinkUID, Gid: FlinkUID, Uname: "flink", Gname: "flink", ModTime: mod}
		switch {
		case d.IsDir():
			h.Typeflag, h.Name = tar.TypeDir, name+"/"
			return tw.WriteHeader(h)
		case fi.Mode()&fs.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			h.Typeflag, h.Linkname = tar.TypeSymlink, target
			return tw.WriteHeader(h)
		case fi.Mode().IsRegular():
			h.Typeflag, h.Size = tar.TypeReg, fi.Size()
			if strings.HasPrefix(rel, "bin"+string(filepath.Separator)) && strings.HasSuffix(rel, ".sh") || rel == filepath.Join("bin", "flink") {
				h.Mode |= 0o755
			}
			if err := tw.WriteHeader(h); err != nil {
				return err
			}
			f, err := os.Open(p)
			if err != nil {
				return err
			}
			defer f.Close()
			_, err = io.Copy(tw, f)
			return err
		}
		return nil
	})
	if err != nil {
		return err
	}
	if _, err := os.Stat(filepath.Join(home, "log")); err != nil {
		if err := dir("opt/flink/log", FlinkUID); err != nil {
			return err
		}
	}
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: "docker-entrypoint.sh", Mode: 0o755, Size: int64(len(b.Entrypoint)), ModTime: mod}); err != nil {
		return err
	}
	if _, err := tw.Write(b.Entrypoint); err != nil {
		return err
	}
	return tw.Close()
}
