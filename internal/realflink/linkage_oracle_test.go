//go:build realjars && linkageoracle

package realflink

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The linkage tests of record (issue 19): real distributions and real JARs
// by Maven coordinates (testdata/linkage-coordinates.txt), the project's
// `streamfusion check --json` on each set, and the JVM as the oracle
// (testdata/oracle/LinkageOracle.java, compiled here with javac against ASM
// from the same cache): it arranges Flink's class loaders over the same
// JARs, confirms every symbol the project reports is unresolvable, and
// independently finds the references of the classes reachable from the
// entry points that fail on the host but not on the release the JARs were
// built for. The project's set must equal the oracle's. `make test-linkage`.

// linkageRules carry a symbol; the other rules' findings are not compared.
var linkageRules = map[string]bool{
	"linkage-class": true, "linkage-method": true, "linkage-field": true,
	"bytecode-version": true, "classpath-shadowed": true,
}

type linkSymbol struct {
	Kind       string `json:"kind"`
	From       string `json:"from"`
	Owner      string `json:"owner"`
	Name       string `json:"name"`
	Descriptor string `json:"descriptor"`
	Jar        string `json:"jar"`
	// Classes: a shadowing finding's hidden classes (one finding per pair
	// of JARs; the oracle answers per class).
	Classes []string `json:"classes"`
}

// perClass splits a shadowing symbol into one per hidden class, the unit
// the oracle answers in; other symbols are themselves.
func (s linkSymbol) perClass() []linkSymbol {
	if s.Kind != "shadow" {
		return []linkSymbol{s}
	}
	names := s.Classes
	if len(names) == 0 {
		names = []string{s.Owner}
	}
	out := make([]linkSymbol, 0, len(names))
	for _, c := range names {
		out = append(out, linkSymbol{Kind: s.Kind, From: c, Owner: c, Jar: s.Jar})
	}
	return out
}

// key is how the two sides are compared: a class that does not link is
// named at the edge to the class that has no class file (from = the class
// whose instruction, superclass or interface names it); a class file too
// new for the JDK by the class (version); a shadowed class by its name and
// the JAR whose copy the loader takes.
func (s linkSymbol) key() string {
	switch s.Kind {
	case "shadow":
		c := s.From
		if c == "" {
			c = s.Owner
		}
		return "shadow\t" + c + "\t" + filepath.Base(s.Jar)
	case "version":
		return "version\t" + s.From + "\t" + filepath.Base(s.Jar)
	}
	return strings.Join([]string{s.Kind, s.From, s.Owner, s.Name, s.Descriptor, filepath.Base(s.Jar)}, "\t")
}

type linkFinding struct {
	Rule     string      `json:"rule"`
	Severity string      `json:"severity"`
	Path     string      `json:"path"`
	Message  string      `json:"message"`
	Symbol   *linkSymbol `json:"symbol"`
}

// oracleKit is what every case needs once: the compiled harness, the CLI,
// the JDK.
type oracleKit struct {
	classpath string // ASM and the compiled harness
	cli       string
	javaHome  string
}

func newOracleKit(t *testing.T) oracleKit {
	t.Helper()
	java := realJava(t)
	javac, err := exec.LookPath("javac")
	require.NoError(t, err, "javac compiles the JVM oracle")
	dir := t.TempDir()
	asm := jarPath(t, "asm", "9.8")
	out, err := exec.Command(javac, "-d", filepath.Join(dir, "oracle"), "-cp", asm, "testdata/oracle/LinkageOracle.java").CombinedOutput()
	require.NoError(t, err, "javac LinkageOracle.java: %s", out)
	cli := filepath.Join(dir, "streamfusion")
	out, err = exec.Command("go", "build", "-trimpath", "-o", cli, "../../cmd/streamfusion").CombinedOutput()
	require.NoError(t, err, "go build streamfusion: %s", out)
	return oracleKit{classpath: asm + ":" + filepath.Join(dir, "oracle"), cli: cli, javaHome: filepath.Dir(filepath.Dir(java))}
}

// hasEngine tells whether the linkage engine is in this build: its rules
// are in the catalogue.
func (k oracleKit) hasEngine(t *testing.T) bool {
	t.Helper()
	out, err := exec.Command(k.cli, "rules").CombinedOutput()
	require.NoError(t, err, "streamfusion rules: %s", out)
	for r := range linkageRules {
		if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(r) + `\s`).Match(out) {
			t.Logf("the linkage engine is not in this build: `streamfusion rules` lists no %s rule", r)
			return false
		}
	}
	return true
}

