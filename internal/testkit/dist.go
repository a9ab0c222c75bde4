package testkit

import (
	"cmp"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing/fstest"
)

// Paths of an image root, as the official Flink images lay them out.
const (
	FlinkHome = "opt/flink"
	LibDir    = FlinkHome + "/lib"
	JavaHome  = "opt/java/openjdk"
	GlibcLD   = "lib64/ld-linux-x86-64.so.2"
)

// Placed is a payload installed in lib under a file name (which may hold a
// subdirectory, or be a rename).
type Placed struct {
	Name    string
	Payload Payload
}

// Dist describes an image root: a Flink distribution, a JDK and the
// StreamFusion payloads installed into its lib.
type Dist struct {
	Flink   string // Flink version, e.g. 2.2.1
	Scala   string // default 2.12
	JDK     string // JAVA_VERSION of the release file, default 17.0.15
	Planner string // "loader" (default), "scala", "both" or "none"
	NoDist  bool   // leave flink-dist out

	Payloads []Placed
	Files    map[string][]byte // more files, by path below the root
}

// StreamFusion returns the usual payload set for a line and release: the
// loader (with its embedded core), the runtime core, and the kafka and json
// extensions, under their Maven file names.
func StreamFusion(line, version string) []Placed {
	var out []Placed
	for _, p := range []Payload{Loader(line, version), Core(line, version),
		Extension("kafka", line, version), Extension("json", line, version)} {
		out = append(out, Placed{Name: p.FileName(), Payload: p})
	}
	return out
}

// LineOf returns the major.minor line of a Flink version.
func LineOf(flink string) string {
	parts := strings.SplitN(flink, ".", 3)
	if len(parts) < 2 {
		return flink
	}
	return parts[0] + "." + parts[1]
}

// Good returns a compatible image root for a Flink version with the usual
// StreamFusion set at release 0.1.0.
func Good(flink string) Dist {
	return Dist{Flink: flink, Payloads: StreamFusion(LineOf(flink), "0.1.0")}
}

// With returns a copy of d with more payloads placed.
func (d Dist) With(p ...Placed) Dist {
	d.Payloads = append(append([]Placed(nil), d.Payloads...), p...)
	return d
}

// Without returns a copy of d without the payloads of the given modules.
func (d Dist) Without(modules ...string) Dist {
	var kept []Placed
	for _, p := range d.Payloads {
		drop := false
		for _, m := range modules {
			drop = drop || p.Payload.Module == m
		}
		if !drop {
			kept = append(kept, p)
		}
	}
	d.Payloads = kept
	return d
}

// Replace returns a copy of d where the payload of module is p (under its
// old file name).
func (d Dist) Replace(module string, p Payload) Dist {
	d.Payloads = append([]Placed(nil), d.Payloads...)
	for i := range d.Payloads {
		if d.Payloads[i].Payload.Module == module {
			d.Payloads[i].Payload = p
		}
	}
	return d
}

