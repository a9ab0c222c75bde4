//go:build realjars && linkageoracle && ecosystem

package realflink

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// The ecosystem corpus of record (issue 28, make test-ecosystem): published
// connectors, formats and integrations (testdata/ecosystem-coordinates.txt),
// each placed alone on a real distribution of the release it is built for
// (home) and on one of the other major line (cross). At home the product
// gives no error. Across lines, the JVM harness (testdata/oracle) decides:
// every placement whose entry points' reachable references fail on the host
// but not at home is refused (exit 78) with an error naming the JAR, and
// every error with a symbol the product gives is one the JVM confirms
// unresolvable. The table goes to the log and, when ECOSYSTEM_TABLE names a
// file, there (docs/ecosystem.md).

// ecoCase is one corpus entry: the JARs placed together (the first is the
// one judged; a thin connector brings its client library) and the two
// releases.
type ecoCase struct {
	jars        []string
	home, cross string
}

var kafka50Thin = []string{"kafka-clients-4.2.0.jar", "zstd-jni-1.5.6-10.jar", "jackson-core-2.18.2.jar", "jackson-databind-2.18.2.jar",
	"jackson-annotations-2.18.2.jar", "jackson-datatype-jdk8-2.18.2.jar", "jackson-datatype-jsr310-2.18.2.jar"}

var ecosystem = []ecoCase{
	{[]string{"flink-sql-connector-mysql-cdc-3.0.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-connector-postgres-cdc-3.0.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-connector-mysql-cdc-3.1.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-connector-postgres-cdc-3.1.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-connector-mysql-cdc-3.5.0.jar"}, "1.20.3", "2.2.0"},
	{[]string{"flink-connector-starrocks-1.2.10_flink-1.18.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-connector-kafka-3.2.0-1.19.jar"}, "", "2.2.0"}, // no 1.19 distribution here
	{[]string{"flink-sql-connector-kafka-5.0.0-2.2.jar"}, "2.2.0", "1.20.3"},
	{[]string{"flink-connector-kafka-3.3.0-1.20.jar", "kafka-clients-3.4.0.jar", "zstd-jni-1.5.2-1.jar"}, "1.20.3", "2.2.0"},
	{append([]string{"flink-connector-kafka-5.0.0-2.2.jar"}, kafka50Thin...), "2.2.0", "1.18.1"},
	{[]string{"flink-sql-connector-hive-2.3.10_2.12-1.20.0.jar"}, "1.20.3", "2.2.0"},
	{[]string{"flink-connector-jdbc-3.2.0-1.18.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-connector-jdbc-3.3.0-1.20.jar"}, "1.20.3", "2.1.1"},
	{[]string{"flink-connector-jdbc-core-4.0.0-2.0.jar"}, "2.0.0", "1.20.3"},
	{[]string{"paimon-flink-1.18-0.8.2.jar"}, "1.18.1", "2.2.0"},
	{[]string{"paimon-flink-1.20-1.2.0.jar"}, "1.20.3", "2.1.1"},
	{[]string{"paimon-flink-2.0-1.1.1.jar"}, "2.0.0", "1.20.3"},
	{[]string{"iceberg-flink-runtime-1.18-1.5.2.jar"}, "1.18.1", "2.2.0"},
	{[]string{"iceberg-flink-runtime-1.20-1.9.2.jar"}, "1.20.3", "2.0.0"},
	{[]string{"iceberg-flink-runtime-2.0-1.10.0.jar"}, "2.0.0", "1.18.1"},
	{[]string{"flink-json-1.20.3.jar"}, "1.20.3", "2.2.0"},
	{[]string{"flink-csv-1.18.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-csv-2.2.0.jar"}, "2.2.0", "1.18.1"},
	{[]string{"flink-sql-avro-1.18.1.jar"}, "1.18.1", "2.2.0"},
	{[]string{"flink-sql-avro-confluent-registry-2.2.0.jar"}, "2.2.0", "1.18.1"},
}

// noPayloads are the rules a placement without StreamFusion's payloads
// breaks by construction (and host-planner-abi: StreamFusion is built for
// no 1.20, 2.0 or 2.1 planner): the corpus judges the JARs around them.
var noPayloads = map[string]bool{"loader-missing": true, "core-missing": true, "host-planner-abi": true}

