package host_test

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/streamfusion/image-entrypoint/internal/host"
)

// FuzzDefinedVersions reads the version definitions of a root's library
// (an image under verify is untrusted input), seeded with the gcc-built
// libraries of internal/payload/testdata/elf.
func FuzzDefinedVersions(f *testing.F) {
	files, _ := filepath.Glob("../payload/testdata/elf/*.so")
	if len(files) == 0 {
		f.Fatal("no seeds in ../payload/testdata/elf")
	}
	for _, name := range files {
		data, err := os.ReadFile(name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		vs, err := host.DefinedVersions(bytes.NewReader(data))
		if err != nil {
			return
		}
		if len(vs) > len(data) {
			t.Fatalf("%d versions from %d bytes", len(vs), len(data))
		}
	})
}

func TestDefinedVersionsOfTheStubLibc(t *testing.T) {
	data, err := os.ReadFile("../payload/testdata/elf/libc236-stub.so")
	if err != nil {
		t.Fatal(err)
	}
	vs, err := host.DefinedVersions(bytes.NewReader(data))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vs, []string{"GLIBC_2.2.5", "GLIBC_2.3", "GLIBC_2.14", "GLIBC_2.34", "GLIBC_2.36"}) {
		t.Fatalf("versions %v", vs)
	}
}
