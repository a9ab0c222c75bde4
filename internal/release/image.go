package release

import (
	"archive/tar"
	"bytes"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// The webhook/CLI image is one layer on nothing: the static streamfusion
// binary at /streamfusion, the CA bundle Go's TLS reads for registries, a
// user database naming root and the non-root user it runs as, a home and
// /tmp. No shell, no package manager, no libc.
const (
	UID         = 65532
	ImageUser   = "65532:65532"
	ImageBinary = "/streamfusion"

	// SBOMArtifactType is the artifactType of the SBOM referrers, and the
	// media type of their one layer.
	SBOMArtifactType = "application/vnd.cyclonedx+json"
	emptyConfigType  = "application/vnd.oci.empty.v1+json"

	LabelVersion  = "org.opencontainers.image.version"
	LabelRevision = "org.opencontainers.image.revision"
	LabelCreated  = "org.opencontainers.image.created"
	LabelTitle    = "org.opencontainers.image.title"
	refName       = "org.opencontainers.image.ref.name"
)

// imageFile is one entry of the image's layer.
type imageFile struct {
	Name     string // without the leading slash
	Dir      bool
	Mode     int64
	UID, GID int
	Data     []byte
}

func imageFiles(bin, ca []byte) []imageFile {
	passwd := fmt.Sprintf("root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:%d:%d:nonroot:/home/nonroot:/sbin/nologin\n", UID, UID)
	group := fmt.Sprintf("root:x:0:\nnonroot:x:%d:\n", UID)
	// In name order, parents first.
	return []imageFile{
		{Name: "etc", Dir: true, Mode: 0o755},
		{Name: "etc/group", Mode: 0o644, Data: []byte(group)},
		{Name: "etc/passwd", Mode: 0o644, Data: []byte(passwd)},
		{Name: "etc/ssl", Dir: true, Mode: 0o755},
		{Name: "etc/ssl/certs", Dir: true, Mode: 0o755},
		{Name: "etc/ssl/certs/ca-certificates.crt", Mode: 0o644, Data: ca},
		{Name: "home", Dir: true, Mode: 0o755},
		{Name: "home/nonroot", Dir: true, Mode: 0o700, UID: UID, GID: UID},
		{Name: "streamfusion", Mode: 0o755, Data: bin},
		{Name: "tmp", Dir: true, Mode: 0o1777},
	}
}

// layerTar is the layer's tar: fixed times, owners by number only.
func layerTar(o Options, files []imageFile) ([]byte, error) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	for _, f := range files {
		h := &tar.Header{Name: f.Name, Mode: f.Mode, Uid: f.UID, Gid: f.GID, ModTime: o.Time, Format: tar.FormatPAX, Typeflag: tar.TypeReg, Size: int64(len(f.Data))}
		if f.Dir {
			h.Name += "/"
			h.Typeflag = tar.TypeDir
			h.Size = 0
		}
		if err := tw.WriteHeader(h); err != nil {
			return nil, err
		}
		if _, err := tw.Write(f.Data); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// platformImage builds the image of one platform.
func platformImage(o Options, arch string, files []imageFile) (v1.Image, error) {
	tarBytes, err := layerTar(o, files)
	if err != nil {
		return nil, err
	}
	layer, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) {
		return io.NopCloser(bytes.NewReader(tarBytes)), nil
	}, tarball.WithMediaType(types.OCILayer))
	if err != nil {
		return nil, err
	}
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), types.OCIConfigJSON)
	img, err = mutate.Append(img, mutate.Addendum{Layer: layer, History: v1.History{
		Created: v1.Time{Time: o.Time}, CreatedBy: "streamfusion release " + o.Version, Comment: "the streamfusion binary, CA certificates, a non-root user",
	}})
	if err != nil {
		return nil, err
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, err
	}
	cfg = cfg.DeepCopy()
	cfg.OS, cfg.Architecture, cfg.Created = "linux", arch, v1.Time{Time: o.Time}
	if arch == "arm64" {
		cfg.Variant = "v8"
	}
	cfg.Config = v1.Config{
		User: ImageUser, Entrypoint: []string{ImageBinary}, WorkingDir: "/",
		Env: []string{"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt"},
		Labels: map[string]string{
			LabelTitle: "streamfusion", LabelVersion: o.Version, LabelRevision: o.Commit,
			LabelCreated: o.Time.UTC().Format("2006-01-02T15:04:05Z"),
		},
	}
	return mutate.ConfigFile(img, cfg)
}

