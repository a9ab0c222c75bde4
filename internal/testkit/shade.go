package testkit

import (
	"archive/zip"
	"fmt"
	"os"
	"strings"
)

// Shade writes a job JAR from the entries of srcs, the first of a name
// kept (service files too, as the shade plugin does without its
// ServicesResourceTransformer), with a Main-Class.
func Shade(out, mainClass string, srcs []string) error {
	f, err := os.Create(out + ".tmp")
	if err != nil {
		return err
	}
	defer f.Close()
	w := zip.NewWriter(f)
	m, err := w.Create("META-INF/MANIFEST.MF")
	if err != nil {
		return err
	}
	fmt.Fprintf(m, "Manifest-Version: 1.0\r\nMain-Class: %s\r\n\r\n", mainClass)
	seen := map[string]bool{"META-INF/MANIFEST.MF": true}
	for _, s := range srcs {
		r, err := zip.OpenReader(s)
		if err != nil {
			return err
		}
		for _, e := range r.File {
			if seen[e.Name] || strings.HasSuffix(e.Name, "/") {
				continue
			}
			seen[e.Name] = true
			if err := w.Copy(e); err != nil {
				return fmt.Errorf("%s: %s: %w", s, e.Name, err)
			}
		}
		r.Close()
	}
	if err := w.Close(); err != nil {
		return err
	}
	return os.Rename(out+".tmp", out)
}
