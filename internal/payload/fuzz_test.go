package payload_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func seedManifests(f *testing.F) {
	files, _ := filepath.Glob("testdata/manifests/*.mf")
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
}

func FuzzParseManifest(f *testing.F) {
	seedManifests(f)
	f.Add([]byte(testkit.Loader("2.2", "0.1.0").Manifest()))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := payload.ParseManifest(bytes.NewReader(data))
		if err != nil {
			return
		}
		for k, v := range m.Attributes() {
			if got, ok := m.Get(k); !ok || got != v {
				t.Fatalf("Get(%q) = %q, %v; want %q", k, got, ok, v)
			}
		}
	})
}

// jarSeeds are JARs of every shape the test kit writes.
func jarSeeds() [][]byte {
	stored := testkit.Loader("2.2", "0.1.0")
	stored.EmbedStored = true
	tree := testkit.Good("2.2.1").Tree()
	return [][]byte{
		testkit.Loader("2.2", "0.1.0").Bytes(),
		stored.Bytes(),
		testkit.Extension("kafka", "1.18", "0.1.0").Bytes(),
		tree[testkit.LibDir+"/flink-dist-2.2.1.jar"],
		tree[testkit.LibDir+"/flink-table-planner-loader-2.2.1.jar"],
		testkit.ManyEntries(3, testkit.Manifest("A", "b")),
	}
}

func FuzzRead(f *testing.F) {
	for _, s := range jarSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/fuzz.jar", payload.Options{Properties: true})
		if j.Err == nil && j.Entries < 0 {
			t.Fatal("negative entry count")
		}
	})
}

// FuzzNested puts fuzzed bytes where a loader keeps its core, deflated, so
// the streaming reader sees them.
func FuzzNested(f *testing.F) {
	for _, s := range jarSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, core []byte) {
		loader := testkit.Loader("2.2", "0.1.0")
		loader.Embedded = nil
		loader.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
		loader.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: core}}
		data := loader.Bytes()
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/fuzz.jar", payload.Options{})
		if j.Err != nil || j.Nested == nil {
			t.Fatalf("the outer JAR is sound: %v", j.Err)
		}
	})
}