// writeImage builds the image index, writes it as an OCI layout with an
// SBOM referrer per platform image and as a tarball per platform, and
// returns the index's digest.
func writeImage(o Options, bins map[string]built, ca []byte, m *Manifest) (v1.Hash, error) {
	p, err := layout.Write(filepath.Join(o.Out, "image", "oci"), empty.Index)
	if err != nil {
		return v1.Hash{}, err
	}
	idx := mutate.IndexMediaType(empty.Index, types.OCIImageIndex)
	sboms := map[string][]byte{}
	images := map[string]v1.Image{}
	for _, arch := range ImagePlatforms {
		bin, err := os.ReadFile(bins["streamfusion-linux-"+arch].Path)
		if err != nil {
			return v1.Hash{}, err
		}
		files := imageFiles(bin, ca)
		img, err := platformImage(o, arch, files)
		if err != nil {
			return v1.Hash{}, err
		}
		bom, err := imageSBOM(o, arch, bin, files)
		if err != nil {
			return v1.Hash{}, err
		}
		images[arch], sboms[arch] = img, bom
		plat := &v1.Platform{OS: "linux", Architecture: arch}
		if arch == "arm64" {
			plat.Variant = "v8"
		}
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: img, Descriptor: v1.Descriptor{Platform: plat}})
	}
	if err := p.AppendIndex(idx, layout.WithAnnotations(map[string]string{refName: o.Version})); err != nil {
		return v1.Hash{}, err
	}
	digest, err := idx.Digest()
	if err != nil {
		return v1.Hash{}, err
	}
	m.Image = ImageManifest{Repository: o.Repository, Index: digest.String(), Layout: "image/oci"}
	for _, arch := range ImagePlatforms {
		if err := m.addPlatform(o, p, arch, images[arch], sboms[arch]); err != nil {
			return v1.Hash{}, err
		}
	}
	return digest, nil
}

// addPlatform writes one platform's SBOM (as a file and as a referrer of its
// image in the layout) and tarball, and lists them.
func (m *Manifest) addPlatform(o Options, p layout.Path, arch string, img v1.Image, bom []byte) error {
	imgDigest, err := img.Digest()
	if err != nil {
		return err
	}
	size, err := img.Size()
	if err != nil {
		return err
	}
	mt, err := img.MediaType()
	if err != nil {
		return err
	}
	subject := v1.Descriptor{MediaType: mt, Size: size, Digest: imgDigest}
	ref, err := attach(p, subject, bom, o)
	if err != nil {
		return err
	}
	srel := "sbom/image-linux-" + arch + ".cdx.json"
	if err := writeFile(o, srel, bom); err != nil {
		return err
	}
	if err := m.add(o.Out, srel, "sbom", "linux/"+arch); err != nil {
		return err
	}
	trel := "image/streamfusion-" + o.Version + "-linux-" + arch + ".tar"
	tpath, err := o.path(trel)
	if err != nil {
		return err
	}
	tag, err := name.NewTag(o.Repository + ":" + o.Version)
	if err != nil {
		return err
	}
	if err := tarball.WriteToFile(tpath, tag, img); err != nil {
		return err
	}
	if err := m.add(o.Out, trel, "image-tarball", "linux/"+arch); err != nil {
		return err
	}
	m.Image.Platforms = append(m.Image.Platforms, PlatformImage{Platform: "linux/" + arch, Manifest: imgDigest.String(), SBOM: ref.String()})
	return nil
}

// attach writes bom into the layout as an OCI 1.1 artifact whose subject is
// the image, listed in the layout's index.json with its artifactType, so
// that a referrers lookup of the image finds it.
func attach(p layout.Path, subject v1.Descriptor, bom []byte, o Options) (v1.Hash, error) {
	emptyCfg := []byte("{}")
	cfgDesc, err := writeBlob(p, emptyCfg, emptyConfigType)
	if err != nil {
		return v1.Hash{}, err
	}
	bomDesc, err := writeBlob(p, bom, SBOMArtifactType)
	if err != nil {
		return v1.Hash{}, err
	}
	bomDesc.Annotations = map[string]string{"org.opencontainers.image.title": "sbom.cdx.json"}
	mf := v1.Manifest{
		SchemaVersion: 2, MediaType: types.OCIManifestSchema1, ArtifactType: SBOMArtifactType,
		Config: cfgDesc, Layers: []v1.Descriptor{bomDesc}, Subject: &subject,
		Annotations: map[string]string{LabelCreated: o.Time.UTC().Format("2006-01-02T15:04:05Z")},
	}
	raw, err := json.Marshal(mf)
	if err != nil {
		return v1.Hash{}, err
	}
	desc, err := writeBlob(p, raw, types.OCIManifestSchema1)
	if err != nil {
		return v1.Hash{}, err
	}
	desc.ArtifactType = SBOMArtifactType
	return desc.Digest, p.AppendDescriptor(desc)
}

func writeBlob(p layout.Path, data []byte, mt types.MediaType) (v1.Descriptor, error) {
	sum := sha256.Sum256(data)
	h := v1.Hash{Algorithm: "sha256", Hex: fmt.Sprintf("%x", sum)}
	if err := p.WriteBlob(h, io.NopCloser(bytes.NewReader(data))); err != nil {
		return v1.Descriptor{}, err
	}
	return v1.Descriptor{MediaType: mt, Size: int64(len(data)), Digest: h}, nil
}
