package admission_test

// Rule cases on Facts built directly: admission is pure, so a rule's case
// says the facts it sees and the finding it makes, with no file system in
// between. rules_test.go keeps one end-to-end case per rule through
// host.Gather.

import (
	"errors"
	"fmt"
	"io/fs"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

const factsLib = "/opt/flink/lib"

// jar is a JAR whose manifest has the attributes of pairs.
func jar(t *testing.T, name string, pairs ...string) *payload.JAR {
	t.Helper()
	var b strings.Builder
	b.WriteString("Manifest-Version: 1.0\r\n")
	for i := 0; i+1 < len(pairs); i += 2 {
		fmt.Fprintf(&b, "%s: %s\r\n", pairs[i], pairs[i+1])
	}
	m, err := payload.ParseManifest(strings.NewReader(b.String()))
	require.NoError(t, err)
	return &payload.JAR{Path: factsLib + "/" + name, Manifest: &m}
}

// sf is a StreamFusion payload of module, kind, line and version.
// extra are more attribute pairs.
func sf(t *testing.T, name, kind, module, line, version string, extra ...string) *payload.JAR {
	t.Helper()
	return jar(t, name, append([]string{admission.AttrPayload, kind, admission.AttrModule, module,
		admission.AttrArtifact, admission.Group + ":" + admission.ArtifactID(module, line),
		admission.AttrVersion, version, admission.AttrLine, line, admission.AttrJavaRelease, "11"}, extra...)...)
}

// goodFacts is a Flink 2.2.1 host with StreamFusion 0.1.0: loader (and its
// embedded core), runtime core and the kafka extension.
func goodFacts(t *testing.T) *admission.Facts {
	t.Helper()
	loader := sf(t, "00-streamfusion-loader.jar", admission.KindLoader, admission.LoaderModule, "2.2", "0.1.0")
	m, err := payload.ParseManifest(strings.NewReader("Manifest-Version: 1.0\r\n" +
		"StreamFusion-Payload: loader\r\nStreamFusion-Module: streamfusion-loader\r\nStreamFusion-Artifact: tech.streamfusion:streamfusion-loader\r\n" +
		"StreamFusion-Version: 0.1.0\r\nStreamFusion-Flink-Line: 2.2\r\nStreamFusion-Java-Release: 11\r\n" +
		admission.AttrEmbeddedCore + ": META-INF/streamfusion/streamfusion-core.jar\r\n"))
	require.NoError(t, err)
	loader.Manifest = &m
	loader.Nested = sf(t, "x", admission.KindCore, admission.CoreModule, "2.2", "0.1.0")
	loader.Nested.Path = loader.Path + "!/META-INF/streamfusion/streamfusion-core.jar"
	dist := jar(t, "flink-dist-2.2.1.jar", "Implementation-Version", "2.2.1")
	return &admission.Facts{
		LibDir: factsLib,
		Classpath: []*payload.JAR{
			loader,
			jar(t, "flink-table-planner-loader-2.2.1.jar", "Implementation-Version", "2.2.1"),
			sf(t, "streamfusion-core.jar", admission.KindCore, admission.CoreModule, "2.2", "0.1.0"),
			sf(t, "streamfusion-kafka.jar", admission.KindExtension, "streamfusion-kafka", "2.2", "0.1.0"),
			dist,
		},
		JDK:      admission.JDK{Version: "17.0.15", Source: "/opt/java/openjdk/release"},
		Platform: admission.Platform{OS: "linux", Arch: "x86_64", Libc: "glibc", Evidence: "/lib64/ld-linux-x86-64.so.2"},
	}
}

func TestGoodFactsAdmitWithoutFindings(t *testing.T) {
	t.Parallel()
	d := admission.Decide(goodFacts(t))
	assert.Empty(t, d.Findings)
	assert.Equal(t, "2.2", d.Line)
}

func TestRulesOnFacts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		rule  string
		facts func(*testing.T, *admission.Facts)
		// the finding, field by field
		path, found, required string
	}{
		{"lib unreadable", "host-lib", func(_ *testing.T, f *admission.Facts) { f.LibErr = fs.ErrPermission },
			factsLib, "permission denied", "a readable lib directory (FLINK_LIB_DIR, else $FLINK_HOME/lib)"},
		{"extension of line 1.18", "payload-line", func(t *testing.T, f *admission.Facts) {
			f.Classpath[3] = sf(t, "kafka-connector.jar", admission.KindExtension, "streamfusion-avro", "1.18", "0.1.0")
		}, factsLib + "/kafka-connector.jar", "line 1.18, artifact tech.streamfusion:streamfusion-avro-flink1.18", "line 2.2 (the host runs Flink 2.2.1)"},
		{"extension of another release", "payload-version", func(t *testing.T, f *admission.Facts) {
			f.Classpath[3] = sf(t, "streamfusion-kafka.jar", admission.KindExtension, "streamfusion-kafka", "2.2", "0.2.0")
		}, factsLib + "/streamfusion-kafka.jar", "version 0.2.0", "version 0.1.0"},
		{"JDK 21", "host-jdk-unsupported", func(_ *testing.T, f *admission.Facts) { f.JDK.Version = "21.0.1" },
			"/opt/java/openjdk/release", "Java 21.0.1", "Java 11 or 17"},
		{"JDK chosen by env.java.home", "host-jdk-unsupported", func(_ *testing.T, f *admission.Facts) { f.JDK.Version, f.JDK.Via = "21.0.1", "env.java.home" },
			"/opt/java/openjdk/release", "Java 21.0.1 (chosen by Flink's scripts through env.java.home)", "Java 11 or 17"},
		{"no JDK", "host-jdk-missing", func(_ *testing.T, f *admission.Facts) { f.JDK.Err = errors.New("no release file") },
			"/opt/java/openjdk/release", "no release file", "a JDK 11 or 17 with a release file"},
		{"runtime core of another release", "core-mismatch", func(t *testing.T, f *admission.Facts) {
			f.Classpath[2] = sf(t, "streamfusion-core.jar", admission.KindCore, admission.CoreModule, "2.2", "0.2.0")
		}, factsLib + "/streamfusion-core.jar", "streamfusion-core 0.2.0 (line 2.2)", "streamfusion-core 0.1.0 (line 2.2), the loader's"},
		{"unlistable directory", "layout-unreadable-jar", func(_ *testing.T, f *admission.Facts) {
			f.Unlisted = []admission.Unlisted{{Path: factsLib + "/private", Err: fs.ErrPermission}}
		}, factsLib + "/private", "permission denied", "every directory below lib readable by the container's user"},
		{"musl host", "host-libc", func(t *testing.T, f *admission.Facts) {
			f.Classpath[2] = sf(t, "streamfusion-core.jar", admission.KindCore, admission.CoreModule, "2.2", "0.1.0", admission.AttrPlatforms, "linux-x86_64")
			f.Platform.Libc, f.Platform.Evidence = "musl", "/lib/ld-musl-x86_64.so.1"
		}, factsLib + "/streamfusion-core.jar", "musl (/lib/ld-musl-x86_64.so.1)", "glibc"},
		{"arm64 host", "host-platform", func(t *testing.T, f *admission.Facts) {
			f.Classpath[2] = sf(t, "streamfusion-core.jar", admission.KindCore, admission.CoreModule, "2.2", "0.1.0", admission.AttrPlatforms, "linux-x86_64")
			f.Platform.Arch = "aarch64"
		}, factsLib + "/streamfusion-core.jar", "native libraries for linux-x86_64", "linux-aarch64 (the host's) in StreamFusion-Native-Platforms"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			f := goodFacts(t)
			c.facts(t, f)
			d := admission.Decide(f)
			require.False(t, d.Admitted())
			errs := d.Errors()
			require.Len(t, errs, 1, "one fact, one finding: %v", errs)
			got := errs[0]
			assert.Equal(t, c.rule, got.Rule)
			assert.Equal(t, c.path, got.Path)
			assert.Equal(t, c.found, got.Found)
			assert.Equal(t, c.required, got.Required)
			assert.NotEmpty(t, got.Fix)
			for _, fact := range []string{c.found, c.required} {
				assert.NotContains(t, got.Message, fact, "the message is the what; found and required say the values")
			}
		})
	}
}
