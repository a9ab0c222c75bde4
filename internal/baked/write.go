package baked

import (
	"fmt"
	"os"
	"path/filepath"
)

// WriteFile writes a verdict file all or nothing: a temporary file in the
// same directory, fsynced, renamed over name, the directory fsynced.
func WriteFile(name string, data []byte) (err error) {
	dir := filepath.Dir(name)
	f, err := os.CreateTemp(dir, ".streamfusion-deep-verdict-*")
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(data); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.Name(), 0o644) //nolint:gosec // read by Flink's user, as lib's JARs are
	}
	if err == nil {
		err = os.Rename(f.Name(), name)
	}
	if err != nil {
		return fmt.Errorf("write %s: %w", name, err)
	}
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("sync %s: %w", dir, err)
	}
	return nil
}
