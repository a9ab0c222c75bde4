package payload_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
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
			m, err := payload.ParseManifest(f)
			require.NoError(t, err)
			assert.Equal(t, c.attrs, m.Attributes())
			assert.Equal(t, c.repeated, m.Repeated)
		})
	}
}

// A manifest in a JAR, read as java.util.jar.Manifest reads it.
func TestManifestSyntax(t *testing.T) {
	t.Parallel()
	folded := strings.Repeat("streamfusion-avro ", 12)
	for _, c := range []struct {
		name     string
		manifest string
		attr     string
		want     string
		absent   string // an attribute the manifest does not have
	}{
		{"continuation lines", "Manifest-Version: 1.0\r\nStreamFusion-Module: streamfusion-avro-confluent-reg\r\n istry\r\n\r\n",
			"StreamFusion-Module", "streamfusion-avro-confluent-registry", ""},
		{"CR-only line ends", "Manifest-Version: 1.0\rStreamFusion-Version: 0.1.0\r\r", "streamfusion-version", "0.1.0", ""},
		{"LF line ends", "Manifest-Version: 1.0\nImplementation-Version: 2.2.1\n", "Implementation-Version", "2.2.1", ""},
		{"72-byte lines folded by the jar tool", testkit.Manifest("StreamFusion-Requires", folded), "StreamFusion-Requires", strings.TrimSpace(folded), ""},
		{"a last line without a line end is ignored", "Manifest-Version: 1.0\nImplementation-Version: 2.2.1",
			"Manifest-Version", "1.0", "Implementation-Version"},
		{"non-UTF-8 bytes elsewhere", "Manifest-Version: 1.0\r\nImplementation-Vendor: Caf\xe9\r\nImplementation-Version: 1.0\r\n",
			"Implementation-Version", "1.0", ""},
		{"per-entry sections after the main one", "Manifest-Version: 1.0\r\nA: main\r\n\r\nName: x.class\r\nA: entry\r\n", "A", "main", ""},
		{"non-UTF-8 value, read as the JVM decodes it", "Manifest-Version: 1.0\r\nA: caf\xe9 \xe2\x82!\r\n", "A", "caf\ufffd \ufffd!", ""},
		{"a NUL byte in a value", "Manifest-Version: 1.0\r\nA: x\x00y\r\n", "A", "x\x00y", ""},
		{"the same attribute twice: the last one", "Manifest-Version: 1.0\r\nA: one\r\na: two\r\n", "A", "two", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			j := requireAttr(t, testkit.JAR(c.manifest, testkit.Entry{Name: "a.class", Data: []byte("x")}), c.attr, c.want)
			if c.absent != "" {
				_, ok := j.Manifest.Get(c.absent)
				assert.False(t, ok, "%s is not read", c.absent)
			}
		})
	}
}

// The whole manifest must be well formed, not only the main section.
func TestManifestSyntaxRefused(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name     string
		manifest string
		want     string
	}{
		{"a line without ': '", "Manifest-Version 1.0\r\n", "malformed manifest"},
		{"a line of 512 bytes", "Manifest-Version: 1.0\r\nX: " + strings.Repeat("y", 509) + "\n", "line 2 is longer than 511 bytes"},
		{"a section without Name", "Manifest-Version: 1.0\r\n\r\nBogus: x\r\n", "without \"Name: \""},
		{"an attribute name not ASCII", "Manifest-Version: 1.0\r\nCaf\xc3\xa9: x\r\n", "is not an attribute name"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			requireRefused(t, testkit.JAR(c.manifest), c.want)
		})
	}
}

// The manifest is the last entry named META-INF/MANIFEST.MF in any case.
func TestManifestEntryChosen(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		data []byte
	}{
		{"two manifests: JarFile reads the last",
			testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "META-INF/MANIFEST.MF", Data: []byte("A: 2\r\n")})},
		{"manifests differing in case: JarFile reads the last",
			testkit.JAR(testkit.Manifest("A", "1"), testkit.Entry{Name: "meta-inf/manifest.mf", Data: []byte("A: 2\r\n")})},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			requireAttr(t, c.data, "A", "2")
		})
	}
}