// flinkSet is one classpath: a real distribution's lib plus JARs from the
// cache (by file name) or built by the test (absolute paths), and usrlib.
type flinkSet struct {
	flink  string
	lib    []string
	usrlib []string
}

func (s flinkSet) jar(t *testing.T, name string) string {
	if filepath.IsAbs(name) {
		return name
	}
	dir := os.Getenv("STREAMFUSION_FLINK_JARS")
	require.NotEmpty(t, dir, "STREAMFUSION_FLINK_JARS must name the JAR cache; run `make test-linkage`")
	p := filepath.Join(dir, name)
	_, err := os.Stat(p)
	require.NoError(t, err, "real JAR missing from the cache: run `make test-linkage`")
	return p
}

// home lays the set out as a FLINK_HOME: bin and conf of the real
// distribution, lib and usrlib of links. A JAR whose name the
// distribution's lib already has is left out (it is there).
func (s flinkSet) home(t *testing.T) (home string, targets []string) {
	t.Helper()
	home = t.TempDir()
	dist0 := flinkHome(t, s.flink)
	for _, d := range []string{"bin", "conf"} {
		require.NoError(t, os.Symlink(filepath.Join(dist0, d), filepath.Join(home, d)))
	}
	lib := filepath.Join(home, "lib")
	usrlib := filepath.Join(home, "usrlib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	dist := realLib(t, s.flink)
	for name, p := range dist {
		require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
	}
	for _, n := range s.lib {
		p := s.jar(t, n)
		if _, ok := dist[filepath.Base(p)]; ok {
			continue
		}
		require.NoError(t, os.Symlink(p, filepath.Join(lib, filepath.Base(p))))
		targets = append(targets, filepath.Join(lib, filepath.Base(p)))
	}
	if len(s.usrlib) > 0 {
		require.NoError(t, os.MkdirAll(usrlib, 0o755))
	}
	for _, n := range s.usrlib {
		p := s.jar(t, n)
		require.NoError(t, os.Symlink(p, filepath.Join(usrlib, filepath.Base(p))))
		targets = append(targets, filepath.Join(usrlib, filepath.Base(p)))
	}
	return home, targets
}

// spec writes one side of the oracle's input: lib in the order the real
// bin/config.sh gives it (flink-dist last), usrlib by name, the targets.
func (s flinkSet) spec(t *testing.T, side string, b *strings.Builder) {
	home, targets := s.home(t)
	for _, p := range flinkClasspath(t, s.flink, "C", filepath.Join(home, "lib")) {
		fmt.Fprintf(b, "%s.lib=%s\n", side, p)
	}
	for _, n := range s.usrlib {
		fmt.Fprintf(b, "%s.usrlib=%s\n", side, filepath.Join(home, "usrlib", filepath.Base(n)))
	}
	for _, p := range targets {
		fmt.Fprintf(b, "%s.target=%s\n", side, p)
	}
}

// oracleResult is what the harness printed.
type oracleResult struct {
	checks   map[string]string // key -> "resolved"/"unresolved: why"
	hostOnly map[string]string // key -> detail
	host     map[string]string // every failure on the host
	stats    []string
}

func (k oracleKit) oracle(t *testing.T, host flinkSet, own *flinkSet, reported []linkSymbol) oracleResult {
	t.Helper()
	var b strings.Builder
	host.spec(t, "host", &b)
	if own != nil {
		own.spec(t, "own", &b)
	}
	for _, s := range reported {
		fmt.Fprintf(&b, "check=%s\t%s\t%s\t%s\t%s\t%s\n", s.Kind, s.From, s.Owner, s.Name, s.Descriptor, s.Jar)
	}
	spec := filepath.Join(t.TempDir(), "oracle.spec")
	require.NoError(t, os.WriteFile(spec, []byte(b.String()), 0o644))
	cmd := exec.Command(filepath.Join(k.javaHome, "bin", "java"), "-Xss4m", "-cp", k.classpath, "LinkageOracle", spec)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "the JVM oracle failed: %s", stderr.String())
	r := oracleResult{checks: map[string]string{}, hostOnly: map[string]string{}, host: map[string]string{}}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 1<<24)
	sym := func(f []string) linkSymbol {
		return linkSymbol{Kind: f[0], From: f[1], Owner: f[2], Name: f[3], Descriptor: f[4], Jar: f[5]}
	}
	for sc.Scan() {
		f := strings.Split(sc.Text(), "\t")
		switch f[0] {
		case "CHECK":
			r.checks[sym(f[2:8]).key()] = f[1]
			if f[8] != "" {
				r.checks[sym(f[2:8]).key()] += ": " + f[8]
			}
		case "FAIL":
			if f[1] == "host" {
				r.host[sym(f[2:8]).key()] = f[8]
			}
		case "HOSTONLY":
			r.hostOnly[sym(f[1:7]).key()] = f[7]
		case "STAT":
			r.stats = append(r.stats, strings.Join(f[1:], " "))
		}
	}
	require.NoError(t, sc.Err())
	return r
}

