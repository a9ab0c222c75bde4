package deploy

import (
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse feeds untrusted YAML (what `verify -f -` and the webhook read):
// never a panic, and every container found has an image and a group.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("testdata/*.yaml")
	for _, p := range files {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"kind":"List","items":[{"kind":"List","items":[]}]}`))
	f.Add([]byte("a: &a [*a]\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rs, err := Parse("fuzz", data)
		if err != nil {
			return
		}
		for _, r := range rs {
			for _, c := range r.Containers {
				if c.Group == "" {
					t.Fatalf("%s: container %s without a group", r.ID(), c.Name)
				}
			}
		}
	})
}
