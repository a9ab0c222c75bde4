//go:build jvmoracle

package payload_test

// The differential corpus: JARs written at test time by real writers (the
// JDK's jar tool, Maven's jar, shade and assembly plugins, Info-ZIP, bsdtar,
// 7-Zip, Python's zipfile, Go's archive/zip) and by corrupters in the
// standard library's messWith style, each read by the JVM (JarFile and
// JarInputStream, through testdata/oracle/JarOracle.java) and by this
// package, as a lib JAR and as a core nested in a loader, stored and
// deflated. Any difference fails, except the one the contract accepts:
// damage after a deflated nested core's manifest. Run with `make test-jvm`.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// coreManifest is the StreamFusion core manifest every corpus JAR carries.
const coreManifest = "Manifest-Version: 1.0\r\n" +
	"StreamFusion-Payload: core\r\n" +
	"StreamFusion-Module: streamfusion-core\r\n" +
	"StreamFusion-Artifact: tech.streamfusion:streamfusion-core\r\n" +
	"StreamFusion-Version: 0.1.0\r\n" +
	"StreamFusion-Flink-Line: 2.2\r\n" +
	"StreamFusion-Java-Release: 11\r\n\r\n"

// otherManifest differs from coreManifest in its version: where a reader
// sees it instead, the identities differ.
var otherManifest = strings.Replace(coreManifest, "0.1.0", "9.9.9", 1)

var (
	classData  = append([]byte{0xca, 0xfe, 0xba, 0xbe, 0, 0, 0, 55}, bytes.Repeat([]byte("streamfusion-core"), 16)...)
	nativeData = append([]byte{0x7f, 'E', 'L', 'F'}, bytes.Repeat([]byte("streamfusion native stand-in"), 8)...)
)

// corpusCase is one archive of the corpus and where it comes from.
type corpusCase struct {
	Name   string
	Origin string
	Data   []byte
}

// tools the corpus needs; in CI a missing one fails the test.
var corpusTools = []string{"javac", "java", "jar", "mvn", "zip", "bsdtar", "7z", "python3"}

func requireTools(t *testing.T) {
	var missing []string
	for _, tool := range corpusTools {
		if _, err := exec.LookPath(tool); err != nil {
			missing = append(missing, tool)
		}
	}
	if len(missing) == 0 {
		return
	}
	msg := fmt.Sprintf("the JVM corpus needs %s on PATH (.ci/run installs them)", strings.Join(missing, ", "))
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func run(t *testing.T, dir string, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s%s", name, strings.Join(args, " "), err, out, stderr.Bytes())
	}
	return out
}

func writeFile(t *testing.T, name string, data []byte) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(name), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(name, data, 0o644); err != nil {
		t.Fatal(err)
	}
}

func readFile(t *testing.T, name string) []byte {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return data
}

// stage writes the tree the tool writers archive: full/ holds the manifest
// and the content, content/ the content only (for the jar tool, which
// takes the manifest apart).
func stage(t *testing.T, dir string) (full, content, manifest string) {
	full, content = filepath.Join(dir, "full"), filepath.Join(dir, "content")
	for _, root := range []string{full, content} {
		writeFile(t, filepath.Join(root, "tech/streamfusion/X.class"), classData)
		writeFile(t, filepath.Join(root, "tech/streamfusion/empty.txt"), nil)
		writeFile(t, filepath.Join(root, "META-INF/streamfusion/libstreamfusion_core.so"), nativeData)
	}
	manifest = filepath.Join(full, "META-INF/MANIFEST.MF")
	writeFile(t, manifest, []byte(coreManifest))
	return full, content, manifest
}