// check runs the project on the set and returns its linkage findings.
func (k oracleKit) check(t *testing.T, s flinkSet) []linkFinding {
	t.Helper()
	home, _ := s.home(t)
	cmd := exec.Command(k.cli, "check", "--json", "--flink-home", home)
	cmd.Env = []string{"LC_ALL=C", "PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "JAVA_HOME=" + k.javaHome}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		var ee *exec.ExitError
		require.ErrorAs(t, err, &ee, "streamfusion check: %s", stderr.String())
	}
	var rep struct {
		Findings []linkFinding `json:"findings"`
	}
	require.NoError(t, json.Unmarshal(out, &rep), "streamfusion check --json printed: %s\nstderr: %s", out, stderr.String())
	var fs []linkFinding
	for _, f := range rep.Findings {
		if linkageRules[f.Rule] {
			require.NotNil(t, f.Symbol, "%s finding without a symbol: %s", f.Rule, f.Message)
			fs = append(fs, f)
		}
	}
	return fs
}

// linkCase is one set on a host, with the release its JARs were built for.
type linkCase struct {
	name string
	host flinkSet
	own  *flinkSet // nil: the set is consistent (the JARs are on their own release)
	// what the issue recorded with javap for this set: substrings each of
	// which some host-only failure of the oracle must contain
	issue []string
}

// newerClassJob is a job JAR whose Main-Class is a class file newer than
// this JDK: compiled by a newer JDK's javac --release when the machine has
// one, else compiled for this JDK with the class file's major version
// patched to 69 (Java 25) afterwards, which is all the JVM reads to refuse
// it.
func newerClassJob(t *testing.T, javaHome string) string {
	t.Helper()
	dir := t.TempDir()
	src := filepath.Join(dir, "src", "example", "Newer.java")
	require.NoError(t, os.MkdirAll(filepath.Dir(src), 0o755))
	require.NoError(t, os.WriteFile(src, []byte("package example;\npublic class Newer { public static void main(String[] a) { System.out.println(\"newer\"); } }\n"), 0o644))
	classes := filepath.Join(dir, "classes")
	host := javaFeature(filepath.Join(javaHome, "bin", "java"))
	var newer string
	jvms, _ := filepath.Glob("/usr/lib/jvm/*/bin/javac")
	for _, j := range jvms {
		if v := javaFeature(filepath.Join(filepath.Dir(j), "java")); v > host {
			newer = j
			break
		}
	}
	class := filepath.Join(classes, "example", "Newer.class")
	if newer != "" {
		v := javaFeature(filepath.Join(filepath.Dir(newer), "java"))
		out, err := exec.Command(newer, "--release", strconv.Itoa(v), "-d", classes, src).CombinedOutput()
		require.NoError(t, err, "%s: %s", newer, out)
		t.Logf("newer class: compiled by %s --release %d", newer, v)
	} else {
		out, err := exec.Command(filepath.Join(javaHome, "bin", "javac"), "-d", classes, src).CombinedOutput()
		require.NoError(t, err, "javac: %s", out)
		b, err := os.ReadFile(class)
		require.NoError(t, err)
		binary.BigEndian.PutUint16(b[6:8], 69)
		require.NoError(t, os.WriteFile(class, b, 0o644))
		t.Logf("newer class: no JDK newer than %d here; compiled for %d and the major version patched to 69", host, host)
	}
	b, err := os.ReadFile(class)
	require.NoError(t, err)
	require.Greater(t, int(binary.BigEndian.Uint16(b[6:8])), host+44, "the class file is newer than the host JDK")
	jar := filepath.Join(dir, "newer-job.jar")
	out, err := exec.Command(filepath.Join(javaHome, "bin", "jar"), "--create", "--file", jar, "--main-class", "example.Newer", "-C", classes, ".").CombinedOutput()
	require.NoError(t, err, "jar: %s", out)
	return jar
}

