package payload_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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
	f.Add(testkit.ClassJAR("", []testkit.Class{{Name: "x/S3", Returns: map[string]string{"getScheme": "s3"}}},
		map[string][]string{payload.FileSystemFactoryService: {"x.S3", "x.Gone"}}))
	f.Fuzz(func(t *testing.T, data []byte) {
		j := payload.Read(bytes.NewReader(data), int64(len(data)), "/fuzz.jar", payload.Options{Properties: true, Providers: true})
		if len(j.Providers) > 64 {
			t.Fatalf("%d providers kept, more than the bound", len(j.Providers))
		}
		// The reader reads nothing past size: the same bytes followed by
		// more, read with the same size, give the same result.
		more := append(append([]byte(nil), data...), "PK\x05\x06 bytes past the end"...)
		k := payload.Read(bytes.NewReader(more), int64(len(data)), "/fuzz.jar", payload.Options{Properties: true, Providers: true})
		if fmt.Sprint(j.Err) != fmt.Sprint(k.Err) || j.Entries != k.Entries || !reflect.DeepEqual(j.Manifest, k.Manifest) || !reflect.DeepEqual(j.Providers, k.Providers) {
			t.Fatalf("bytes past size change the reading: %v/%d vs %v/%d", j.Err, j.Entries, k.Err, k.Entries)
		}
		// Read in place (as the entrypoint reads lib): the same reading.
		if d := sameReading(j, payload.Read(inPlace(data), int64(len(data)), "/fuzz.jar", payload.Options{Properties: true, Providers: true})); d != "" {
			t.Fatalf("read through a reader and in place differ: %s", d)
		}
		if j.Err != nil {
			return
		}
		// Whether an admitted archive is one the JVM reads is the JVM
		// corpus's to decide (make test-jvm): archive/zip is no oracle for
		// it (it refuses archives JarFile opens, such as an end record
		// whose directory is empty but misplaced).
		if j.Manifest != nil {
			for k, v := range j.Manifest.Attributes() {
				if got, ok := j.Manifest.Get(k); !ok || got != v {
					t.Fatalf("Get(%q) = %q, %v; want %q", k, got, ok, v)
				}
			}
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
		read := func(stored bool) *payload.JAR {
			loader := testkit.Loader("2.2", "0.1.0")
			loader.Embedded = nil
			loader.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
			loader.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: core, Store: stored}}
			data := loader.Bytes()
			j := payload.Read(bytes.NewReader(data), int64(len(data)), "/fuzz.jar", payload.Options{})
			if j.Err != nil || j.Nested == nil {
				t.Fatalf("the outer JAR is sound: %v", j.Err)
			}
			return j.Nested
		}
		deflated, stored := read(false), read(true)
		// The verdict never depends on how the core is nested; the one
		// accepted difference is damage after a deflated core's manifest,
		// which the stream does not reach: deflated admits, stored refuses.
		switch {
		case deflated.Err != nil && stored.Err == nil && stored.Manifest != nil:
			// A stored core read as having no manifest is refused by the
			// rules (it has no identity), as the deflated one is here.
			t.Fatalf("stored admits (%v), deflated refuses: %v", attrs(stored.Manifest), deflated.Err)
		case deflated.Err == nil && stored.Err == nil && !equalAttrs(attrs(deflated.Manifest), attrs(stored.Manifest)):
			t.Fatalf("stored reads %v, deflated %v", attrs(stored.Manifest), attrs(deflated.Manifest))
		}
	})
}
