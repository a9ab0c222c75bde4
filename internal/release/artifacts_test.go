//go:build release

package release

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestReleasedSBOMsAreGoSum: the SBOMs of a built release (make
// test-release sets STREAMFUSION_RELEASE) list, for every binary and every
// platform image, the modules `go version -m` reads from the binary, with
// go.sum's versions and checksums.
func TestReleasedSBOMsAreGoSum(t *testing.T) {
	rel := os.Getenv("STREAMFUSION_RELEASE")
	require.NotEmpty(t, rel, "make test-release sets STREAMFUSION_RELEASE")
	m, err := ReadManifest(rel)
	require.NoError(t, err)
	n := 0
	for _, a := range m.Artifacts {
		if a.Kind != "binary" {
			continue
		}
		name := strings.TrimPrefix(a.Path, "bin/")
		bin := filepath.Join(rel, filepath.FromSlash(a.Path))
		boms := []string{"sbom/" + name + ".cdx.json"}
		if strings.HasPrefix(name, "streamfusion-linux-") {
			boms = append(boms, "sbom/image-"+strings.TrimPrefix(name, "streamfusion-")+".cdx.json")
		}
		for _, bom := range boms {
			t.Run(bom, func(t *testing.T) {
				compareSBOMWithGoSum(t, bin, "../../go.sum", func(Options, Binary) ([]byte, error) {
					return os.ReadFile(filepath.Join(rel, filepath.FromSlash(bom)))
				})
			})
			n++
		}
	}
	require.Equal(t, 7, n, "five binaries and two images")
}
