//go:build realjars && linkageoracle

package realflink

import (
	"archive/zip"
	"path"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// TestLinkageDistPackages holds the embedded flinkdist tables (which
// libraries each line's flink-dist carries unrelocated, what linkage-class
// reads to tell a library a JAR's own Flink provided from an optional one)
// to the real distributions of make test-linkage: every release of a line
// must carry exactly its line's packages. `make dist-packages` regenerates.
func TestLinkageDistPackages(t *testing.T) {
	lines := map[string]bool{}
	for _, v := range []string{"1.18.1", "2.0.0", "2.2.0", "2.2.1"} {
		t.Run(v, func(t *testing.T) {
			dist := realLib(t, v)["flink-dist-"+v+".jar"]
			require.NotEmpty(t, dist, "flink-dist-%s.jar in the real lib", v)
			r, err := zip.OpenReader(dist)
			require.NoError(t, err)
			defer r.Close()
			seen := map[string]bool{}
			for _, f := range r.File {
				n := f.Name
				if !strings.HasSuffix(n, ".class") || strings.HasPrefix(n, "META-INF/") || strings.HasPrefix(n, "org/apache/flink/") ||
					path.Base(n) == "module-info.class" || !strings.Contains(n, "/") {
					continue
				}
				seen[path.Dir(n)] = true
			}
			var got []string
			for p := range seen {
				got = append(got, p)
			}
			slices.Sort(got)
			line := v[:strings.LastIndexByte(v, '.')]
			lines[line] = true
			require.Equal(t, got, admission.DistPackages(line), "flinkdist/%s.txt against flink-dist-%s.jar: run `make dist-packages`", line, v)
		})
	}
	require.Equal(t, admission.DistLines(), slices.Sorted(func(yield func(string) bool) {
		for l := range lines {
			if !yield(l) {
				return
			}
		}
	}), "every table is checked against a real distribution")
}