// ecoRun is one `streamfusion check --json` of a placement.
type ecoRun struct {
	exit     int
	findings []linkFinding
	errors   []linkFinding
	wall     time.Duration
	cpu      time.Duration // user and system
	rssKB    int64
}

func (k oracleKit) ecoCheck(t *testing.T, s flinkSet) ecoRun {
	t.Helper()
	home, _ := s.home(t)
	cmd := exec.Command(k.cli, "check", "--json", "--flink-home", home)
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "JAVA_HOME=" + k.javaHome}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	err := cmd.Run()
	r := ecoRun{wall: time.Since(start)}
	var ee *exec.ExitError
	if err != nil && !errors.As(err, &ee) {
		require.NoError(t, err, "streamfusion check: %s", stderr.String())
	}
	r.exit = cmd.ProcessState.ExitCode()
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok {
		r.rssKB = ru.Maxrss
	}
	var rep struct {
		Findings []linkFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(stdout.Bytes(), &rep), "check --json printed: %s\nstderr: %s", stdout.String(), stderr.String())
	r.findings = rep.Findings
	for _, f := range rep.Findings {
		if f.Severity == "error" && !noPayloads[f.Rule] {
			r.errors = append(r.errors, f)
		}
	}
	return r
}

func (r ecoRun) verdict() string {
	var w int
	for _, f := range r.findings {
		if f.Severity == "warning" {
			w++
		}
	}
	return fmt.Sprintf("exit %d, %d errors, %d warnings", r.exit, len(r.errors), w)
}

func ruleCounts(fs []linkFinding) string {
	n := map[string]int{}
	for _, f := range fs {
		n[f.Rule]++
	}
	var out []string
	for r, c := range n {
		out = append(out, fmt.Sprintf("%s %d", r, c))
	}
	sort.Strings(out)
	return strings.Join(out, ", ")
}

func TestEcosystem(t *testing.T) {
	k := newOracleKit(t)
	var rows []string
	for _, c := range ecosystem {
		jar := c.jars[0]
		t.Run(strings.TrimSuffix(jar, ".jar"), func(t *testing.T) {
			row := []string{jar, c.home, "", c.cross, "", "", "", ""}
			defer func() {
				rows = append(rows, "| "+strings.Join(row, " | ")+" |")
				t.Logf("row: %s", rows[len(rows)-1])
			}()
			var slowest, cpu time.Duration
			var rss int64
			note := func(r ecoRun) {
				slowest, cpu, rss = max(slowest, r.wall), max(cpu, r.cpu), max(rss, r.rssKB)
			}
			if c.home != "" {
				home := k.ecoCheck(t, flinkSet{flink: c.home, lib: c.jars})
				note(home)
				row[2] = home.verdict()
				if len(home.errors) > 0 {
					t.Errorf("at home on %s: %d errors (%s), the first: %s: %s", c.home, len(home.errors), ruleCounts(home.errors), home.errors[0].Rule, home.errors[0].Message)
				}
			} else {
				row[1], row[2] = "(no distribution here)", "-"
			}
			host := flinkSet{flink: c.cross, lib: c.jars}
			cross := k.ecoCheck(t, host)
			note(cross)
			row[4] = cross.verdict()
			var syms []linkSymbol
			for _, f := range cross.errors {
				if f.Symbol != nil {
					syms = append(syms, f.Symbol.perClass()...)
				}
			}
			var own *flinkSet
			if c.home != "" {
				own = &flinkSet{flink: c.home, lib: c.jars}
			}
			o := k.oracle(t, host, own, syms)
			broken := 0
			for key := range o.hostOnly {
				if !strings.HasPrefix(key, "shadow\t") {
					broken++
				}
			}
			if own == nil {
				for key := range o.host {
					if !strings.HasPrefix(key, "shadow\t") {
						broken++
					}
				}
			}
			row[5] = "links"
			if broken > 0 {
				row[5] = fmt.Sprintf("broken (%d references)", broken)
			}
			row[6] = fmt.Sprintf("%.2f s (%.2f s CPU)", slowest.Seconds(), cpu.Seconds())
			row[7] = fmt.Sprintf("%d MB", rss/1024)
			if broken > 0 {
				named := false
				for _, f := range cross.errors {
					for _, j := range c.jars {
						if filepath.Base(f.Path) == j {
							named = true
						}
					}
				}
				if cross.exit != 78 || !named {
					t.Errorf("on %s the JVM finds %d references broken, the product: %s, no error naming %s (%s)", c.cross, broken, cross.verdict(), jar, ruleCounts(cross.findings))
				}
			}
			for _, s := range syms {
				if got := o.checks[s.key()]; !strings.HasPrefix(got, "unresolved") {
					t.Errorf("the product's error %s is not confirmed by the JVM (%s)", strings.ReplaceAll(s.key(), "\t", " "), got)
				}
			}
			for _, f := range cross.errors {
				if f.Symbol == nil && broken == 0 {
					t.Logf("policy error without a JVM failure: %s: %s", f.Rule, f.Message)
				}
			}
		})
	}
	unserved := readCoordinates(t, "testdata/ecosystem-unserved.txt")
	var b strings.Builder
	b.WriteString("| JAR | home release | home verdict | cross release | cross verdict | JVM verdict (cross) | time, slowest check (wall, CPU) | peak RSS |\n|---|---|---|---|---|---|---|---|\n")
	b.WriteString(strings.Join(rows, "\n") + "\n\nSkipped, not served by the registry: " + strings.Join(unserved, ", ") + ".\n")
	t.Logf("ecosystem table:\n%s", b.String())
	if p := os.Getenv("ECOSYSTEM_TABLE"); p != "" {
		require.NoError(t, os.WriteFile(p, []byte(b.String()), 0o644))
	}
}

