package install

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// BenchmarkDecideAndApply installs a release over a production-shaped lib
// (about 160 MB in 24 JARs, its payloads replaced) and puts the old one back
// each round: the plan (every JAR read, the rules) and the renames.
func BenchmarkDecideAndApply(b *testing.B) {
	root := b.TempDir()
	lib := filepath.Join(root, testkit.LibDir)
	if err := testkit.Realistic(lib, 1); err != nil {
		b.Fatal(err)
	}
	if err := (testkit.Dist{Flink: "2.2.1", NoDist: true, Planner: "none"}).Write(root); err != nil {
		b.Fatal(err)
	}
	set := func(version string) []Payload {
		ps := payloads("2.2", version)
		for _, m := range []string{"avro", "csv", "paimon", "parquet"} {
			ps = append(ps, Payload{Source: m + ".jar", Data: testkit.Extension(m, "2.2", version).Bytes()})
		}
		return ps
	}
	sets := [][]Payload{set("0.2.0"), set("0.1.0")}
	b.ResetTimer()
	for i := range b.N {
		p, err := Decide(context.Background(), os.DirFS(root), settings(), "2.2", sets[i%2])
		if err != nil {
			b.Fatal(err, p.Decision.Findings)
		}
		if err := Apply(p, root, nil); err != nil {
			b.Fatal(err)
		}
	}
}
