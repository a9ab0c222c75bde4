//go:build realjars

package realflink

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// The people's report on real connectors placed on real distributions,
// at home and across lines: it fits one screen (report.ScreenLines), and
// every finding of --json is counted in it, under its JAR and its rule.
// The Hive connector on 1.20.3 gives some 3,600 linkage-class warnings,
// most of them Hive's and Hadoop's optional dependencies.
func TestReportFitsAScreenOnRealConnectors(t *testing.T) {
	for _, c := range []struct {
		flink string
		jars  [][2]string // artifact, version
		least int         // findings the placement gives at least: the case is the noisy one it is meant to be
		usual bool        // some warnings are said to be the usual state of the JAR
	}{
		{"1.20.3", [][2]string{{"flink-sql-connector-hive-2.3.10_2.12", "1.20.0"}}, 3000, true},
		{"2.2.0", [][2]string{{"flink-sql-connector-hive-2.3.10_2.12", "1.20.0"}}, 3000, true},
		{"2.2.0", [][2]string{{"flink-sql-connector-kafka", "5.0.0-2.2"}}, 0, false},
		{"1.18.1", [][2]string{{"flink-sql-connector-kafka", "5.0.0-2.2"}}, 0, false},
		{"2.2.0", [][2]string{{"flink-connector-kafka", "5.0.0-2.2"}}, 100, false}, // without kafka-clients
		{"1.18.1", [][2]string{{"paimon-flink-1.18", "0.8.2"}}, 0, false},
	} {
		name := c.flink
		for _, j := range c.jars {
			name += "+" + j[0] + "-" + j[1]
		}
		t.Run(name, func(t *testing.T) {
			root := t.TempDir()
			lib := filepath.Join(root, "opt/flink/lib")
			require.NoError(t, os.MkdirAll(lib, 0o755))
			for n, p := range realLib(t, c.flink) {
				require.NoError(t, os.Symlink(p, filepath.Join(lib, n)))
			}
			for _, j := range c.jars {
				require.NoError(t, os.Symlink(jarPath(t, j[0], j[1]), filepath.Join(lib, j[0]+"-"+j[1]+".jar")))
			}
			jdk := filepath.Join(root, testkit.JavaHome)
			require.NoError(t, os.MkdirAll(jdk, 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(jdk, "release"), []byte("JAVA_VERSION=\"17.0.15\"\n"), 0o644))
			facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
				LibDir: lib, JavaHome: jdk, OS: "linux", Arch: "x86_64", Deep: true,
			}, nil)
			require.NoError(t, err)
			defer facts.Deep.Close()
			d := admission.Decide(facts)
			r := report.New(facts, d)
			require.GreaterOrEqual(t, len(r.Findings), c.least)

			var text, js bytes.Buffer
			require.NoError(t, r.Text(&text))
			require.NoError(t, r.JSON(&js))
			var back report.Report
			require.NoError(t, json.Unmarshal(js.Bytes(), &back))
			require.Equal(t, r.Findings, back.Findings, "--json keeps every finding as it is")

			lines := strings.Split(strings.TrimSuffix(text.String(), "\n"), "\n")
			assert.LessOrEqual(t, len(lines), report.ScreenLines, text.String())
			assert.Equal(t, countsOf(back.Findings), countedIn(t, lines), "every finding of --json counted under its JAR and rule:\n%s", text.String())
			assert.Equal(t, c.usual, strings.Contains(text.String(), "the usual state of this JAR"), text.String())
			t.Logf("%d findings in %d lines:\n%s", len(r.Findings), len(lines), text.String())

			// The entrypoint's text log at a refused start: the same groups,
			// within a screen beside the summary line.
			var logged bytes.Buffer
			report.FindingLines(report.Logger(&logged, false, "info"), d)
			logLines := strings.Split(strings.TrimSuffix(logged.String(), "\n"), "\n")
			assert.LessOrEqual(t, len(logLines), report.ScreenLines-2, logged.String())
			for _, f := range r.Findings {
				if f.Path != "" {
					assert.Contains(t, logged.String(), f.Path, "the log names every JAR with a finding")
				}
			}
		})
	}
}

