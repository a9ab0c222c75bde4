package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// refusal is a decision with one payload-line error per path, and a warning.
func refusal(paths ...string) *admission.Decision {
	d := &admission.Decision{}
	for _, p := range paths {
		d.Findings = append(d.Findings, admission.Finding{Rule: "payload-line", Severity: admission.Error, Path: p,
			Message: "streamfusion-avro 0.1.0 is built for another Flink line", Found: "line 1.18, artifact tech.streamfusion:streamfusion-avro-flink1.18",
			Required: "line 2.2 (the host runs Flink 2.2.1)", Fix: "install tech.streamfusion:streamfusion-avro:0.1.0 in its place, or remove it"})
	}
	d.Findings = append(d.Findings, admission.Finding{Rule: "line-experimental", Severity: admission.Warning, Message: "experimental"})
	return d
}

func jars(n int, dir, format string) []string {
	var out []string
	for i := range n {
		out = append(out, dir+fmt.Sprintf(format, i))
	}
	return out
}

const checkHint = "Run '/docker-entrypoint.sh streamfusion check' in the image for the full report."

func TestFindingTextSaysEachPartOnce(t *testing.T) {
	t.Parallel()
	f := refusal("/opt/flink/lib/kafka-connector.jar").Findings[0]
	assert.Equal(t, "/opt/flink/lib/kafka-connector.jar: streamfusion-avro 0.1.0 is built for another Flink line: "+
		"found line 1.18, artifact tech.streamfusion:streamfusion-avro-flink1.18, required line 2.2 (the host runs Flink 2.2.1); "+
		"fix: install tech.streamfusion:streamfusion-avro:0.1.0 in its place, or remove it", f.Text())
}

func TestSummaryOfFewErrorsIsTheirSentences(t *testing.T) {
	t.Parallel()
	d := refusal("/opt/flink/lib/a.jar", "/opt/flink/lib/b.jar")
	s := Summary("jobmanager", d)
	want := "StreamFusion refused to start jobmanager: 2 errors. " + d.Findings[0].Text() + ". " + d.Findings[1].Text() + ". " + checkHint
	assert.Equal(t, want, s)
}

func TestSummaryNamesErrorsOnly(t *testing.T) {
	t.Parallel()
	s := Summary("taskmanager", refusal("/opt/flink/lib/a.jar"))
	assert.True(t, strings.HasPrefix(s, "StreamFusion refused to start taskmanager: 1 error. /opt/flink/lib/a.jar: "), s)
	assert.NotContains(t, s, "experimental")
}

// The termination message is at most 4 KiB, and the Flink Kubernetes
// Operator copies its first 2 KiB into status.error: however many JARs are
// refused, the summary says less rather than cutting, and names every one
// in those 2 KiB while their names fit there.
func TestSummaryShortensInsteadOfCutting(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		paths []string
		form  string // a fragment only that form has
	}{
		{"a few: in full", jars(3, "/opt/flink/lib/", "streamfusion-avro-%02d.jar"), "found line 1.18"},
		{"eight: with their fixes", jars(8, "/opt/flink/lib/", "streamfusion-avro-%02d.jar"), "; fix: install"},
		{"twenty: what only", jars(20, "/opt/flink/lib/", "streamfusion-avro-%02d.jar"), "built for another Flink line."},
		{"forty short names: paths by rule", jars(40, "/opt/flink/lib/", "sf-%02d.jar"), "payload-line: /opt/flink/lib/sf-00.jar, /opt/flink/lib/sf-01.jar"},
		{"forty long paths: by directory", jars(40, "/opt/flink/lib/", "streamfusion-extension-%02d-flink1.18-0.1.0.jar"),
			"payload-line: /opt/flink/lib/{streamfusion-extension-00-flink1.18-0.1.0.jar, "},
		{"two directories", append(jars(20, "/opt/flink/lib/", "streamfusion-extension-%02d-flink1.18-0.1.0.jar"),
			jars(20, "/opt/flink/lib/connectors/", "streamfusion-extension-%02d-flink1.18.jar")...), "}, /opt/flink/lib/connectors/{"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Summary("jobmanager", refusal(c.paths...))
			assert.LessOrEqual(t, len(s), MaxTermination)
			assert.Contains(t, s, c.form)
			assert.True(t, strings.HasSuffix(s, checkHint), "nothing cut: %s", s)
			assert.NotContains(t, s, "[...]")
			status := s[:min(len(s), MaxStatus)]
			for _, p := range c.paths {
				assert.True(t, Names(status, p), "status.error names %s: %s", p, status)
			}
		})
	}
}

func TestSummaryOfTooManyNamesCountsThem(t *testing.T) {
	t.Parallel()
	paths := jars(200, "/opt/flink/lib/", "renamed-extension-with-a-rather-long-file-name-%03d.jar")
	s := Summary("jobmanager", refusal(paths...))
	assert.LessOrEqual(t, len(s), MaxTermination)
	assert.True(t, strings.HasSuffix(s, checkHint), "nothing cut: %s", s)
	assert.Contains(t, s, "payload-line: 200 in /opt/flink/lib/{renamed-extension-with-a-rather-long-file-name-000.jar, ")
	assert.Regexp(t, `, and \d+ more\}\.`, s)
	status := s[:min(len(s), MaxStatus)]
	assert.True(t, Names(status, paths[0]))
	assert.NotContains(t, s[MaxStatus:], ".jar", "every name shown is within status.error")
}

