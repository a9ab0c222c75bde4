package install

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
)

// FileOps are the file operations Apply makes; tests inject failures.
type FileOps interface {
	MkdirTemp(dir, pattern string) (string, error)
	WriteFile(name string, data []byte) error // create, write, fsync
	Rename(from, to string) error
	Remove(name string) error
	SyncDir(dir string) error
}

// OS is FileOps on the real file system.
type OS struct{}

// MkdirTemp implements FileOps.
func (OS) MkdirTemp(dir, pattern string) (string, error) { return os.MkdirTemp(dir, pattern) }

// WriteFile implements FileOps: the file is complete on disk when it returns.
func (OS) WriteFile(name string, data []byte) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644) //nolint:gosec // lib JARs are read by Flink's user, as the distribution's own are
	if err != nil {
		return err
	}
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	return errors.Join(err, f.Close())
}

// Rename implements FileOps.
func (OS) Rename(from, to string) error { return os.Rename(from, to) }

// Remove implements FileOps.
func (OS) Remove(name string) error { return os.Remove(name) }

// SyncDir implements FileOps.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// Apply carries the plan out on the real lib directory (root is the
// directory the plan's "/" stands for: "/" on a host). On failure it undoes
// what it did and returns the error; lib is then as it was.
func Apply(p *Plan, root string, ops FileOps) (err error) {
	if p.Decision == nil || !p.Decision.Admitted() {
		return &Refused{Plan: p}
	}
	if ops == nil {
		ops = OS{}
	}
	lib := filepath.Join(root, filepath.FromSlash(p.LibDir))
	stage, err := ops.MkdirTemp(lib, ".streamfusion-install-")
	if err != nil {
		return fmt.Errorf("stage in %s: %w", lib, err)
	}
	var undo []func() error
	defer func() {
		if err == nil {
			return
		}
		var errs []error
		for i := len(undo) - 1; i >= 0; i-- {
			errs = append(errs, undo[i]())
		}
		errs = append(errs, os.RemoveAll(stage), ops.SyncDir(lib))
		if e := errors.Join(errs...); e != nil {
			err = fmt.Errorf("%w; undoing it failed too, see %s: %w", err, stage, e)
		}
	}()
	// 1. Every new file, complete on disk, beside lib's files.
	staged := map[string]string{}
	for i, c := range p.Changes {
		if c.Op == OpRemove {
			continue
		}
		s := filepath.Join(stage, strconv.Itoa(i)+".new")
		if err = ops.WriteFile(s, p.data[c.Name]); err != nil {
			return fmt.Errorf("stage %s: %w", c.Name, err)
		}
		staged[c.Name] = s
	}
	// 2. What goes away (and what is replaced) moves aside into the stage.
	for i, c := range p.Changes {
		if c.Op == OpAdd {
			continue
		}
		from, aside := filepath.Join(lib, filepath.FromSlash(c.Name)), filepath.Join(stage, strconv.Itoa(i)+".old")
		if err = ops.Rename(from, aside); err != nil {
			return fmt.Errorf("move %s aside: %w", from, err)
		}
		undo = append(undo, func() error { return ops.Rename(aside, from) })
	}
	// 3. The new files into place.
	for _, c := range p.Changes {
		if c.Op == OpRemove {
			continue
		}
		to := filepath.Join(lib, c.Name)
		if err = ops.Rename(staged[c.Name], to); err != nil {
			return fmt.Errorf("install %s: %w", to, err)
		}
		undo = append(undo, func() error { return ops.Remove(to) })
	}
	if err = ops.SyncDir(lib); err != nil {
		return fmt.Errorf("sync %s: %w", lib, err)
	}
	// Done: the moved-aside files go. A failure here leaves the staging
	// directory behind, not a broken lib: the install stands.
	_ = os.RemoveAll(stage)
	return nil
}