// toolCases writes the corpus archives that come from external writers.
func toolCases(t *testing.T, dir string) []corpusCase {
	full, content, manifest := stage(t, dir)
	out := filepath.Join(dir, "out")
	if err := os.MkdirAll(out, 0o755); err != nil {
		t.Fatal(err)
	}
	var cases []corpusCase
	add := func(name, origin, file string) {
		cases = append(cases, corpusCase{Name: name, Origin: origin, Data: readFile(t, file)})
	}
	o := func(name string) string { return filepath.Join(out, name+".jar") }

	// The JDK's jar tool.
	run(t, dir, "jar", "--create", "--file", o("jdk-jar"), "--manifest", manifest, "-C", content, ".")
	add("jdk-jar", "jar --create --manifest (deflated)", o("jdk-jar"))
	run(t, dir, "jar", "--create", "--no-compress", "--file", o("jdk-jar-stored"), "--manifest", manifest, "-C", content, ".")
	add("jdk-jar-stored", "jar --create --no-compress", o("jdk-jar-stored"))

	// Maven: maven-jar-plugin, maven-shade-plugin, maven-assembly-plugin.
	mvnDir := filepath.Join(dir, "maven")
	os.RemoveAll(mvnDir)
	run(t, ".", "cp", "-r", "testdata/oracle/maven", mvnDir)
	run(t, mvnDir, "mvn", "-B", "-q", "package")
	add("maven-jar", "maven-jar-plugin", filepath.Join(mvnDir, "target/corpus-core-0.1.0.jar"))
	add("maven-shade", "maven-shade-plugin (ManifestResourceTransformer)", filepath.Join(mvnDir, "target/corpus-core-0.1.0-shaded.jar"))
	add("maven-assembly", "maven-assembly-plugin (jar-with-dependencies)", filepath.Join(mvnDir, "target/corpus-core-0.1.0-jar-with-dependencies.jar"))

	// Info-ZIP zip: manifest first, then the rest; -D leaves out directory
	// entries; -0 stores.
	run(t, full, "zip", "-q", "-X", o("infozip"), "META-INF/", "META-INF/MANIFEST.MF")
	run(t, full, "zip", "-q", "-X", "-r", o("infozip"), "tech", "META-INF/streamfusion")
	add("infozip", "zip -r (directory entries, META-INF/ first)", o("infozip"))
	run(t, full, "zip", "-q", "-X", "-D", o("infozip-D"), "META-INF/MANIFEST.MF")
	run(t, full, "zip", "-q", "-X", "-D", "-r", o("infozip-D"), "tech", "META-INF/streamfusion")
	add("infozip-D", "zip -r -D (no directory entries)", o("infozip-D"))
	run(t, full, "zip", "-q", "-X", "-0", o("infozip-stored"), "META-INF/", "META-INF/MANIFEST.MF")
	run(t, full, "zip", "-q", "-X", "-0", "-r", o("infozip-stored"), "tech", "META-INF/streamfusion")
	add("infozip-stored", "zip -0 -r (stored)", o("infozip-stored"))
	run(t, full, "zip", "-q", "-X", "-r", o("infozip-manifest-late"), "tech", "META-INF/streamfusion", "META-INF/MANIFEST.MF")
	add("infozip-manifest-late", "zip -r with the manifest after the classes", o("infozip-manifest-late"))
	// An archive comment written by zip -z.
	run(t, dir, "cp", o("infozip"), o("infozip-comment"))
	cmd := exec.Command("zip", "-q", "-z", o("infozip-comment"))
	cmd.Stdin = strings.NewReader("built by the corpus\n")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("zip -z: %v\n%s", err, b)
	}
	add("infozip-comment", "zip -z (archive comment)", o("infozip-comment"))
	// A launch script prepended, offsets then adjusted by zip -A.
	writeFile(t, o("infozip-prepend-A"), append([]byte(launchScript), readFile(t, o("infozip"))...))
	run(t, dir, "zip", "-q", "-A", o("infozip-prepend-A"))
	add("infozip-prepend-A", "launch script prepended, offsets adjusted by zip -A", o("infozip-prepend-A"))

	// libarchive's bsdtar.
	run(t, full, "bsdtar", "--format", "zip", "-cf", o("bsdtar"), "META-INF/MANIFEST.MF", "tech", "META-INF/streamfusion")
	add("bsdtar", "bsdtar --format zip (deflated, data descriptors)", o("bsdtar"))
	run(t, full, "bsdtar", "--format", "zip", "--options", "zip:compression=store", "-cf", o("bsdtar-stored"), "META-INF/MANIFEST.MF", "tech", "META-INF/streamfusion")
	add("bsdtar-stored", "bsdtar --format zip --options zip:compression=store", o("bsdtar-stored"))
	run(t, full, "bsdtar", "--format", "zip", "--options", "zip:zip64", "-cf", o("bsdtar-zip64"), "META-INF/MANIFEST.MF", "tech", "META-INF/streamfusion")
	add("bsdtar-zip64", "bsdtar --format zip --options zip:zip64 (ZIP64 extra fields)", o("bsdtar-zip64"))

	// 7-Zip.
	run(t, full, "7z", "a", "-tzip", "-bd", "-bso0", o("7z"), "META-INF/MANIFEST.MF", "tech", "META-INF/streamfusion")
	add("7z", "7z a -tzip", o("7z"))
	run(t, full, "7z", "a", "-tzip", "-mx0", "-bd", "-bso0", o("7z-stored"), "META-INF/MANIFEST.MF", "tech", "META-INF/streamfusion")
	add("7z-stored", "7z a -tzip -mx0 (stored)", o("7z-stored"))

	// Python's zipfile.
	for _, mode := range []string{"deflated-dirs", "stored", "entries-65535"} {
		run(t, ".", "python3", "testdata/oracle/pyzip.py", mode, o("python-"+mode), manifest)
		add("python-"+mode, "python3 zipfile ("+mode+")", o("python-"+mode))
	}
	return cases
}