var javaVersion = regexp.MustCompile(`version "(\d+)`)

func javaFeature(java string) int {
	out, err := exec.Command(java, "-version").CombinedOutput()
	if err != nil {
		return 0
	}
	m := javaVersion.FindSubmatch(out)
	if m == nil {
		return 0
	}
	v, _ := strconv.Atoi(string(m[1]))
	return v
}

// mavenShadedJob builds testdata/shadedjob with the real maven-shade-plugin: a
// job bundling flink-connector-kafka 3.2.0-1.18 and its kafka-clients.
func mavenShadedJob(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.CopyFS(dir, os.DirFS("testdata/shadedjob")))
	dist := realLib(t, "1.18.1")["flink-dist-1.18.1.jar"]
	cmd := exec.Command("mvn", "-B", "-q", "package", "-Dflink.dist="+dist)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mvn package (testdata/shadedjob): %s", out)
	jar := filepath.Join(dir, "target", "kafka-job-1.0.jar")
	_, err = os.Stat(jar)
	require.NoError(t, err)
	return jar
}

// The runtime dependencies each connector's POM declares
// (testdata/linkage-coordinates.txt) that its own release's lib does not
// already carry: flink-dist bundles lz4-java, snappy-java, commons-compress
// and commons-lang3 unrelocated (2.0.0 jackson too), and a second copy of
// them in lib would shadow flink-dist's, which a user following the
// connector's docs does not do.
var (
	kafka32Deps = []string{"kafka-clients-3.4.0.jar", "zstd-jni-1.5.2-1.jar",
		"jackson-core-2.15.2.jar", "jackson-databind-2.15.2.jar", "jackson-annotations-2.15.2.jar", "jackson-datatype-jdk8-2.15.2.jar",
		"jackson-datatype-jsr310-2.15.2.jar", "guava-32.1.2-jre.jar", "failureaccess-1.0.1.jar"}
	kafka40Deps = []string{"kafka-clients-3.9.0.jar", "zstd-jni-1.5.6-4.jar"}
	kafka50Deps = []string{"kafka-clients-4.2.0.jar", "zstd-jni-1.5.6-10.jar",
		"jackson-core-2.18.2.jar", "jackson-databind-2.18.2.jar", "jackson-annotations-2.18.2.jar", "jackson-datatype-jdk8-2.18.2.jar",
		"jackson-datatype-jsr310-2.18.2.jar"}
	avroDeps = []string{"avro-1.11.3.jar", "jackson-core-2.14.2.jar", "jackson-databind-2.14.2.jar", "jackson-annotations-2.14.2.jar"}
)

func with(first string, rest []string) []string { return append([]string{first}, rest...) }

