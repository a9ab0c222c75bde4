package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"debug/buildinfo"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.yaml.in/yaml/v3"
)

// Check reads the release in dir back and returns every disagreement:
// a file whose digest is not the manifest's, a chart whose version,
// appVersion or image digest is not the release's, an image whose version
// or revision label is not, or that runs as root, a platform image without
// its SBOM referrer, a binary stamped with another commit or version (the
// version is asked of the binaries this machine runs; the others' commit is
// read from their module graph).
func Check(ctx context.Context, dir string) ([]string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var bad []string
	say := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	for _, a := range m.Artifacts {
		sum, size, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(a.Path)))
		switch {
		case err != nil:
			say("%s: %v", a.Path, err)
		case sum != a.SHA256 || size != a.Size:
			say("%s: sha256 %s (%d bytes), the manifest says %s (%d bytes)", a.Path, sum, size, a.SHA256, a.Size)
		}
		if a.Kind == "binary" {
			checkBinary(ctx, dir, m, a, say)
		}
	}
	checkChart(dir, m, say)
	if err := checkImage(dir, m, say); err != nil {
		say("image: %v", err)
	}
	return bad, nil
}

func checkBinary(ctx context.Context, dir string, m *Manifest, a Artifact, say func(string, ...any)) {
	p := filepath.Join(dir, filepath.FromSlash(a.Path))
	info, err := buildinfo.ReadFile(p)
	if err != nil {
		say("%s: no module graph: %v", a.Path, err)
		return
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	if settings["vcs.revision"] != m.Commit || settings["vcs.modified"] != "false" {
		say("%s: built from commit %q (modified %q), the release is %s", a.Path, settings["vcs.revision"], settings["vcs.modified"], m.Commit)
	}
	if a.Platform != runtime.GOOS+"/"+runtime.GOARCH {
		return
	}
	args := []string{"version"}
	if strings.HasPrefix(path.Base(a.Path), "entrypoint-") {
		args = []string{"streamfusion", "version"}
	}
	out, err := run(ctx, "", nil, p, args...)
	if err != nil {
		say("%s: %v", a.Path, err)
		return
	}
	if f := strings.Fields(out); len(f) < 2 || f[1] != m.Version {
		say("%s says %q, the release is %s", a.Path, strings.TrimSpace(strings.SplitN(out, "\n", 2)[0]), m.Version)
	}
}

// chartFiles reads Chart.yaml and values.yaml of a packaged chart.
func chartFiles(p string) (map[string][]byte, error) {
	f, err := os.Open(p)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	tr := tar.NewReader(zr)
	for {
		h, err := tr.Next()
		if err == io.EOF {
			return files, nil
		}
		if err != nil {
			return nil, err
		}
		if h.Name == ChartName+"/Chart.yaml" || h.Name == ChartName+"/values.yaml" {
			data, err := io.ReadAll(io.LimitReader(tr, 1<<20))
			if err != nil {
				return nil, err
			}
			files[path.Base(h.Name)] = data
		}
	}
}

func checkChart(dir string, m *Manifest, say func(string, ...any)) {
	files, err := chartFiles(filepath.Join(dir, filepath.FromSlash(m.Chart)))
	if err != nil {
		say("%s: %v", m.Chart, err)
		return
	}
	var chart struct {
		Version    string `yaml:"version"`
		AppVersion string `yaml:"appVersion"`
	}
	var values struct {
		Image struct{ Repository, Digest string }
	}
	if err := yaml.Unmarshal(files["Chart.yaml"], &chart); err != nil {
		say("%s: Chart.yaml: %v", m.Chart, err)
	}
	if err := yaml.Unmarshal(files["values.yaml"], &values); err != nil {
		say("%s: values.yaml: %v", m.Chart, err)
	}
	if chart.Version != m.Version || chart.AppVersion != m.Version {
		say("%s: version %q and appVersion %q, the release is %s", m.Chart, chart.Version, chart.AppVersion, m.Version)
	}
	if values.Image.Digest != m.Image.Index || values.Image.Repository != m.Image.Repository {
		say("%s: installs %s@%s, the release's image is %s@%s", m.Chart, values.Image.Repository, values.Image.Digest, m.Image.Repository, m.Image.Index)
	}
}

func checkImage(dir string, m *Manifest, say func(string, ...any)) error {
	p, err := layout.FromPath(filepath.Join(dir, filepath.FromSlash(m.Image.Layout)))
	if err != nil {
		return err
	}
	top, err := p.ImageIndex()
	if err != nil {
		return err
	}
	tm, err := top.IndexManifest()
	if err != nil {
		return err
	}
	subjects := map[string]bool{}
	var found bool
	for _, d := range tm.Manifests {
		if d.ArtifactType == SBOMArtifactType {
			if s, err := sbomSubject(p, d); err != nil {
				say("SBOM referrer %s: %v", d.Digest, err)
			} else {
				subjects[s] = true
			}
		}
		if d.Annotations[refName] == m.Version && d.Digest.String() == m.Image.Index {
			found = true
		}
	}
	if !found {
		say("%s: no image index %s named %s", m.Image.Layout, m.Image.Index, m.Version)
	}
	h, err := v1.NewHash(m.Image.Index)
	if err != nil {
		return err
	}
	idx, err := p.ImageIndex()
	if err == nil {
		idx, err = idx.ImageIndex(h)
	}
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	for _, d := range im.Manifests {
		plat := d.Platform.OS + "/" + d.Platform.Architecture
		if !subjects[d.Digest.String()] {
			say("image %s (%s) has no SBOM referrer", d.Digest, plat)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		checkImageConfig(img, plat, m, say)
		tpath := filepath.Join(dir, "image", "streamfusion-"+m.Version+"-"+strings.ReplaceAll(plat, "/", "-")+".tar")
		if err := sameImage(tpath, img); err != nil {
			say("%s: %v", tpath, err)
		}
	}
	return nil
}

func checkImageConfig(img v1.Image, plat string, m *Manifest, say func(string, ...any)) {
	cfg, err := img.ConfigFile()
	if err != nil {
		say("image %s: %v", plat, err)
		return
	}
	l := cfg.Config.Labels
	if l[LabelVersion] != m.Version || l[LabelRevision] != m.Commit {
		say("image %s: labels say version %q revision %q, the release is %s at %s", plat, l[LabelVersion], l[LabelRevision], m.Version, m.Commit)
	}
	if u := strings.SplitN(cfg.Config.User, ":", 2)[0]; u == "" || u == "0" || u == "root" {
		say("image %s runs as user %q: it must run as a non-root user", plat, cfg.Config.User)
	}
}

// sbomSubject is the digest an SBOM referrer in the layout points at.
func sbomSubject(p layout.Path, d v1.Descriptor) (string, error) {
	raw, err := p.Bytes(d.Digest)
	if err != nil {
		return "", err
	}
	var mf v1.Manifest
	if err := json.NewDecoder(bytes.NewReader(raw)).Decode(&mf); err != nil {
		return "", err
	}
	if mf.Subject == nil || len(mf.Layers) != 1 || mf.Layers[0].MediaType != SBOMArtifactType {
		return "", fmt.Errorf("not an SBOM artifact with a subject")
	}
	return mf.Subject.Digest.String(), nil
}

// sameImage says whether the tarball at p holds img: the same config (the
// image ID) and the same layers. A tarball has no manifest of its own, so
// the manifests' digests cannot be compared.
func sameImage(p string, img v1.Image) error {
	timg, err := tarball.ImageFromPath(p, nil)
	if err != nil {
		return err
	}
	want, err := img.ConfigName()
	if err != nil {
		return err
	}
	got, err := timg.ConfigName()
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("holds image %s, the index's is %s", got, want)
	}
	wl, err := img.Layers()
	if err != nil {
		return err
	}
	tl, err := timg.Layers()
	if err != nil {
		return err
	}
	if len(wl) != len(tl) {
		return fmt.Errorf("%d layers, the index's image has %d", len(tl), len(wl))
	}
	for i := range wl {
		a, err := wl[i].Digest()
		if err != nil {
			return err
		}
		b, err := tl[i].Digest()
		if err != nil {
			return err
		}
		if a != b {
			return fmt.Errorf("layer %d is %s, the index's image's is %s", i, b, a)
		}
	}
	return nil
}