// launchScript is what a Spring Boot executable JAR carries in front.
const launchScript = "#!/bin/bash\n# a launch script in front of the archive\nexec java -jar \"$0\" \"$@\"\n"

// runOracle compiles JarOracle.java and runs it once over every file.
func runOracle(t *testing.T, dir string, files []oracleInput) map[string]oracleResult {
	classes := filepath.Join(dir, "oracle-classes")
	run(t, ".", "javac", "-d", classes, "testdata/oracle/JarOracle.java")
	var in bytes.Buffer
	for _, f := range files {
		fmt.Fprintf(&in, "%s %s\n", f.kind, f.path)
	}
	cmd := exec.Command("java", "-cp", classes, "JarOracle")
	cmd.Stdin = &in
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("JarOracle: %v\n%s", err, stderr.Bytes())
	}
	writeFile(t, filepath.Join(dir, "oracle.jsonl"), out)
	results := map[string]oracleResult{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var r oracleResult
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("JarOracle printed %q: %v", sc.Text(), err)
		}
		results[r.Path] = r
	}
	if len(results) != len(files) {
		t.Fatalf("JarOracle answered for %d files of %d\n%s", len(results), len(files), stderr.Bytes())
	}
	return results
}

type oracleInput struct{ kind, path string }

// reading is what one JVM reader made of an archive.
type reading struct {
	OK       bool              `json:"ok"`
	Err      string            `json:"err"`
	Entries  int               `json:"entries"`
	Manifest map[string]string `json:"manifest"`
	Walk     *string           `json:"walk"`
}

type oracleResult struct {
	Kind    string  `json:"kind"`
	Path    string  `json:"path"`
	JarFile reading `json:"jarfile"`
	JIS     reading `json:"jis"`
	Core    *string `json:"core"`
	Nested  *struct {
		Err     string  `json:"err"`
		JarFile reading `json:"jarfile"`
		JIS     reading `json:"jis"`
	} `json:"nested"`
}

// diffManifest says how got differs from want, attribute by attribute.
func diffManifest(want, got map[string]string) string {
	switch {
	case want == nil && got == nil:
		return "both without a manifest"
	case want == nil:
		return "want no manifest, got one"
	case got == nil:
		return "want a manifest, got none"
	}
	var d []string
	for k, v := range want {
		if w, ok := got[k]; !ok {
			d = append(d, fmt.Sprintf("%s: missing (want %q)", k, v))
		} else if w != v {
			d = append(d, fmt.Sprintf("%s: %q, want %q", k, w, v))
		}
	}
	for k, v := range got {
		if _, ok := want[k]; !ok {
			d = append(d, fmt.Sprintf("%s: %q not in the JVM's", k, v))
		}
	}
	sort.Strings(d)
	return strings.Join(d, "; ")
}

func (r reading) String() string {
	switch {
	case !r.OK:
		return "fails: " + r.Err
	case r.Manifest == nil:
		return "no manifest"
	default:
		return "version " + normal(r.Manifest)["streamfusion-version"]
	}
}

func oursString(j *payload.JAR) string {
	switch {
	case j == nil:
		return "no nested JAR"
	case j.Err != nil:
		return "refuses: " + j.Err.Error()
	case j.Manifest == nil:
		return "admits, no manifest"
	default:
		v, _ := j.Manifest.Get("StreamFusion-Version")
		return "admits, version " + v
	}
}