func linkCases(t *testing.T, javaHome string) []linkCase {
	job := mavenShadedJob(t)
	newer := newerClassJob(t, javaHome)
	k32 := with("flink-connector-kafka-3.2.0-1.18.jar", kafka32Deps)
	k40 := with("flink-connector-kafka-4.0.0-2.0.jar", kafka40Deps)
	k50 := with("flink-connector-kafka-5.0.0-2.2.jar", kafka50Deps)
	avro := with("flink-avro-1.18.1.jar", avroDeps)
	own := func(s flinkSet) *flinkSet { return &s }
	return []linkCase{
		// consistent: each on its own release, with its POM's dependencies
		{name: "plain-2.2.0", host: flinkSet{flink: "2.2.0"}},
		{name: "plain-2.2.1", host: flinkSet{flink: "2.2.1"}},
		{name: "plain-1.18.1", host: flinkSet{flink: "1.18.1"}},
		{name: "kafka-3.2.0-1.18-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: k32}},
		{name: "kafka-4.0.0-2.0-on-2.0.0", host: flinkSet{flink: "2.0.0", lib: k40}},
		{name: "kafka-5.0.0-2.2-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: k50}},
		{name: "kafka-5.0.0-2.2-on-2.2.1", host: flinkSet{flink: "2.2.1", lib: k50}, own: own(flinkSet{flink: "2.2.0", lib: k50})},
		{name: "sql-kafka-5.0.0-2.2-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"flink-sql-connector-kafka-5.0.0-2.2.jar"}}},
		{name: "json-2.2.0-in-usrlib-on-2.2.0", host: flinkSet{flink: "2.2.0", usrlib: []string{"flink-json-2.2.0.jar"}}},
		{name: "avro-1.18.1-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: avro}},
		{name: "jdbc-3.2.0-1.18-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: []string{"flink-connector-jdbc-3.2.0-1.18.jar"}}},
		{name: "paimon-flink-1.18-0.8.2-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: []string{"paimon-flink-1.18-0.8.2.jar"}}},
		{name: "paimon-flink-2.0-1.1.1-on-2.0.0", host: flinkSet{flink: "2.0.0", lib: []string{"paimon-flink-2.0-1.1.1.jar"}}},
		{name: "iceberg-flink-runtime-1.18-1.5.2-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: []string{"iceberg-flink-runtime-1.18-1.5.2.jar"}}},
		{name: "shaded-job-on-1.18.1", host: flinkSet{flink: "1.18.1", usrlib: []string{job}}},

		// breaks: on the host, against the release the JARs were built for
		{name: "kafka-3.2.0-1.18-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: k32}, own: own(flinkSet{flink: "1.18.1", lib: k32}), issue: []string{
			"KafkaSourceFetcherManager\torg/apache/flink/connector/base/source/reader/fetcher/SingleThreadFetcherManager\t<init>\t(Lorg/apache/flink/connector/base/source/reader/synchronization/FutureCompletingBlockingQueue;Ljava/util/function/Supplier;Lorg/apache/flink/configuration/Configuration;Ljava/util/function/Consumer;)V",
			"org/apache/flink/api/connector/sink2/TwoPhaseCommittingSink\t",
			"sink/KafkaSink\t", "table/ReducingUpsertSink\t",
			"DataTypeUtils\tstripRowPrefix\t(Lorg/apache/flink/table/types/DataType;Ljava/lang/String;)",
			"TypeInformation\tcreateSerializer\t(Lorg/apache/flink/api/common/ExecutionConfig;)",
			"org/apache/flink/configuration/Configuration\tsetString\t(Lorg/apache/flink/configuration/ConfigOption;Ljava/lang/String;)V",
			"SingleThreadMultiplexSourceReaderBase\t<init>\t(Lorg/apache/flink/connector/base/source/reader/synchronization/FutureCompletingBlockingQueue;",
		}},
		{name: "kafka-4.0.0-2.0-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: k40}, own: own(flinkSet{flink: "2.0.0", lib: k40}), issue: []string{"DataTypeUtils\tstripRowPrefix\t"}},
		{name: "kafka-5.0.0-2.2-on-1.18.1", host: flinkSet{flink: "1.18.1", lib: k50}, own: own(flinkSet{flink: "2.2.0", lib: k50}), issue: []string{"FactoryUtil\tSOURCE_PARALLELISM\t"}},
		{name: "thin-kafka-5.0.0-2.2-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"flink-connector-kafka-5.0.0-2.2.jar"}}, own: own(flinkSet{flink: "2.2.0", lib: k50}), issue: []string{"\torg/apache/kafka/clients/"}},
		{name: "json-1.18.1-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"flink-json-1.18.1.jar"}}, own: own(flinkSet{flink: "1.18.1", lib: []string{"flink-json-1.18.1.jar"}}), issue: []string{"shadow\torg/apache/flink/formats/json/"}},
		{name: "json-1.18.1-in-usrlib-on-2.2.0", host: flinkSet{flink: "2.2.0", usrlib: []string{"flink-json-1.18.1.jar"}}, own: own(flinkSet{flink: "1.18.1", usrlib: []string{"flink-json-1.18.1.jar"}}), issue: []string{"shadow\torg/apache/flink/formats/json/"}},
		{name: "avro-1.18.1-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: avro}, own: own(flinkSet{flink: "1.18.1", lib: avro}), issue: []string{"TypeInformationRawType"}},
		{name: "jdbc-3.2.0-1.18-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"flink-connector-jdbc-3.2.0-1.18.jar"}}, own: own(flinkSet{flink: "1.18.1", lib: []string{"flink-connector-jdbc-3.2.0-1.18.jar"}}), issue: []string{"/RichSinkFunction\t", "CatalogTable\tof\t"}},
		{name: "paimon-flink-1.18-0.8.2-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"paimon-flink-1.18-0.8.2.jar"}}, own: own(flinkSet{flink: "1.18.1", lib: []string{"paimon-flink-1.18-0.8.2.jar"}}), issue: []string{"paimon"}},
		{name: "iceberg-flink-runtime-1.18-1.5.2-on-2.2.0", host: flinkSet{flink: "2.2.0", lib: []string{"iceberg-flink-runtime-1.18-1.5.2.jar"}}, own: own(flinkSet{flink: "1.18.1", lib: []string{"iceberg-flink-runtime-1.18-1.5.2.jar"}}), issue: []string{"iceberg"}},
		{name: "shaded-job-on-2.2.0", host: flinkSet{flink: "2.2.0", usrlib: []string{job}}, own: own(flinkSet{flink: "1.18.1", usrlib: []string{job}}), issue: []string{
			"SingleThreadFetcherManager\t<init>\t", "DataTypeUtils\tstripRowPrefix\t",
		}},
		{name: "newer-class-on-2.2.0", host: flinkSet{flink: "2.2.0", usrlib: []string{newer}}, own: own(flinkSet{flink: "2.2.0"}), issue: []string{"version\texample/Newer\tnewer-job.jar"}},
	}
}

// TestLinkageAgainstTheJVM is the test of record. On every set the JVM
// oracle runs first and is held to what the issue recorded with javap (on a
// consistent set it prints what fails on the JARs' own release too: the
// optional paths the project must keep quiet about). Then the project's
// linkage findings must be the oracle's host-only failures, each confirmed
// unresolvable by the JVM, and none at all on a consistent set. Without the
// linkage engine in the build the oracle still runs on every set and the
// test fails at the end, saying so.
func TestLinkageAgainstTheJVM(t *testing.T) {
	k := newOracleKit(t)
	engine := k.hasEngine(t)
	for _, c := range linkCases(t, k.javaHome) {
		t.Run(c.name, func(t *testing.T) {
			var fs []linkFinding
			if engine {
				fs = k.check(t, c.host)
			}
			var syms []linkSymbol
			ours := map[string]string{}
			for _, f := range fs {
				for _, s := range f.Symbol.perClass() {
					syms = append(syms, s)
					ours[s.key()] = f.Rule + " " + f.Severity + ": " + f.Message
				}
			}
			r := k.oracle(t, c.host, c.own, syms)
			t.Logf("oracle: %s", strings.Join(r.stats, "; "))
			want := r.hostOnly
			if c.own == nil {
				want = map[string]string{} // consistent: no finding at all
				logFailures(t, "consistent set; failing on the JARs' own release too (not breaks)", r.host)
				for key := range r.host {
					require.False(t, strings.HasPrefix(key, "shadow\t"), "a consistent set shadows nothing: the corpus is wrong (%s)", key)
				}
			} else {
				logFailures(t, "host-only (breaks)", r.hostOnly)
			}
			for _, w := range c.issue {
				require.True(t, slices.ContainsFunc(keys(r.hostOnly), func(k string) bool { return strings.Contains(k, w) }),
					"the oracle must find what the issue recorded (%q) among the host-only failures", w)
			}
			if !engine {
				return
			}
			t.Logf("project: %d linkage findings", len(fs))
			for _, s := range syms {
				got := r.checks[s.key()]
				require.True(t, strings.HasPrefix(got, "unresolved"), "the project reports %s, the JVM resolves it (%s)", strings.ReplaceAll(s.key(), "\t", " "), got)
			}
			var onlyOurs, onlyJVM []string
			for key, v := range ours {
				if _, ok := want[key]; !ok {
					onlyOurs = append(onlyOurs, strings.ReplaceAll(key, "\t", " ")+" ("+v+")")
				}
			}
			for key, v := range want {
				if _, ok := ours[key]; !ok {
					onlyJVM = append(onlyJVM, strings.ReplaceAll(key, "\t", " ")+" ("+v+")")
				}
			}
			slices.Sort(onlyOurs)
			slices.Sort(onlyJVM)
			require.True(t, len(onlyOurs) == 0 && len(onlyJVM) == 0,
				"the project and the JVM disagree on %s:\nreported by the project only (%d):\n  %s\nfailing on the host only, per the JVM, not reported (%d):\n  %s",
				c.name, len(onlyOurs), strings.Join(onlyOurs, "\n  "), len(onlyJVM), strings.Join(onlyJVM, "\n  "))
		})
	}
	require.True(t, engine, "the linkage engine (issue 19) is not in this build: `streamfusion rules` lists none of %v, so `check --json` reports no symbol to compare with the JVM oracle (the oracle ran on every set above)", keys(map[string]string{"linkage-class": "", "linkage-method": "", "linkage-field": "", "bytecode-version": "", "classpath-shadowed": ""}))
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// logFailures prints a count by kind and the first 20 of each kind.
func logFailures(t *testing.T, what string, m map[string]string) {
	t.Helper()
	byKind := map[string][]string{}
	for _, k := range keys(m) {
		kind, _, _ := strings.Cut(k, "\t")
		byKind[kind] = append(byKind[kind], strings.ReplaceAll(k, "\t", " "))
	}
	var counts []string
	for _, kind := range []string{"class", "method", "field", "version", "shadow"} {
		if n := len(byKind[kind]); n > 0 {
			counts = append(counts, fmt.Sprintf("%s %d", kind, n))
		}
	}
	distinct := map[string]bool{} // the missing symbol, whoever references it
	for k := range m {
		f := strings.Split(k, "\t")
		if len(f) >= 5 {
			distinct[strings.Join([]string{f[0], f[2], f[3], f[4]}, " ")] = true
		} else {
			distinct[k] = true
		}
	}
	t.Logf("%s: %d (%s); %d distinct missing symbols", what, len(m), strings.Join(counts, ", "), len(distinct))
	for _, kind := range []string{"class", "method", "field", "version", "shadow"} {
		for i, s := range byKind[kind] {
			if i == 20 {
				t.Logf("  ... %d more %s", len(byKind[kind])-20, kind)
				break
			}
			t.Logf("  %s", s)
		}
	}
}

// TestLinkageOracleChecks holds the oracle's answer to reported symbols
// (the path the project's findings go through) to both outcomes: what it
// finds failing on the host only, handed back as reported symbols, is
// unresolved on the host and resolved on the JARs' own release.
func TestLinkageOracleChecks(t *testing.T) {
	k := newOracleKit(t)
	for _, c := range []struct {
		name      string
		host, own flinkSet
	}{
		{"kafka-3.2.0-1.18", flinkSet{flink: "2.2.0", lib: with("flink-connector-kafka-3.2.0-1.18.jar", kafka32Deps)}, flinkSet{flink: "1.18.1", lib: with("flink-connector-kafka-3.2.0-1.18.jar", kafka32Deps)}},
		{"kafka-5.0.0-2.2", flinkSet{flink: "1.18.1", lib: with("flink-connector-kafka-5.0.0-2.2.jar", kafka50Deps)}, flinkSet{flink: "2.2.0", lib: with("flink-connector-kafka-5.0.0-2.2.jar", kafka50Deps)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := k.oracle(t, c.host, &c.own, nil)
			require.NotEmpty(t, r.hostOnly)
			var syms []linkSymbol
			for key := range r.hostOnly {
				f := strings.Split(key, "\t")
				if f[0] == "shadow" || f[0] == "version" {
					continue
				}
				syms = append(syms, linkSymbol{Kind: f[0], From: f[1], Owner: f[2], Name: f[3], Descriptor: f[4], Jar: f[5]})
			}
			require.NotEmpty(t, syms)
			onHost := k.oracle(t, c.host, nil, syms)
			onOwn := k.oracle(t, c.own, nil, syms)
			for _, s := range syms {
				assert.True(t, strings.HasPrefix(onHost.checks[s.key()], "unresolved"), "on the host: %s: %s", s.key(), onHost.checks[s.key()])
				assert.Equal(t, "resolved", onOwn.checks[s.key()], "on the own release: %s", s.key())
			}
			t.Logf("%d symbols: unresolved on %s, resolved on %s", len(syms), c.host.flink, c.own.flink)
		})
	}
}
