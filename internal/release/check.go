package release

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"runtime"
	"strings"

	cdx "github.com/CycloneDX/cyclonedx-go"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"go.yaml.in/yaml/v3"
)

// Check reads the release in dir back and returns every disagreement:
// an artifact missing from the manifest or from SHA256SUMS, a file whose
// digest is not the manifest's, a layout blob whose bytes are not its
// name, a chart whose version, appVersion or image is not the release's, an
// image whose version or revision label is not, that runs as root, whose
// /streamfusion is not the release's binary for its platform or that lacks
// its SBOM referrer (or whose referrer is not the SBOM file), an SBOM whose
// subject's SHA-256 is not the binary's, a binary stamped with another
// commit or version (the version is asked of the binaries this machine
// runs; the others' commit is read from their module graph).
func Check(ctx context.Context, dir string) ([]string, error) {
	m, err := ReadManifest(dir)
	if err != nil {
		return nil, err
	}
	var bad []string
	say := func(format string, args ...any) { bad = append(bad, fmt.Sprintf(format, args...)) }
	checkComplete(dir, m, say)
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

// expected are the files a release holds (but the layout's).
func expected(version string) map[string]string {
	want := map[string]string{"chart/" + ChartName + "-" + version + ".tgz": "helm-chart"}
	for _, b := range Binaries {
		want["bin/"+b.Name()] = "binary"
		want["sbom/"+b.Name()+".cdx.json"] = "sbom"
	}
	for _, arch := range ImagePlatforms {
		want["sbom/image-linux-"+arch+".cdx.json"] = "sbom"
		want["image/streamfusion-"+version+"-linux-"+arch+".tar"] = "image-tarball"
	}
	return want
}

// checkComplete: the manifest lists every file of a release, SHA256SUMS
// says what the manifest says, and every binary's SBOM describes it.
func checkComplete(dir string, m *Manifest, say func(string, ...any)) {
	want := expected(m.Version)
	sums := map[string]string{}
	for _, a := range m.Artifacts {
		if want[a.Path] != a.Kind {
			say("%s: a %s the release does not hold", a.Path, a.Kind)
		}
		delete(want, a.Path)
		sums[a.Path] = a.SHA256
	}
	for p := range want {
		say("%s: missing from the manifest", p)
	}
	data, err := os.ReadFile(filepath.Join(dir, "SHA256SUMS"))
	if err != nil {
		say("SHA256SUMS: %v", err)
		return
	}
	lines := strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	for _, line := range lines {
		sum, p, ok := strings.Cut(line, "  ")
		if !ok || sums[p] != sum {
			say("SHA256SUMS: %q is not the manifest's", line)
		}
		delete(sums, p)
	}
	for p := range sums {
		say("SHA256SUMS: no line for %s", p)
	}
	for _, b := range Binaries {
		sbomSubjectIs(dir, "sbom/"+b.Name()+".cdx.json", "bin/"+b.Name(), say)
	}
	for _, arch := range ImagePlatforms {
		sbomSubjectIs(dir, "sbom/image-linux-"+arch+".cdx.json", "bin/streamfusion-linux-"+arch, say)
	}
}

// sbomSubjectIs: the SBOM at rel describes the binary at bin (its
// metadata component's, or its application component's, SHA-256).
func sbomSubjectIs(dir, rel, bin string, say func(string, ...any)) {
	data, err := os.ReadFile(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil {
		say("%s: %v", rel, err)
		return
	}
	var bom cdx.BOM
	if err := cdx.NewBOMDecoder(bytes.NewReader(data), cdx.BOMFileFormatJSON).Decode(&bom); err != nil {
		say("%s: %v", rel, err)
		return
	}
	sum, _, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(bin)))
	if err != nil {
		say("%s: %v", bin, err)
		return
	}
	comps := []cdx.Component{}
	if bom.Metadata != nil && bom.Metadata.Component != nil {
		comps = append(comps, *bom.Metadata.Component)
	}
	if bom.Components != nil {
		comps = append(comps, *bom.Components...)
	}
	for _, c := range comps {
		if c.Type == cdx.ComponentTypeApplication && c.Hashes != nil {
			for _, h := range *c.Hashes {
				if h.Algorithm == cdx.HashAlgoSHA256 && h.Value == sum {
					return
				}
			}
		}
	}
	say("%s does not describe %s (sha256 %s)", rel, bin, sum)
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
	root := filepath.Join(dir, filepath.FromSlash(m.Image.Layout))
	checkBlobs(root, say)
	p, err := layout.FromPath(root)
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
	referrers := topLevel(p, tm, m, say)
	h, err := v1.NewHash(m.Image.Index)
	if err != nil {
		return err
	}
	idx, err := top.ImageIndex(h)
	if err != nil {
		return err
	}
	im, err := idx.IndexManifest()
	if err != nil {
		return err
	}
	listed := map[string]PlatformImage{}
	for _, pl := range m.Image.Platforms {
		listed[pl.Platform] = pl
	}
	seen := map[string]bool{}
	for _, d := range im.Manifests {
		if d.Platform == nil {
			say("image %s names no platform", d.Digest)
			continue
		}
		plat := d.Platform.OS + "/" + d.Platform.Architecture
		seen[plat] = true
		if l := listed[plat]; l.Manifest != d.Digest.String() || l.SBOM != referrers[d.Digest.String()] {
			say("image %s: the index has %s (SBOM %s), the manifest says %s (SBOM %s)", plat, d.Digest, referrers[d.Digest.String()], l.Manifest, l.SBOM)
		}
		if referrers[d.Digest.String()] == "" {
			say("image %s (%s) has no SBOM referrer", d.Digest, plat)
		} else {
			sameBlob(dir, p, referrers[d.Digest.String()], "sbom/image-"+strings.ReplaceAll(plat, "/", "-")+".cdx.json", say)
		}
		img, err := idx.Image(d.Digest)
		if err != nil {
			return err
		}
		checkImageConfig(img, plat, m, say)
		checkImageBinary(dir, img, plat, say)
		tpath := filepath.Join(dir, "image", "streamfusion-"+m.Version+"-"+strings.ReplaceAll(plat, "/", "-")+".tar")
		if err := sameImage(tpath, img); err != nil {
			say("%s: %v", tpath, err)
		}
	}
	for _, arch := range ImagePlatforms {
		if !seen["linux/"+arch] {
			say("the image index has no linux/%s image", arch)
		}
	}
	return nil
}

