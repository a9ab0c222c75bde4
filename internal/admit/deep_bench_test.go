package admit

import (
	"context"
	"os"
	"runtime"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// BenchmarkDeepCheck is the deep check (shadowing and linkage) of
// `streamfusion check` in process, for profiles: on the Flink home
// STREAMFUSION_LINKAGE_BENCH_HOME names (bench/linkage writes one: the real
// 2.2.0 lib, real connectors and a 106 MB job JAR; make bench-linkage). A
// benchmark, not a test: without the home there is nothing to measure.
//
//	go test -run '^$' -bench DeepCheck -benchtime 3x -cpuprofile cpu.out ./internal/admit/
func BenchmarkDeepCheck(b *testing.B) {
	home := os.Getenv("STREAMFUSION_LINKAGE_BENCH_HOME")
	if home == "" {
		b.Skip("STREAMFUSION_LINKAGE_BENCH_HOME names no Flink home (make bench-linkage writes one)")
	}
	cfg, err := settings.FromEnv([]string{"FLINK_HOME=" + home, "PATH=" + os.Getenv("PATH")})
	if err != nil {
		b.Fatal(err)
	}
	s := cfg.HostSettings("linux", host.NormalizeArch(runtime.GOARCH))
	s.Deep = true
	for b.Loop() {
		v, err := Check(context.Background(), Request{Root: os.DirFS("/"), Settings: s})
		if err != nil {
			b.Fatal(err)
		}
		if len(v.Decision.Findings) == 0 {
			b.Fatal("no findings on the bench layout")
		}
	}
}
