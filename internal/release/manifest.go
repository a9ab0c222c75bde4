package release

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Manifest lists a release: every file with its SHA-256, and the image
// index with each platform's image and SBOM referrer. Go and CACerts are
// the inputs besides the commit: the same commit, Go release, CA bundle
// and repository give the same bytes. It is manifest.json
// in the release, beside SHA256SUMS (the same files, sha256sum's format).
type Manifest struct {
	Version   string        `json:"version"`
	Commit    string        `json:"commit"`
	Created   string        `json:"created"`
	Go        string        `json:"go"`      // the Go release that built the binaries
	CACerts   string        `json:"caCerts"` // the SHA-256 of the image's CA bundle
	Image     ImageManifest `json:"image"`
	Chart     string        `json:"chart"`
	Artifacts []Artifact    `json:"artifacts"`
}

// ImageManifest is the webhook/CLI image: the index by digest, in an OCI
// layout folder of the release.
type ImageManifest struct {
	Repository string          `json:"repository"`
	Index      string          `json:"index"`
	Layout     string          `json:"layout"`
	Platforms  []PlatformImage `json:"platforms"`
}

// PlatformImage is one platform's image manifest and its SBOM referrer.
type PlatformImage struct {
	Platform string `json:"platform"`
	Manifest string `json:"manifest"`
	SBOM     string `json:"sbom"`
}

// Artifact is a file of the release.
type Artifact struct {
	Path     string `json:"path"`
	Kind     string `json:"kind"` // binary, sbom, image-tarball, helm-chart
	Platform string `json:"platform,omitempty"`
	SHA256   string `json:"sha256"`
	Size     int64  `json:"size"`
}

func fileSHA256(p string) (string, int64, error) {
	f, err := os.Open(p)
	if err != nil {
		return "", 0, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	return hex.EncodeToString(h.Sum(nil)), n, err
}

func (m *Manifest) add(out, rel, kind, platform string) error {
	sum, size, err := fileSHA256(filepath.Join(out, filepath.FromSlash(rel)))
	if err != nil {
		return err
	}
	m.Artifacts = append(m.Artifacts, Artifact{Path: rel, Kind: kind, Platform: platform, SHA256: sum, Size: size})
	return nil
}

func (m *Manifest) write(out string) error {
	sort.Slice(m.Artifacts, func(i, j int) bool { return m.Artifacts[i].Path < m.Artifacts[j].Path })
	data, err := json.MarshalIndent(m, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(out, "manifest.json"), append(data, '\n'), 0o644); err != nil {
		return err
	}
	var sums strings.Builder
	for _, a := range m.Artifacts {
		fmt.Fprintf(&sums, "%s  %s\n", a.SHA256, a.Path)
	}
	return os.WriteFile(filepath.Join(out, "SHA256SUMS"), []byte(sums.String()), 0o644)
}

// ReadManifest reads a release's manifest.json.
func ReadManifest(dir string) (*Manifest, error) {
	data, err := os.ReadFile(filepath.Join(dir, "manifest.json")) //nolint:gosec // G703: the release folder the user names
	if err != nil {
		return nil, err
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("%s/manifest.json: %w", dir, err)
	}
	return &m, nil
}