// topLevel reads the layout's index.json: the release's image index named
// by its version, and the SBOM referrers (subject -> referrer).
func topLevel(p layout.Path, tm *v1.IndexManifest, m *Manifest, say func(string, ...any)) map[string]string {
	referrers := map[string]string{}
	var found bool
	for _, d := range tm.Manifests {
		if d.ArtifactType == SBOMArtifactType {
			if s, err := sbomSubject(p, d); err != nil {
				say("SBOM referrer %s: %v", d.Digest, err)
			} else {
				referrers[s] = d.Digest.String()
			}
		}
		if d.Annotations[refName] == m.Version && d.Digest.String() == m.Image.Index {
			found = true
		}
	}
	if !found {
		say("%s: no image index %s named %s", m.Image.Layout, m.Image.Index, m.Version)
	}
	return referrers
}

// checkBlobs: every blob of the layout is the bytes its name says.
func checkBlobs(root string, say func(string, ...any)) {
	blobs := filepath.Join(root, "blobs", "sha256")
	entries, err := os.ReadDir(blobs)
	if err != nil {
		say("%s: %v", blobs, err)
		return
	}
	for _, e := range entries {
		sum, _, err := fileSHA256(filepath.Join(blobs, e.Name()))
		if err != nil || sum != e.Name() {
			say("layout blob sha256:%s holds sha256:%s (%v)", e.Name(), sum, err)
		}
	}
}

// sameBlob: the referrer's one layer is the SBOM file at rel.
func sameBlob(dir string, p layout.Path, referrer, rel string, say func(string, ...any)) {
	h, err := v1.NewHash(referrer)
	if err != nil {
		say("%s: %v", referrer, err)
		return
	}
	raw, err := p.Bytes(h)
	if err != nil {
		say("%s: %v", referrer, err)
		return
	}
	var mf v1.Manifest
	if err := json.Unmarshal(raw, &mf); err != nil || len(mf.Layers) != 1 {
		say("SBOM referrer %s: not one layer (%v)", referrer, err)
		return
	}
	sum, _, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(rel)))
	if err != nil || "sha256:"+sum != mf.Layers[0].Digest.String() {
		say("SBOM referrer %s holds %s, %s is sha256:%s (%v)", referrer, mf.Layers[0].Digest, rel, sum, err)
	}
}

// maxBinary bounds what Check hashes of an image's /streamfusion.
const maxBinary = 1 << 30

// checkImageBinary: the image's /streamfusion is the release's binary for
// its platform.
func checkImageBinary(dir string, img v1.Image, plat string, say func(string, ...any)) {
	bin := "bin/streamfusion-" + strings.ReplaceAll(plat, "/", "-")
	want, _, err := fileSHA256(filepath.Join(dir, filepath.FromSlash(bin)))
	if err != nil {
		say("%s: %v", bin, err)
		return
	}
	rc := mutate.Extract(img)
	defer rc.Close()
	tr := tar.NewReader(rc)
	for {
		h, err := tr.Next()
		if err != nil {
			say("image %s: no %s (%v)", plat, ImageBinary, err)
			return
		}
		if path.Clean("/"+h.Name) != ImageBinary {
			continue
		}
		hash := sha256.New()
		if _, err := io.Copy(hash, io.LimitReader(tr, maxBinary)); err != nil {
			say("image %s: %v", plat, err)
			return
		}
		if got := hex.EncodeToString(hash.Sum(nil)); got != want {
			say("image %s: %s is sha256:%s, %s is sha256:%s", plat, ImageBinary, got, bin, want)
		}
		return
	}
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
