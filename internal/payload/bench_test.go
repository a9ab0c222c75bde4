package payload_test

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// benchLib writes (once per machine) the realistic lib of testkit.Realistic.
func benchLib(b *testing.B) string {
	b.Helper()
	lib := filepath.Join(os.TempDir(), "streamfusion-bench", "payload", "lib")
	if _, err := os.Stat(filepath.Join(lib, "flink-dist-2.2.1.jar")); err != nil {
		if err := testkit.Realistic(lib, 1); err != nil {
			b.Fatal(err)
		}
	}
	stored := filepath.Join(lib, "..", "streamfusion-loader-stored.jar")
	if _, err := os.Stat(stored); err != nil {
		l := testkit.Loader("2.2", "0.1.0")
		l.EmbedStored = true
		if err := os.WriteFile(stored, l.Bytes(), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return lib
}

func benchOpen(b *testing.B, file string, opt payload.Options, check func(*payload.JAR) bool) {
	lib := benchLib(b)
	name := strings.TrimPrefix(filepath.Join(lib, file), "/")
	fsys := os.DirFS("/")
	for b.Loop() {
		if j := payload.Open(fsys, name, opt); j.Err != nil || !check(j) {
			b.Fatalf("%s: %v", file, j.Err)
		}
	}
}

// flink-dist: a 45,000-entry central directory and the version resource.
func BenchmarkReadDist(b *testing.B) {
	benchOpen(b, "flink-dist-2.2.1.jar", payload.Options{Properties: true}, func(j *payload.JAR) bool { return j.Properties != nil })
}

// The planner loader: a stored nested JAR that is not a StreamFusion core.
func BenchmarkReadPlannerLoader(b *testing.B) {
	benchOpen(b, "flink-table-planner-loader-2.2.1.jar", payload.Options{}, func(j *payload.JAR) bool { return j.Manifest != nil })
}

// The StreamFusion loader: a deflated nested core read up to its manifest.
func BenchmarkReadLoaderDeflatedCore(b *testing.B) {
	benchOpen(b, "streamfusion-loader-0.1.0.jar", payload.Options{}, func(j *payload.JAR) bool { return j.Nested != nil && j.Nested.Manifest != nil })
}

// A loader whose core is stored: read in place through its own directory.
func BenchmarkReadLoaderStoredCore(b *testing.B) {
	benchOpen(b, "../streamfusion-loader-stored.jar", payload.Options{}, func(j *payload.JAR) bool { return j.Nested != nil && j.Nested.Manifest != nil })
}

// A small extension JAR with a native library.
func BenchmarkReadExtension(b *testing.B) {
	benchOpen(b, "streamfusion-kafka-0.1.0.jar", payload.Options{}, func(j *payload.JAR) bool { return j.Manifest != nil })
}