func TestNames(t *testing.T) {
	t.Parallel()
	cases := []struct {
		text, path string
		want       bool
	}{
		{"x: /opt/flink/lib/a.jar.", "/opt/flink/lib/a.jar", true},
		{"x: /opt/flink/lib/{a.jar, b.jar}.", "/opt/flink/lib/b.jar", true},
		{"x: /opt/flink/lib/{a.jar, bb.jar}.", "/opt/flink/lib/b.jar", false},
		{"x: /opt/flink/lib/{a.jar, b.jar", "/opt/flink/lib/b.jar", false},
		{"x: /opt/flink/usrlib/{b.jar}.", "/opt/flink/lib/b.jar", false},
	}
	for _, c := range cases {
		t.Run(c.text+" "+c.path, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, c.want, Names(c.text, c.path))
		})
	}
}

func TestClipCutsAtAWordBoundary(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "short", Clip("short", 10))
	assert.Equal(t, "still reading: [...]", Clip("still reading: /opt/flink/lib/a.jar", 24))
}

func TestClipKeepsRunesWhole(t *testing.T) {
	t.Parallel()
	for n := 8; n < 40; n++ {
		t.Run(fmt.Sprint(n), func(t *testing.T) {
			c := Clip(strings.Repeat("é", 30), n)
			assert.LessOrEqual(t, len(c), n)
			assert.True(t, utf8.ValidString(c))
		})
	}
}

func TestWriteTermination(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "termination-log")
	require.NoError(t, os.WriteFile(p, []byte("old content that is longer"), 0o644))
	require.NoError(t, WriteTermination(p, "new"))
	got, _ := os.ReadFile(p)
	assert.Equal(t, "new", string(got))
	require.NoError(t, WriteTermination(filepath.Join(dir, "absent"), "x"))
	assert.NoFileExists(t, filepath.Join(dir, "absent"))
	require.NoError(t, WriteTermination(p, strings.Repeat("y", 10000)))
	got, _ = os.ReadFile(p)
	assert.Len(t, got, MaxTermination)
}

func TestLoggerFormats(t *testing.T) {
	t.Parallel()
	var text, js bytes.Buffer
	Findings(Logger(&text, false, "info"), refusal("/opt/flink/lib/a.jar"))
	lines := strings.Split(strings.TrimSpace(text.String()), "\n")
	require.Len(t, lines, 2)
	assert.Equal(t, "streamfusion: ERROR [payload-line] "+refusal("/opt/flink/lib/a.jar").Findings[0].Text(), lines[0], "the text line is the finding's sentence")
	assert.True(t, strings.HasPrefix(lines[1], "streamfusion: WARN [line-experimental]"), lines[1])

	Findings(Logger(&js, true, "error"), refusal("/opt/flink/lib/a.jar"))
	lines = strings.Split(strings.TrimSpace(js.String()), "\n")
	require.Len(t, lines, 1, "the level filters warnings")
	var ev map[string]any
	require.NoError(t, json.Unmarshal([]byte(lines[0]), &ev))
	assert.Equal(t, "line 2.2 (the host runs Flink 2.2.1)", ev["required"])
	assert.Equal(t, "streamfusion", ev["logger"])
}

// The catalogue in the README is the one `streamfusion rules --markdown`
// prints: regenerate it with `bin/entrypoint streamfusion rules --markdown`.
func TestReadmeCatalogueIsCurrent(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile("../../README.md")
	require.NoError(t, err)
	var out bytes.Buffer
	require.NoError(t, Rules(&out, true, admission.Catalogue()))
	assert.Contains(t, string(readme), out.String(), "README rule catalogue is stale: regenerate it with `bin/entrypoint streamfusion rules --markdown`")
}

func TestInspectAll(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "streamfusion-kafka.jar")
	stock := filepath.Join(dir, "flink-json.jar")
	require.NoError(t, os.WriteFile(good, testkit.Extension("kafka", "2.2", "0.1.0").Bytes(), 0o644))
	require.NoError(t, os.WriteFile(stock, testkit.JAR(testkit.Manifest("Implementation-Title", "flink-json")), 0o644))
	missing := filepath.Join(dir, "missing.jar")
	for _, tc := range []struct {
		name string
		jars []Shown
		bad  bool
		want []string // in the text output, in order
	}{
		{"a payload and a stock JAR", []Shown{{good, "kafka.jar"}, {stock, stock}}, false, []string{"kafka.jar: ", "streamfusion-kafka", stock + ": not StreamFusion content"}},
		{"a missing JAR fails admission", []Shown{{missing, missing}}, true, []string{missing + ": cannot read"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var text, js bytes.Buffer
			bad, err := InspectAll(&text, os.DirFS("/"), tc.jars, false)
			require.NoError(t, err)
			assert.Equal(t, tc.bad, bad)
			at := 0
			for _, w := range tc.want {
				i := strings.Index(text.String()[at:], w)
				require.GreaterOrEqual(t, i, 0, "%q after offset %d in %q", w, at, text.String())
				at += i + len(w)
			}
			bad, err = InspectAll(&js, os.DirFS("/"), tc.jars, true)
			require.NoError(t, err)
			assert.Equal(t, tc.bad, bad)
			var got []Inspected
			require.NoError(t, json.Unmarshal(js.Bytes(), &got))
			require.Len(t, got, len(tc.jars))
			for i, j := range tc.jars {
				assert.Equal(t, j.As, got[i].Path, "shown as the user named it")
			}
		})
	}
}
