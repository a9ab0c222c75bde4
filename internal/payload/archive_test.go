package payload_test

import (
	"archive/zip"
	"bytes"
	"hash/crc32"
	"io"
	"slices"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func TestArchiveIndexesClasses(t *testing.T) {
	var buf bytes.Buffer
	w := zip.NewWriter(&buf)
	body := bytes.Repeat([]byte{0xCA, 0xFE, 0xBA, 0xBE}, 100)
	for _, f := range []struct {
		name   string
		data   []byte
		method uint16
	}{
		{"module-info.class", []byte("root module"), zip.Deflate},
		{"META-INF/versions/11/a/B.class", []byte("versioned"), zip.Deflate},
		{"a/B.class", []byte("first"), zip.Deflate},
		{"a/B.class", body, zip.Deflate}, // the last of a name is the one JarFile finds
		{"a/C.class", body, zip.Store},
		{"META-INF/services/org.example.Spi", []byte("# comment\n a.B \n\na.C # trailing\n"), zip.Deflate},
		{"META-INF/maven/org.example/ex/pom.xml", []byte("<project/>"), zip.Deflate},
	} {
		fw, err := w.CreateHeader(&zip.FileHeader{Name: f.name, Method: f.method})
		if err != nil {
			t.Fatal(err)
		}
		fw.Write(f.data)
	}
	w.Close()
	a, err := payload.ReadArchive(bytes.NewReader(buf.Bytes()), int64(buf.Len()), "/lib/x.jar")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range a.Classes {
		names = append(names, n)
	}
	slices.Sort(names)
	if !slices.Equal(names, []string{"a/B", "a/C"}) {
		t.Fatalf("classes %v", names)
	}
	if ce := a.Classes["a/B"]; ce.CRC != crc32.ChecksumIEEE(body) || ce.Size != uint64(len(body)) {
		t.Errorf("a/B: crc %08x size %d", ce.CRC, ce.Size)
	}
	for _, n := range []string{"a/B", "a/C"} {
		if data, err := a.Class(n, nil); err != nil || !bytes.Equal(data, body) {
			t.Errorf("Class(%s) = %d bytes, %v", n, len(data), err)
		}
	}
	if _, err := a.Class("a/D", nil); err == nil {
		t.Error("a missing class reads")
	}
	if len(a.Services) != 1 || len(a.POMs) != 1 {
		t.Fatalf("services %v, poms %v", a.Services, a.POMs)
	}
	data, err := a.File(a.Services[0])
	if err != nil {
		t.Fatal(err)
	}
	if got := payload.ServiceClasses(data); !slices.Equal(got, []string{"a/B", "a/C"}) {
		t.Errorf("service classes %v", got)
	}
}

// FuzzArchive: any bytes index as a JAR or are refused, and every class
// and small file the index names reads or is refused, never a panic; a
// class reads exactly its declared size. archive/zip, where it reads the
// same archive, is the oracle for a class's bytes.
func FuzzArchive(f *testing.F) {
	f.Add(testkit.Loader("2.2", "0.1.0").Bytes())
	f.Add(testkit.ManyEntries(3, testkit.Manifest("A", "b")))
	f.Add(testkit.ClassJAR(testkit.Manifest("Main-Class", "a.B"), []testkit.Class{{Name: "a/B", News: []string{"a/C"}}, {Name: "a/C"}},
		map[string][]string{"org.example.Spi": {"a.B"}}, testkit.Entry{Name: "META-INF/maven/g/a/pom.xml", Data: []byte("<project/>")}))
	f.Fuzz(func(t *testing.T, data []byte) {
		a, err := payload.ReadArchive(bytes.NewReader(data), int64(len(data)), "/fuzz.jar")
		if err != nil {
			return
		}
		z, zerr := zip.NewReader(bytes.NewReader(data), int64(len(data)))
		for name, ce := range a.Classes {
			got, err := a.Class(name, nil)
			if err != nil {
				continue
			}
			if uint64(len(got)) != ce.Size {
				t.Fatalf("%s: %d bytes, the directory says %d", name, len(got), ce.Size)
			}
			if zerr != nil {
				continue
			}
			if zf, err := z.Open(name + ".class"); err == nil {
				want, err := io.ReadAll(zf)
				if err == nil && crc32.ChecksumIEEE(want) == ce.CRC && !bytes.Equal(got, want) {
					t.Fatalf("%s: archive/zip reads other bytes", name)
				}
			}
		}
		for _, n := range append(append([]string(nil), a.Services...), a.POMs...) {
			if data, err := a.File(n); err == nil {
				payload.ServiceClasses(data)
			}
		}
	})
}
