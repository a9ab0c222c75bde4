package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"
)

// BenchmarkGatherWithConfig is a TaskManager's start on the realistic lib
// with a 2.2 config.yaml of the shipped shape: the JDK lookup and the
// config rules' read share one read and one parse of the file.
func BenchmarkGatherWithConfig(b *testing.B) {
	root := realisticRoot(b)
	conf := filepath.Join(root, "opt/flink/conf")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		b.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(conf, "config.yaml"), []byte(shippedShape(true)+"env:\n  java:\n    home: /opt/java\n"), 0o644); err != nil {
		b.Fatal(err)
	}
	s := Settings{LibDir: root + "/opt/flink/lib", ConfDir: conf, Launch: LaunchImage, Role: "taskmanager", OS: "linux", Arch: "x86_64",
		FlinkProperties: "taskmanager.numberOfTaskSlots: 2"}
	fsys := os.DirFS("/")
	b.ReportAllocs()
	for b.Loop() {
		f, err := Gather(context.Background(), fsys, s, nil)
		if err != nil || len(f.Classpath) != 24 || f.Config.Err != nil || len(f.Config.Entries) < 10 {
			b.Fatal(err, len(f.Classpath), f.Config.Err)
		}
	}
}
