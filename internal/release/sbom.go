package release

import (
	"bytes"
	"crypto/sha256"
	"debug/buildinfo"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"os"
	"runtime/debug"
	"strings"
	"time"

	cdx "github.com/CycloneDX/cyclonedx-go"
	"github.com/google/uuid"
)

// The SBOMs are CycloneDX JSON. A binary's lists the Go modules linked into
// it, read from the module graph the toolchain wrote into the binary (what
// `go version -m` prints): path, version, and go.sum's h1 checksum in the
// property gomod:sum. That checksum is Go's dirhash of the module's files,
// not a hash of any file one downloads, so it is not given as a component
// hash. The binaries themselves carry their SHA-256.

// purl is a Go module's package URL.
func purl(path, version string) string {
	return "pkg:golang/" + path + "@" + version + "?type=module"
}

// moduleComponents are the components of a binary's module graph, the Go
// standard library first.
func moduleComponents(info *debug.BuildInfo) ([]cdx.Component, error) {
	comps := []cdx.Component{{
		BOMRef: purl("std", info.GoVersion), Type: cdx.ComponentTypeLibrary,
		Name: "std", Version: info.GoVersion, PackageURL: purl("std", info.GoVersion),
	}}
	for _, d := range info.Deps {
		if d.Replace != nil {
			return nil, fmt.Errorf("module %s is replaced by %s: a release is built from the modules go.sum names", d.Path, d.Replace.Path)
		}
		c := cdx.Component{
			BOMRef: purl(d.Path, d.Version), Type: cdx.ComponentTypeLibrary,
			Name: d.Path, Version: d.Version, PackageURL: purl(d.Path, d.Version),
		}
		if d.Sum == "" {
			return nil, fmt.Errorf("module %s %s has no checksum in the binary", d.Path, d.Version)
		}
		if _, err := decodeH1(d.Sum); err != nil {
			return nil, fmt.Errorf("module %s: %w", d.Path, err)
		}
		c.Properties = &[]cdx.Property{{Name: "gomod:sum", Value: d.Sum}}
		comps = append(comps, c)
	}
	return comps, nil
}

// binaryComponent describes a built binary: its SHA-256 and what built it.
func binaryComponent(o Options, b Binary, data []byte, info *debug.BuildInfo) cdx.Component {
	sum := sha256.Sum256(data)
	props := []cdx.Property{{Name: "gomod:build:env:GOOS", Value: b.OS}, {Name: "gomod:build:env:GOARCH", Value: b.Arch}}
	for _, s := range info.Settings {
		if strings.HasPrefix(s.Key, "vcs.") || s.Key == "CGO_ENABLED" || s.Key == "-trimpath" {
			props = append(props, cdx.Property{Name: "gomod:build:" + s.Key, Value: s.Value})
		}
	}
	return cdx.Component{
		BOMRef: "binary:" + b.Name(), Type: cdx.ComponentTypeApplication,
		Name: b.Command, Version: o.Version,
		PackageURL: purl(info.Path, o.Version) + "&goos=" + b.OS + "&goarch=" + b.Arch,
		Hashes:     &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		Properties: &props,
	}
}

// newBOM is a BOM about subject, whose serial number derives from seed
// (the bytes it describes) so that the same inputs give the same BOM.
func newBOM(subject cdx.Component, seed []byte, when time.Time) *cdx.BOM {
	bom := cdx.NewBOM()
	bom.SerialNumber = uuid.NewSHA1(uuid.NameSpaceURL, seed).URN()
	bom.Metadata = &cdx.Metadata{Timestamp: when.UTC().Format(time.RFC3339), Component: &subject}
	return bom
}

func encode(bom *cdx.BOM) ([]byte, error) {
	var buf bytes.Buffer
	if err := cdx.NewBOMEncoder(&buf, cdx.BOMFileFormatJSON).SetPretty(true).Encode(bom); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// binarySBOM is the SBOM of the binary at path, and the Go release that
// built it.
func binarySBOM(o Options, b Binary, path string) ([]byte, string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, "", err
	}
	info, err := buildinfo.Read(bytes.NewReader(data))
	if err != nil {
		return nil, "", fmt.Errorf("%s carries no module graph: %w", b.Name(), err)
	}
	mods, err := moduleComponents(info)
	if err != nil {
		return nil, "", fmt.Errorf("%s: %w", b.Name(), err)
	}
	self := binaryComponent(o, b, data, info)
	bom := newBOM(self, data, o.Time)
	bom.Components = &mods
	bom.Dependencies = &[]cdx.Dependency{{Ref: self.BOMRef, Dependencies: refs(mods)}}
	out, err := encode(bom)
	return out, info.GoVersion, err
}

func refs(comps []cdx.Component) *[]string {
	out := make([]string, len(comps))
	for i, c := range comps {
		out[i] = c.BOMRef
	}
	return &out
}

// imageSBOM is the SBOM of one platform's webhook image: the binary with
// its modules, and the files the image adds (CA bundle, user database).
func imageSBOM(o Options, arch string, bin []byte, files []imageFile) ([]byte, error) {
	b := Binary{"streamfusion", "linux", arch}
	info, err := buildinfo.Read(bytes.NewReader(bin))
	if err != nil {
		return nil, fmt.Errorf("%s carries no module graph: %w", b.Name(), err)
	}
	mods, err := moduleComponents(info)
	if err != nil {
		return nil, err
	}
	app := binaryComponent(o, b, bin, info)
	comps := []cdx.Component{app}
	binSum := sha256.Sum256(bin)
	seed := binSum[:]
	for _, f := range files {
		if f.Name == "streamfusion" || f.Dir {
			continue
		}
		sum := sha256.Sum256(f.Data)
		comps = append(comps, cdx.Component{
			BOMRef: "file:/" + f.Name, Type: cdx.ComponentTypeFile, Name: "/" + f.Name,
			Hashes: &[]cdx.Hash{{Algorithm: cdx.HashAlgoSHA256, Value: hex.EncodeToString(sum[:])}},
		})
		seed = append(seed, sum[:]...)
	}
	image := cdx.Component{
		BOMRef: "image:" + o.Repository + ":" + o.Version + ":linux/" + arch, Type: cdx.ComponentTypeContainer,
		Name: o.Repository, Version: o.Version,
		Properties: &[]cdx.Property{{Name: "oci:platform", Value: "linux/" + arch}},
	}
	bom := newBOM(image, seed, o.Time)
	all := append(comps, mods...)
	bom.Components = &all
	bom.Dependencies = &[]cdx.Dependency{
		{Ref: image.BOMRef, Dependencies: refs(comps)},
		{Ref: app.BOMRef, Dependencies: refs(mods)},
	}
	return encode(bom)
}

// decodeH1 is the hex SHA-256 of a go.sum h1 checksum.
func decodeH1(sum string) (string, error) {
	b64, ok := strings.CutPrefix(sum, "h1:")
	if !ok {
		return "", fmt.Errorf("%q is not an h1 checksum", sum)
	}
	raw, err := base64.StdEncoding.DecodeString(b64)
	if err != nil || len(raw) != sha256.Size {
		return "", fmt.Errorf("%q is not an h1 SHA-256", sum)
	}
	return hex.EncodeToString(raw), nil
}
