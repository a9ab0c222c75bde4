package host

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// BenchmarkGatherRealisticNative prices the ELF reading of the native
// rules at start (docs/performance.md): Gather on the realistic lib
// without and with Settings.Native, whose six extensions carry a 1 MiB
// library each (an ELF header and incompressible bytes, as bench/ has
// them); then with a real library of realistic compressibility instead
// (this machine's libstdc++.so.6, 2.3 MB), which inflates slower.
func BenchmarkGatherRealisticNative(b *testing.B) {
	root := realisticRoot(b)
	fsys := os.DirFS("/")
	run := func(b *testing.B, root string, native bool) {
		s := Settings{LibDir: root + "/opt/flink/lib", OS: "linux", Arch: "x86_64", Native: native}
		for b.Loop() {
			f, err := Gather(context.Background(), fsys, s, nil)
			if err != nil || len(f.Classpath) != 24 {
				b.Fatal(err, len(f.Classpath))
			}
			if native && f.Libs == nil {
				b.Fatal("no native facts")
			}
		}
	}
	b.Run("realistic/off", func(b *testing.B) { run(b, root, false) })
	b.Run("realistic/native", func(b *testing.B) { run(b, root, true) })

	stdcxx, err := os.ReadFile("/usr/lib/x86_64-linux-gnu/libstdc++.so.6")
	if err != nil {
		b.Skip("no libstdc++.so.6 on this machine:", err)
	}
	root2 := filepath.Join(b.TempDir(), "root")
	lib := filepath.Join(root2, "opt/flink/lib")
	if err := testkit.Realistic(lib, 1); err != nil {
		b.Fatal(err)
	}
	for _, m := range []string{"kafka", "json", "csv", "avro", "parquet", "paimon"} {
		p := testkit.NativePayload(m, "2.2", "0.1.0", "libstreamfusion_"+m+"_ops.so", stdcxx)
		if err := os.WriteFile(filepath.Join(lib, p.FileName()), p.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("real-libraries/off", func(b *testing.B) { run(b, root2, false) })
	b.Run("real-libraries/native", func(b *testing.B) { run(b, root2, true) })
}
