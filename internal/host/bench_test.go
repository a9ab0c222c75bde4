package host

import (
	"context"
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
