package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
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

// linkageWarning is a linkage-class warning of jar: from uses owner.
func linkageWarning(jar, from, owner string) admission.Finding {
	return admission.Finding{Rule: "linkage-class", Severity: admission.Warning, Path: jar,
		Message: strings.ReplaceAll(from, "/", ".") + " uses " + strings.ReplaceAll(owner, "/", ".") + ", which has no class file on the classpath",
		Found:   "no " + owner, Required: owner + " on the classpath", Fix: "add the JAR that provides it",
		Symbol: &admission.Symbol{Kind: admission.SymClass, From: from, Owner: owner, JAR: jar}}
}

func TestFewFindingsAreALineEach(t *testing.T) {
	t.Parallel()
	d := refusal("/opt/flink/lib/a.jar", "/opt/flink/lib/b.jar")
	var b bytes.Buffer
	require.NoError(t, New(&admission.Facts{}, d).Text(&b))
	for _, f := range d.Findings {
		assert.Contains(t, b.String(), strings.ToUpper(string(f.Severity))+" ["+f.Rule+"] "+f.Text()+"\n")
	}
}

// Optional libraries that only bundled code uses are the usual state; a
// library or a Flink class the JAR's own Flink-facing code needs is not.
func TestGroupsSetTheUsualApart(t *testing.T) {
	t.Parallel()
	const jar = "/opt/flink/lib/hive.jar"
	var fs []admission.Finding
	for i := range 30 {
		fs = append(fs, linkageWarning(jar, "org/apache/hadoop/hive/ql/Q", fmt.Sprintf("org/apache/calcite/rel/R%d", i)))
	}
	fs = append(fs, linkageWarning(jar, "org/apache/flink/table/planner/delegation/hive/HiveParser", "org/apache/flink/table/calcite/bridge/CalciteContext"),
		linkageWarning(jar, "org/apache/flink/connectors/kafka/KafkaSource", "org/apache/kafka/clients/Consumer"),
		linkageWarning(jar, "org/apache/flink/connectors/kafka/KafkaSource", "org/apache/kafka/common/Node"),
		linkageWarning(jar, "org/apache/hadoop/hive/ql/Q", "org/apache/flink/shaded/guava31/com/google/common/base/Joiner"))
	subjects := Groups(fs)
	require.Len(t, subjects, 1)
	got := map[string]bool{}
	n := 0
	for _, g := range subjects[0].Groups {
		got[g.Library] = g.Usual
		n += len(g.Findings)
	}
	assert.Equal(t, len(fs), n, "every finding in one group")
	assert.Equal(t, map[string]bool{"org.apache.calcite": true, "org.apache.flink": false, "org.apache.kafka": false, "org.apache.flink.shaded.guava31": true}, got)
	assert.False(t, subjects[0].Groups[len(subjects[0].Groups)-1].Flink)
	assert.True(t, subjects[0].Groups[len(subjects[0].Groups)-1].Usual, "the usual groups come last")
}

// Whatever the number of JARs and findings, the report fits a screen as
// long as the errors do; no error is folded.
func TestManyFindingsFitAScreen(t *testing.T) {
	t.Parallel()
	for _, jars := range []int{1, 5, 30, 200} {
		t.Run(fmt.Sprint(jars), func(t *testing.T) {
			t.Parallel()
			d := refusal("/opt/flink/lib/payload.jar")
			for j := range jars {
				jar := fmt.Sprintf("/opt/flink/lib/connector-%d.jar", j)
				for i := range 40 {
					d.Findings = append(d.Findings, linkageWarning(jar, "com/acme/bundled/B", fmt.Sprintf("org/lib%d/x/C%d", i%9, i)))
				}
				d.Findings = append(d.Findings, linkageWarning(jar, "org/apache/flink/connector/acme/Source", "org/apache/flink/api/Gone"))
			}
			var b bytes.Buffer
			require.NoError(t, New(&admission.Facts{}, d).Text(&b))
			text := b.String()
			assert.LessOrEqual(t, strings.Count(text, "\n"), ScreenLines, text)
			assert.Contains(t, text, d.Findings[0].Text(), "the error in full")
			named, more := 0, 0
			for j := range jars {
				if strings.Contains(text, fmt.Sprintf("/opt/flink/lib/connector-%d.jar: 41 warnings", j)) {
					named++
				}
			}
			if m := regexp.MustCompile(`(?m)^(\d+) more JARs: `).FindStringSubmatch(text); m != nil {
				more, _ = strconv.Atoi(m[1])
				assert.Contains(t, text, fmt.Sprintf("%d more JARs: %d warnings (%d linkage-class)", more, 41*more, 41*more))
			}
			assert.Equal(t, jars, named+more, "every JAR named or counted")
		})
	}
}

func TestFindingLinesGroupTheTextLog(t *testing.T) {
	t.Parallel()
	d := refusal("/opt/flink/lib/payload.jar")
	for i := range 500 {
		d.Findings = append(d.Findings, linkageWarning("/opt/flink/lib/hive.jar", "org/apache/hadoop/hive/ql/Q", fmt.Sprintf("org/apache/calcite/rel/R%d", i)))
	}
	var b bytes.Buffer
	FindingLines(Logger(&b, false, "info"), d)
	lines := strings.Split(strings.TrimSpace(b.String()), "\n")
	assert.LessOrEqual(t, len(lines), ScreenLines-2)
	assert.Contains(t, b.String(), "streamfusion: ERROR [payload-line] /opt/flink/lib/payload.jar: ")
	assert.Contains(t, b.String(), "streamfusion: WARN   500 WARNING [linkage-class] in 1 libraries: the usual state of this JAR")
}