// Tree returns every file of the root, by path below it.
func (d Dist) Tree() map[string][]byte {
	v := d.Flink
	scala := cmp.Or(d.Scala, "2.12")
	log4j := "2.24.3"
	if strings.HasPrefix(v, "1.") {
		log4j = "2.17.1"
	}
	t := map[string][]byte{}
	lib := func(name string, data []byte) { t[LibDir+"/"+name] = data }
	if !d.NoDist {
		lib("flink-dist-"+v+".jar", JAR(flinkManifest("flink-dist", v),
			Entry{Name: ".flink-runtime.version.properties", Data: []byte(fmt.Sprintf(
				"git.commit.id.abbrev=0a1b2c3\ngit.commit.time=2025-11-20T10:00:00+0000\nproject.version=%s\nscala.binary.version=%s\n", v, scala))},
			Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: classBytes("flink-dist")},
			Entry{Name: "org/slf4j/LoggerFactory.class", Data: classBytes("slf4j-api")})) // flink-dist bundles SLF4J 1.7's API
	}
	planner := cmp.Or(d.Planner, "loader")
	if planner == "loader" || planner == "both" {
		nested := JAR(flinkManifest("flink-table-planner", v),
			Entry{Name: "org/apache/flink/table/planner/delegation/PlannerBase.class", Data: classBytes("planner")})
		lib("flink-table-planner-loader-"+v+".jar", JAR(flinkManifest("flink-table-planner-loader", v),
			Entry{Name: "org/apache/flink/table/planner/loader/PlannerModule.class", Data: classBytes("loader")},
			Entry{Name: "flink-table-planner.jar", Data: nested}))
	}
	if planner == "scala" || planner == "both" {
		lib("flink-table-planner_"+scala+"-"+v+".jar", JAR(flinkManifest("flink-table-planner_"+scala, v),
			Entry{Name: "org/apache/flink/table/planner/delegation/PlannerBase.class", Data: classBytes("planner")}))
	}
	for _, name := range []string{"flink-cep", "flink-connector-files", "flink-csv", "flink-json", "flink-table-api-java-uber", "flink-table-runtime"} {
		lib(name+"-"+v+".jar", JAR(flinkManifest(name, v),
			Entry{Name: "org/apache/flink/" + strings.ReplaceAll(strings.TrimPrefix(name, "flink-"), "-", "/") + "/Marker.class", Data: classBytes(name)}))
	}
	if strings.HasPrefix(v, "1.") {
		lib("flink-scala_"+scala+"-"+v+".jar", JAR(flinkManifest("flink-scala_"+scala, v),
			Entry{Name: "org/apache/flink/api/scala/ExecutionEnvironment.class", Data: classBytes("scala")}))
	}
	for _, name := range []string{"log4j-1.2-api", "log4j-api", "log4j-core", "log4j-slf4j-impl"} {
		entries := []Entry{{Name: "org/apache/logging/log4j/" + strings.TrimPrefix(name, "log4j-") + "/Marker.class", Data: classBytes(name)}}
		if name == "log4j-slf4j-impl" { // Log4j's SLF4J binding, as the real JAR holds it
			entries = append(entries, Entry{Name: "org/apache/logging/slf4j/Log4jLoggerFactory.class", Data: classBytes("Log4jLoggerFactory")},
				Entry{Name: "org/slf4j/impl/StaticLoggerBinder.class", Data: classBytes("StaticLoggerBinder")})
		}
		lib(name+"-"+log4j+".jar", JAR(Manifest("Implementation-Title", name, "Implementation-Version", log4j), entries...))
	}
	for _, p := range d.Payloads {
		lib(p.Name, p.Payload.Bytes())
	}
	t[JavaHome+"/release"] = []byte(fmt.Sprintf("IMPLEMENTOR=\"Eclipse Adoptium\"\nJAVA_VERSION=\"%s\"\nJAVA_VERSION_DATE=\"2025-04-15\"\n", cmp.Or(d.JDK, "17.0.15")))
	t[JavaHome+"/bin/java"] = []byte("#!/bin/sh\necho 'test double of java' >&2\nexit 1\n")
	t[GlibcLD] = []byte("\x7fELF test double of the glibc loader\n")
	confName := "config.yaml" // 1.18 and earlier read only flink-conf.yaml
	if minor, err := strconv.Atoi(strings.TrimPrefix(LineOf(d.Flink), "1.")); err == nil && strings.HasPrefix(d.Flink, "1.") && minor <= 18 {
		confName = "flink-conf.yaml"
	}
	t[FlinkHome+"/conf/"+confName] = []byte("jobmanager.rpc.address: localhost\n")
	for name, data := range d.Files {
		t[name] = data
	}
	return t
}

func flinkManifest(title, version string) string {
	return Manifest("Implementation-Title", title, "Implementation-Version", version,
		"Implementation-Vendor", "The Apache Software Foundation", "Build-Jdk-Spec", "11")
}

// Write writes the root below dir. Files under bin/ directories are
// executable.
func (d Dist) Write(dir string) error {
	t := d.Tree()
	names := make([]string, 0, len(t))
	for name := range t {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			return err
		}
		mode := fs.FileMode(0o644)
		if strings.Contains(name, "/bin/") {
			mode = 0o755
		}
		if err := os.WriteFile(p, t[name], mode); err != nil {
			return err
		}
	}
	return nil
}

// MapFS returns the root as an in-memory file system.
func (d Dist) MapFS() fstest.MapFS {
	m := fstest.MapFS{}
	for name, data := range d.Tree() {
		mode := fs.FileMode(0o644)
		if strings.Contains(name, "/bin/") {
			mode = 0o755
		}
		m[name] = &fstest.MapFile{Data: data, Mode: mode}
	}
	return m
}