func readCoordinates(t *testing.T, p string) []string {
	f, err := os.Open(p)
	require.NoError(t, err)
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if l := strings.TrimSpace(sc.Text()); l != "" && !strings.HasPrefix(l, "#") {
			out = append(out, l)
		}
	}
	return out
}

// The Flink each Flink CDC line is built against, as the product reads it
// from the real JARs' manifests, is the flink.version of the line's parent
// POM (flink-cdc-source-connectors), read here with Maven.
func TestEcosystemCDCLines(t *testing.T) {
	for _, c := range []struct{ group, version, jar string }{
		{"com.ververica", "3.0.1", "flink-sql-connector-mysql-cdc-3.0.1.jar"},
		{"org.apache.flink", "3.1.1", "flink-sql-connector-mysql-cdc-3.1.1.jar"},
		{"org.apache.flink", "3.5.0", "flink-sql-connector-mysql-cdc-3.5.0.jar"},
	} {
		t.Run(c.version, func(t *testing.T) {
			dir := t.TempDir()
			pom := fmt.Sprintf(`<project><modelVersion>4.0.0</modelVersion><parent><groupId>%s</groupId><artifactId>flink-cdc-source-connectors</artifactId><version>%s</version><relativePath/></parent><artifactId>probe</artifactId></project>`, c.group, c.version)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "pom.xml"), []byte(pom), 0o644))
			cmd := exec.Command("mvn", "-q", "-B", "-Dstyle.color=never", "help:evaluate", "-Dexpression=flink.version", "-DforceStdout")
			cmd.Dir = dir
			out, err := cmd.Output()
			require.NoError(t, err, "mvn help:evaluate: %s", out)
			flink := strings.TrimSpace(regexp.MustCompile("\x1b\\[[0-9;]*m").ReplaceAllString(string(out), ""))
			sv, ok := admission.ParseStockVersion(flink)
			require.True(t, ok, "flink.version %q", flink)
			p := flinkSet{}.jar(t, c.jar)
			f, err := os.Open(p)
			require.NoError(t, err)
			defer f.Close()
			info, err := f.Stat()
			require.NoError(t, err)
			j := payload.Read(f, info.Size(), p, payload.Options{})
			s := admission.IdentifyStock(j)
			require.NotNil(t, s, "%s not identified", c.jar)
			require.Equal(t, sv.Line, s.Line, "%s: its parent POM's flink.version is %s; the product says %s (%s)", c.jar, flink, s.Line, s.Evidence)
		})
	}
}