// countsOf counts findings by path and rule.
func countsOf(fs []admission.Finding) map[string]int {
	out := map[string]int{}
	for _, f := range fs {
		out[f.Path+" "+f.Rule]++
	}
	return out
}

var (
	oneLine    = regexp.MustCompile(`^(ERROR|WARNING) \[([a-z0-9-]+)\] (.*)$`)
	subject    = regexp.MustCompile(`^(/\S*|host): (?:(\d+) errors?)?(?:, )?(?:(\d+) warnings?)?(?: \((.*)\))?$`)
	groupHead  = regexp.MustCompile(`^  (\d+) (ERROR|WARNING) \[([a-z0-9-]+)\]`)
	groupOne   = regexp.MustCompile(`^  (ERROR|WARNING) \[([a-z0-9-]+)\] `)
	usualLib   = regexp.MustCompile(`^    (\d+) [a-z0-9_.]+, e\.g\. `)
	usualMore  = regexp.MustCompile(`^    (\d+) in (\d+) more libraries$`)
	usualHead  = regexp.MustCompile(`^  (\d+) WARNING \[linkage-class\] in (\d+) libraries`)
	ruleCounts = regexp.MustCompile(`(\d+) ([a-z0-9-]+)`)
)

// countedIn reads the people's report back: the counts it gives by path
// and rule. A grouped subject's header must agree with its groups, and a
// usual group's count with its libraries' lines.
func countedIn(t *testing.T, lines []string) map[string]int {
	t.Helper()
	out := map[string]int{}
	path, declared, summed, usualLeft := "", 0, 0, 0
	closeSubject := func() {
		if path != "" {
			assert.Equal(t, declared, summed, "the groups of %s add up to its header", path)
			assert.Zero(t, usualLeft, "the usual libraries of %s add up to their count", path)
		}
		path, declared, summed = "", 0, 0
	}
	for _, l := range lines {
		switch {
		case oneLine.MatchString(l):
			closeSubject()
			m := oneLine.FindStringSubmatch(l)
			p, _, _ := strings.Cut(m[3], ": ")
			if !strings.HasPrefix(p, "/") {
				p = ""
			}
			out[p+" "+m[2]]++
		case subject.MatchString(l):
			closeSubject()
			m := subject.FindStringSubmatch(l)
			path = strings.TrimPrefix(m[1], "host") // a subject without a path
			e, _ := strconv.Atoi(m[2])
			w, _ := strconv.Atoi(m[3])
			declared = e + w
			if m[4] != "" { // folded: the rules and their counts on the line
				for _, rc := range ruleCounts.FindAllStringSubmatch(m[4], -1) {
					n, _ := strconv.Atoi(rc[1])
					out[path+" "+rc[2]] += n
					summed += n
				}
			}
		case usualHead.MatchString(l):
			m := usualHead.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[1])
			out[path+" linkage-class"] += n
			summed += n
			usualLeft = n
			if strings.Contains(l, "libraries (") { // the libraries on the line
				usualLeft = 0
			}
		case groupHead.MatchString(l):
			m := groupHead.FindStringSubmatch(l)
			n, _ := strconv.Atoi(m[1])
			out[path+" "+m[3]] += n
			summed += n
		case groupOne.MatchString(l):
			m := groupOne.FindStringSubmatch(l)
			out[path+" "+m[2]]++
			summed++
		case usualLib.MatchString(l):
			n, _ := strconv.Atoi(usualLib.FindStringSubmatch(l)[1])
			usualLeft -= n
		case usualMore.MatchString(l):
			n, _ := strconv.Atoi(usualMore.FindStringSubmatch(l)[1])
			usualLeft -= n
		}
	}
	closeSubject()
	return out
}