func TestJVMOracleCorpus(t *testing.T) {
	requireTools(t)
	dir := t.TempDir()
	if keep := os.Getenv("STREAMFUSION_JVM_CORPUS"); keep != "" {
		// Keep the corpus and the oracle's answers for a closer look.
		dir = keep
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cases := toolCases(t, dir)
	cases = append(cases, goCases(t)...)
	cases = append(cases, corruptCases(t, cases)...)

	seen := map[string]bool{}
	var inputs []oracleInput
	for _, c := range cases {
		if seen[c.Name] {
			t.Fatalf("two corpus cases named %s", c.Name)
		}
		seen[c.Name] = true
		lib := filepath.Join(dir, "lib", c.Name+".jar")
		writeFile(t, lib, c.Data)
		inputs = append(inputs, oracleInput{"lib", lib})
		for _, form := range []string{"stored", "deflated"} {
			p := filepath.Join(dir, "loader-"+form, c.Name+".jar")
			writeFile(t, p, loaderBytes(c.Data, form == "stored"))
			inputs = append(inputs, oracleInput{"loader", p})
		}
	}
	jvm := runOracle(t, dir, inputs)

	var table []string
	var accepted []string
	for _, c := range cases {
		t.Run(c.Name, func(t *testing.T) {
			t.Logf("origin: %s (%d bytes)", c.Origin, len(c.Data))
			lib := jvm[filepath.Join(dir, "lib", c.Name+".jar")]
			j := payload.Read(bytes.NewReader(c.Data), int64(len(c.Data)), "/opt/flink/lib/"+c.Name+".jar", payload.Options{})
			row := fmt.Sprintf("%-28s | JarFile %-40.40s | JIS %-40.40s | ours %s", c.Name, lib.JarFile, lib.JIS, oursString(j))

			t.Run("lib", func(t *testing.T) {
				jvmReads := lib.JarFile.OK
				if (j.Err == nil) != jvmReads {
					t.Errorf("JarFile %s; ours %s", lib.JarFile, oursString(j))
					return
				}
				if !jvmReads {
					return
				}
				if want, got := normal(lib.JarFile.Manifest), attrs(j.Manifest); !equalAttrs(want, got) {
					t.Errorf("manifest differs from JarFile's: %s", diffManifest(want, got))
				}
				if j.Entries != lib.JarFile.Entries {
					t.Errorf("entries: JarFile counts %d; ours %d", lib.JarFile.Entries, j.Entries)
				}
			})

			verdicts := map[string]bool{}
			acceptedDiff := false
			for _, form := range []string{"stored", "deflated"} {
				t.Run("nested-"+form, func(t *testing.T) {
					data := loaderBytes(c.Data, form == "stored")
					lj := payload.Read(bytes.NewReader(data), int64(len(data)), "/opt/flink/lib/loader.jar", payload.Options{})
					r := jvm[filepath.Join(dir, "loader-"+form, c.Name+".jar")]
					if !r.JarFile.OK || r.Nested == nil || r.Nested.Err != "" {
						t.Fatalf("the JVM cannot read the loader itself: %s %+v", r.JarFile, r.Nested)
					}
					if lj.Err != nil || lj.Nested == nil {
						t.Fatalf("ours cannot read the loader itself: %s", oursString(lj))
					}
					if want, got := normal(r.JarFile.Manifest), attrs(lj.Manifest); !equalAttrs(want, got) {
						t.Errorf("loader manifest differs from JarFile's: %s", diffManifest(want, got))
					}
					n := r.Nested
					jf, jis := normal(n.JarFile.Manifest), normal(n.JIS.Manifest)
					jvmAdmits := n.JarFile.OK && n.JIS.OK && equalAttrs(jf, jis)
					oursAdmits := lj.Nested.Err == nil
					verdicts[form] = oursAdmits
					row += fmt.Sprintf(" | nested-%s: JarFile %s; JIS %s; ours %s", form, n.JarFile, n.JIS, oursString(lj.Nested))
					got := attrs(lj.Nested.Manifest)
					switch {
					case oursAdmits && jvmAdmits:
						if !equalAttrs(jf, got) {
							t.Errorf("manifest differs from both JVM readings: %s", diffManifest(jf, got))
						}
					case !oursAdmits && !jvmAdmits:
					case oursAdmits && form == "deflated" && n.JIS.OK && jis != nil && equalAttrs(jis, got):
						// The accepted difference: the streamed manifest is
						// right, the damage lies after it.
						acceptedDiff = true
						t.Logf("accepted difference: JarInputStream reads the manifest; JarFile %s", n.JarFile)
					case oursAdmits:
						t.Errorf("ours %s, but the JVM would refuse: JarFile %s; JarInputStream %s", oursString(lj.Nested), n.JarFile, n.JIS)
					default:
						t.Errorf("ours refuses (%v), but both JVM readings agree: JarFile %s; JarInputStream %s", lj.Nested.Err, n.JarFile, n.JIS)
					}
				})
			}
			t.Run("stored-vs-deflated", func(t *testing.T) {
				if len(verdicts) != 2 {
					t.Skip("a nested reading failed above")
				}
				if verdicts["stored"] != verdicts["deflated"] && !acceptedDiff {
					t.Errorf("verdicts differ: stored admits=%v, deflated admits=%v", verdicts["stored"], verdicts["deflated"])
				}
			})
			if acceptedDiff {
				accepted = append(accepted, c.Name)
			}
			table = append(table, row)
		})
	}
	sort.Strings(table)
	t.Logf("summary (%d cases):\n%s", len(table), strings.Join(table, "\n"))
	t.Logf("accepted differences (damage after a deflated nested core's manifest): %d %v", len(accepted), accepted)
}
