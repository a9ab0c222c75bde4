package tmpbench

import (
	"os"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

func BenchmarkDist(b *testing.B) {
	fsys := os.DirFS(os.Getenv("HOME") + "/.cache/streamfusion/flink-dist/2.2.0/lib")
	for _, prov := range []bool{false, true} {
		b.Run(map[bool]string{false: "facts", true: "providers"}[prov], func(b *testing.B) {
			for b.Loop() {
				j := payload.Open(fsys, "flink-dist-2.2.0.jar", payload.Options{Providers: prov, Properties: true})
				if j.Err != nil {
					b.Fatal(j.Err)
				}
			}
		})
	}
	b.Run("metrics-plugin", func(b *testing.B) {
		pfs := os.DirFS(os.Getenv("HOME") + "/.cache/streamfusion/flink-dist/2.2.0/plugins/metrics-prometheus")
		for _, prov := range []bool{false, true} {
			b.Run(map[bool]string{false: "facts", true: "providers"}[prov], func(b *testing.B) {
				for b.Loop() {
					payload.Open(pfs, "flink-metrics-prometheus-2.2.0.jar", payload.Options{Providers: prov})
				}
			})
		}
	})
}
