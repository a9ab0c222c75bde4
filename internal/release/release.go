// Package release builds every artifact a user installs from one commit:
// the static binaries with their checksums, the webhook/CLI image (an OCI
// image index for linux/amd64 and linux/arm64, written as an OCI layout and
// as one `docker save`-style tarball per platform, a CycloneDX SBOM attached
// to each platform's image as an OCI referrer), the packaged Helm chart that
// installs that image by digest, an SBOM per binary, and manifest.json, which
// lists every artifact with its digest.
//
// Everything is a function of the commit. File times are the commit's time
// (or SOURCE_DATE_EPOCH), archives are written in name order with fixed
// owners and modes, the SBOMs' serial numbers derive from what they
// describe, and the Go toolchain's builds are reproducible with -trimpath.
// Two runs on one commit give identical bytes; Check reads a release back
// and names every artifact that disagrees with another.
//
// The images are written with go-containerregistry, the SBOMs with
// cyclonedx-go. The chart archive is written here: it is a gzip'd tar of the
// chart's folder under its name (helm package's layout), and the helm
// library would bring a second copy of the Kubernetes modules for one tar
// file. The real helm reads it in the tests.
package release

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/hashicorp/go-version"
)

// Options say what to build and where.
type Options struct {
	Version    string    // SemVer 2 (the chart's version and appVersion too)
	Commit     string    // the commit built, for the image's labels
	Time       time.Time // every file time and the image's creation time
	Source     string    // the module's root
	Out        string    // an empty or missing folder
	Repository string    // the image's repository, as the chart pulls it
	CACerts    string    // the CA bundle put in the image
	Go         string    // the go command; "go" when empty

	// Build builds the commands for one platform into dir (dir/COMMAND);
	// goBuild when nil. The package's unit tests give a builder that
	// copies a Go binary, so that they need no cross-compilation; `make
	// test-release` runs the real one.
	Build func(ctx context.Context, o Options, goos, goarch string, cmds []string, dir string) error
}

// Chart is the chart's folder under Source.
const Chart = "deploy/helm/streamfusion-webhook"

// DefaultRepository is the repository the chart's values name.
const DefaultRepository = "registry.example/streamfusion/streamfusion"

func (o Options) validate() error {
	if o.Version == "" {
		return errors.New("no version: make release VERSION=X.Y.Z")
	}
	if _, err := version.NewSemver(o.Version); err != nil || o.Version[0] == 'v' {
		return fmt.Errorf("version %q is not SemVer 2 without a leading v (a Helm chart's version must be): make release VERSION=X.Y.Z", o.Version)
	}
	if o.Commit == "" || o.Time.IsZero() || o.Source == "" || o.Out == "" || o.Repository == "" || o.CACerts == "" {
		return errors.New("release options need a commit, a time, the source, an output folder, a repository and a CA bundle")
	}
	if entries, err := os.ReadDir(o.Out); err == nil && len(entries) > 0 {
		return fmt.Errorf("%s is not empty: a release is written into an empty folder", o.Out)
	}
	return nil
}

// Run builds the release into o.Out and returns its manifest.
func Run(ctx context.Context, o Options) (*Manifest, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	if o.Build == nil {
		o.Build = goBuild
	}
	if err := os.MkdirAll(o.Out, 0o755); err != nil {
		return nil, err
	}
	m := &Manifest{Version: o.Version, Commit: o.Commit, Created: o.Time.UTC().Format(time.RFC3339)}
	bins, err := buildBinaries(ctx, o, m)
	if err != nil {
		return nil, err
	}
	ca, err := os.ReadFile(o.CACerts)
	if err != nil {
		return nil, fmt.Errorf("the image's CA bundle (--ca-certs, make release CA_CERTS=...): %w", err)
	}
	m.CACerts = fmt.Sprintf("%x", sha256.Sum256(ca))
	idx, err := writeImage(o, bins, ca, m)
	if err != nil {
		return nil, err
	}
	if err := writeChart(o, idx, m); err != nil {
		return nil, err
	}
	if err := m.write(o.Out); err != nil {
		return nil, err
	}
	return m, nil
}

// path is where an artifact of the release lives, made ready for writing.
func (o Options) path(rel string) (string, error) {
	p := filepath.Join(o.Out, filepath.FromSlash(rel))
	return p, os.MkdirAll(filepath.Dir(p), 0o755)
}
