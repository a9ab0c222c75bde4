package payload

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The manifests in testdata/manifests, parsed as java.util.jar.Manifest
// reads them: names case-insensitive, the main section only, values
// decoded as UTF-8 with U+FFFD for bytes that are not, the last of a
// repeated name kept. Every file there has a row: the fuzz seeds are also
// specified parses.
func TestManifestFilesParse(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file     string
		attrs    map[string]string // lower-cased names, as Attributes returns them
		repeated []string
	}{
		{"cr-only.mf", map[string]string{ // old Mac line ends: CR alone ends a line
			"manifest-version": "1.0", "streamfusion-payload": "core", "streamfusion-module": "streamfusion-core"}, nil},
		{"crlf-with-sections.mf", map[string]string{ // the Name: section's Sealed is not a main attribute
			"manifest-version": "1.0", "streamfusion-payload": "extension", "streamfusion-module": "streamfusion-kafka",
			"streamfusion-artifact": "tech.streamfusion:streamfusion-kafka-flink1.18", "streamfusion-version": "0.1.0-rc4",
			"streamfusion-flink-line": "1.18", "streamfusion-java-release": "11"}, nil},
		{"latin1.mf", map[string]string{ // ISO-8859-1 bytes are not UTF-8: each becomes U+FFFD
			"manifest-version": "1.0", "implementation-vendor": "Caf\uFFFD GmbH", "streamfusion-module": "streamfusion-\uFFFD"}, nil},
		{"lf-continuation.mf", map[string]string{ // a line starting with a space continues the value
			"manifest-version":       "1.0",
			"implementation-title":   "a-very-long-title-that-the-jar-tool-folds-at-seventy-two-bytes-per-line-and-continues-here",
			"implementation-version": "2.2.1"}, nil},
		{"repeated.mf", map[string]string{ // names differing in case are one name; the last value wins
			"manifest-version": "1.0", "streamfusion-version": "0.2.0"}, []string{"streamfusion-version"}},
	}
	files, err := filepath.Glob("testdata/manifests/*.mf")
	require.NoError(t, err)
	require.Len(t, files, len(cases), "every manifest in testdata has an expected parse")
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			t.Parallel()
			f, err := os.Open(filepath.Join("testdata/manifests", c.file))
			require.NoError(t, err)
			defer f.Close()
			m, err := ParseManifest(f)
			require.NoError(t, err)
			assert.Equal(t, c.attrs, m.Attributes())
			assert.Equal(t, c.repeated, m.Repeated)
		})
	}
}
