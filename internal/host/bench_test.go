package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// realisticRoot writes (once per process) the benchmark lib of testkit.Realistic.
func realisticRoot(b *testing.B) string {
	b.Helper()
	root := filepath.Join(os.TempDir(), "streamfusion-bench", "scale1")
	lib := filepath.Join(root, "opt/flink/lib")
	if _, err := os.Stat(filepath.Join(lib, "flink-dist-2.2.1.jar")); err != nil {
		if err := testkit.Realistic(lib, 1); err != nil {
			b.Fatal(err)
		}
	}
	return root
}

func BenchmarkGatherRealistic(b *testing.B) {
	root := realisticRoot(b)
	s := Settings{LibDir: root + "/opt/flink/lib", OS: "linux", Arch: "x86_64"}
	fsys := os.DirFS("/")
	for b.Loop() {
		f, err := Gather(context.Background(), fsys, s, nil)
		if err != nil || len(f.Classpath) != 24 {
			b.Fatal(err, len(f.Classpath))
		}
	}
}

func BenchmarkDecideRealistic(b *testing.B) {
	root := realisticRoot(b)
	f, err := Gather(context.Background(), os.DirFS("/"), Settings{LibDir: root + "/opt/flink/lib", OS: "linux", Arch: "x86_64"}, nil)
	if err != nil {
		b.Fatal(err)
	}
	for b.Loop() {
		admission.Decide(f)
	}
}

// BenchmarkJDKAsFlinkImage is the JDK derivation of a 2.x image start: the
// config file read, and parsed as YAML when it names a home.
func BenchmarkJDKAsFlinkImage(b *testing.B) {
	conf := strings.Repeat("# a comment line as Flink's shipped config carries many\n", 200) + shippedNested
	for _, c := range []struct{ name, extra string }{{"no home", ""}, {"nested home", "env.java.home: /opt/jdk-conf\n"}} {
		fsys := jdkTree(map[string]string{"config.yaml": conf + c.extra})
		s := Settings{ConfDir: "/opt/flink/conf", Launch: LaunchImage, JavaHome: "/opt/jdk-env", Path: "/usr/bin"}
		b.Run(c.name, func(b *testing.B) {
			for b.Loop() {
				if j := jdkAsFlink(fsys, s, "2.2.1"); j.Err != nil {
					b.Fatal(j.Err)
				}
			}
		})
	}
}

// BenchmarkInstallJournalLook is what the start path pays to know whether
// an install into lib is unfinished: one lstat of a fixed name (absent, as
// on every healthy start), against the whole of Gather on the realistic lib.
func BenchmarkInstallJournalLook(b *testing.B) {
	root := realisticRoot(b)
	fsys := os.DirFS("/")
	name := strings.TrimPrefix(root, "/") + "/opt/flink/lib/" + InstallJournal
	for b.Loop() {
		if statOK(fsys, name) {
			b.Fatal("a journal in the benchmark lib")
		}
	}
}

// shippedShape is a config of the shape the distributions ship: ~250
// comment lines and a score of keys, nested for config.yaml and flat for
// flink-conf.yaml (written for this benchmark).
func shippedShape(nested bool) string {
	var b strings.Builder
	for i := range 250 {
		fmt.Fprintf(&b, "# comment line %d, as Flink's shipped config carries many, some long enough to matter\n", i)
	}
	opts := "--add-exports=java.rmi/sun.rmi.registry=ALL-UNNAMED " + strings.Repeat("--add-opens=java.base/java.util=ALL-UNNAMED ", 18)
	keys := [][2]string{{"env.java.opts.all", opts}, {"jobmanager.bind-host", "localhost"}, {"jobmanager.rpc.address", "localhost"},
		{"jobmanager.rpc.port", "6123"}, {"jobmanager.memory.process.size", "1600m"}, {"jobmanager.execution.failover-strategy", "region"},
		{"taskmanager.bind-host", "localhost"}, {"taskmanager.host", "localhost"}, {"taskmanager.numberOfTaskSlots", "1"},
		{"taskmanager.memory.process.size", "1728m"}, {"parallelism.default", "1"}, {"rest.address", "localhost"}, {"rest.bind-address", "localhost"}}
	if !nested {
		for _, k := range keys {
			fmt.Fprintf(&b, "%s: %s\n", k[0], k[1])
		}
		return b.String()
	}
	for _, k := range keys { // one mapping per key: the shape, not the merge, is what costs
		parts := strings.Split(k[0], ".")
		for i, p := range parts[:len(parts)-1] {
			fmt.Fprintf(&b, "%s%s_%s:\n", strings.Repeat("  ", i), p, strings.ReplaceAll(k[0], ".", "_"))
		}
		fmt.Fprintf(&b, "%s%s: %s\n", strings.Repeat("  ", len(parts)-1), parts[len(parts)-1], k[1])
	}
	return b.String()
}

// BenchmarkReadConfig is the config read of a start: a config file of the
// shape each line ships, with FLINK_PROPERTIES and a TaskManager's
// arguments.
func BenchmarkReadConfig(b *testing.B) {
	for _, c := range []struct {
		name, file, version string
		nested              bool
	}{
		{"2.2 config.yaml", "config.yaml", "2.2.1", true},
		{"1.18 flink-conf.yaml", "flink-conf.yaml", "1.18.1", false},
	} {
		fsys := confTree(map[string]string{c.file: shippedShape(c.nested)})
		s := Settings{ConfDir: "/opt/flink/conf", Launch: LaunchImage, Role: "taskmanager",
			FlinkProperties: "taskmanager.numberOfTaskSlots: 2\nstate.backend.type: rocksdb",
			Args:            []string{"-Dtaskmanager.memory.process.size=2g"}}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if cfg := ReadConfig(fsys, s, c.version); cfg.Err != nil || len(cfg.Entries) < 10 {
					b.Fatal(cfg.Err, len(cfg.Entries))
				}
			}
		})
	}
}
