package audit

import (
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
)

// ParseImageID reads the digest a container runtime reports in
// status.containerStatuses[].imageID: "docker-pullable://repo@sha256:...",
// "repo@sha256:..." (containerd, CRI-O). A bare "sha256:..." is an image
// ID (Docker's config digest), not a digest a registry serves: not
// usable, and ok is false. repo is the repository the runtime names
// ("" when it names none).
func ParseImageID(imageID string) (repo, digest string, ok bool) {
	s := strings.TrimSpace(imageID)
	for _, p := range []string{"docker-pullable://", "docker://", "containerd://", "cri-o://"} {
		s = strings.TrimPrefix(s, p)
	}
	at := strings.LastIndex(s, "@")
	if at <= 0 {
		return "", "", false
	}
	h, err := v1.NewHash(s[at+1:])
	if err != nil || h.Algorithm != "sha256" {
		return "", "", false
	}
	return s[:at], h.String(), true
}

// RunningRef is the reference of what a container runs: the repository of
// the image its spec names, at the digest the runtime reports.
func RunningRef(specImage, digest string) (string, error) {
	r, err := name.ParseReference(specImage)
	if err != nil {
		return "", fmt.Errorf("image %q: %w", specImage, err)
	}
	return r.Context().Name() + "@" + digest, nil
}

// isDigestRef says whether ref names a digest rather than a tag.
func isDigestRef(ref string) bool {
	r, err := name.ParseReference(ref)
	if err != nil {
		return false
	}
	_, ok := r.(name.Digest)
	return ok
}
