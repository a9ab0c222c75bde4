package install

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
)

// FileOps are the file operations Apply and Recover make, each one a step
// a test can fail or stop the process after.
type FileOps interface {
	Mkdir(name string) error
	WriteFile(name string, data []byte) error // create (never over a file), write, fsync
	Append(name string, data []byte) error    // append to a file, fsync
	Rename(from, to string) error
	Remove(name string) error
	RemoveAll(name string) error
	SyncDir(dir string) error
}

// OS is FileOps on the real file system.
type OS struct{}

// Mkdir implements FileOps.
func (OS) Mkdir(name string) error { return os.Mkdir(name, 0o755) } //nolint:gosec // beside lib's own files, read by Flink's user

// WriteFile implements FileOps: the file is complete on disk when it returns.
func (OS) WriteFile(name string, data []byte) error {
	return writeSynced(name, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644, data) // lib JARs are read by Flink's user, as the distribution's own are
}

// Append implements FileOps: the bytes are on disk when it returns.
func (OS) Append(name string, data []byte) error {
	return writeSynced(name, os.O_WRONLY|os.O_APPEND, 0, data)
}

// writeSynced opens name with flag, writes data and fsyncs it; the first
// error wins, and the file is closed whatever happened.
func writeSynced(name string, flag int, perm os.FileMode, data []byte) error {
	f, err := os.OpenFile(name, flag, perm) //nolint:gosec // paths below lib, chosen by the install plan
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

// RemoveAll implements FileOps.
func (OS) RemoveAll(name string) error { return os.RemoveAll(name) }

// SyncDir implements FileOps.
func (OS) SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	return errors.Join(d.Sync(), d.Close())
}

// ErrUnfinished is returned by Apply when lib holds an unfinished install
// (Recover first) or a failure left one behind that Recover could not
// finish either.
var ErrUnfinished = errors.New("lib holds an unfinished install")

// Apply carries the plan out on the real lib directory (root is the
// directory the plan's "/" stands for: "/" on a host). The caller holds
// the lib's lock (Lock) and has recovered any unfinished install
// (Recover).
//
// The order, each step on disk before the next (see the package doc):
// the journal listing every rename; the stage with every new file; the
// mark "staged"; each rename (files that go move aside into the stage,
// then the new ones into place), each followed by "done N"; "committed";
// the stage and the journal removed. On a failure it recovers as Recover
// would: lib is then as it was, unless every new file was already in
// place, and then the install stands and Apply returns nil.
//
// It is long because it is the journaled steps above, in order, each
// followed by its fsync and mark.
func Apply(p *Plan, root string, ops FileOps) (err error) {
	if p.Decision == nil || !p.Decision.Admitted() {
		return &Refused{Plan: p}
	}
	if ops == nil {
		ops = OS{}
	}
	lib := filepath.Join(root, filepath.FromSlash(p.LibDir))
	jn, stage := filepath.Join(lib, JournalName), filepath.Join(lib, StageName)
	for _, n := range []string{jn, stage} {
		if _, err := os.Lstat(n); !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%w: %s is there (run install --recover)", ErrUnfinished, n)
		}
	}
	h := header{Lib: lib}
	for i, c := range p.Changes {
		if c.Op != OpAdd {
			h.Steps = append(h.Steps, step{Op: stepAside, Name: c.Name, File: strconv.Itoa(i) + ".old"})
		}
	}
	for i, c := range p.Changes {
		if c.Op != OpRemove {
			h.Steps = append(h.Steps, step{Op: stepPlace, Name: c.Name, File: strconv.Itoa(i) + ".new"})
		}
	}
	head, err := journalHeader(h)
	if err != nil {
		return err
	}
	committed := false
	defer func() {
		if err == nil {
			return
		}
		r, rerr := Recover(lib, ops)
		switch {
		case rerr != nil:
			err = fmt.Errorf("%w; %w: recovering failed too: %w", err, ErrUnfinished, rerr)
		case r.Outcome == Completed, committed && r.Outcome == Nothing:
			err = nil // every new file was in place: the install stands
		}
	}()
	// 1. The journal: from here on, check and the entrypoint refuse lib.
	if err = ops.WriteFile(jn, head); err != nil {
		return fmt.Errorf("write %s: %w", jn, err)
	}
	if err = ops.SyncDir(lib); err != nil {
		return fmt.Errorf("sync %s: %w", lib, err)
	}
	// 2. Every new file, complete on disk, in the stage.
	if err = ops.Mkdir(stage); err != nil {
		return fmt.Errorf("stage in %s: %w", lib, err)
	}
	for _, s := range h.Steps {
		if s.Op != stepPlace {
			continue
		}
		f := filepath.Join(stage, s.File)
		if err = ops.WriteFile(f, p.data[s.Name]); err != nil {
			return fmt.Errorf("stage %s: %w", s.Name, err)
		}
	}
	for _, d := range []string{stage, lib} {
		if err = ops.SyncDir(d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	if err = ops.Append(jn, []byte(markStaged+"\n")); err != nil {
		return fmt.Errorf("mark %s: %w", jn, err)
	}
	// 3. The renames, each on disk and marked before the next.
	for k, s := range h.Steps {
		inLib, inStage := filepath.Join(lib, filepath.FromSlash(s.Name)), filepath.Join(stage, s.File)
		from, to := inLib, inStage
		if s.Op == stepPlace {
			from, to = inStage, inLib
		}
		if err = renameSynced(ops, from, to); err != nil {
			return err
		}
		if err = ops.Append(jn, []byte(markDone+" "+strconv.Itoa(k)+"\n")); err != nil {
			return fmt.Errorf("mark %s: %w", jn, err)
		}
	}
	if err = ops.Append(jn, []byte(markCommitted+"\n")); err != nil {
		return fmt.Errorf("mark %s: %w", jn, err)
	}
	committed = true
	// 4. The install stands: the moved-aside files and the journal go.
	return cleanup(ops, lib)
}

// renameSynced renames and syncs both directories, so the rename is on
// disk before anything after it.
func renameSynced(ops FileOps, from, to string) error {
	if err := ops.Rename(from, to); err != nil {
		return fmt.Errorf("rename %s to %s: %w", from, to, err)
	}
	for _, d := range dirsOf(from, to) {
		if err := ops.SyncDir(d); err != nil {
			return fmt.Errorf("sync %s: %w", d, err)
		}
	}
	return nil
}

func dirsOf(a, b string) []string {
	da, db := filepath.Dir(a), filepath.Dir(b)
	if da == db {
		return []string{da}
	}
	return []string{da, db}
}

// cleanup removes the stage, then the journal, each removal on disk
// before the next: while the journal is there, the stage may be.
func cleanup(ops FileOps, lib string) error {
	stage, jn := filepath.Join(lib, StageName), filepath.Join(lib, JournalName)
	if err := ops.RemoveAll(stage); err != nil {
		return fmt.Errorf("remove %s: %w", stage, err)
	}
	if err := ops.SyncDir(lib); err != nil {
		return fmt.Errorf("sync %s: %w", lib, err)
	}
	if err := ops.Remove(jn); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("remove %s: %w", jn, err)
	}
	if err := ops.SyncDir(lib); err != nil {
		return fmt.Errorf("sync %s: %w", lib, err)
	}
	return nil
}

// Outcomes of Recover.
const (
	Nothing    = "nothing to recover"
	Completed  = "completed"   // every new file was in place: the install stands
	RolledBack = "rolled back" // lib is as it was before the install
)

// Recovery says what Recover found and did.
type Recovery struct {
	Outcome string
	Steps   int // renames the install planned
	Done    int // of them, done when it stopped
}

func (r Recovery) String() string {
	if r.Outcome == Nothing {
		return r.Outcome
	}
	return fmt.Sprintf("%s (it had made %d of its %d renames)", r.Outcome, r.Done, r.Steps)
}

// Recover finishes or rolls back an install into lib that did not finish
// (the process was killed, the machine went down): finished when every
// new file is in place, rolled back otherwise, and the stage and the
// journal removed. Without a journal it only removes a stage left by a
// crash before the journal was written. The caller holds the lib's lock.
//
// Which renames were done is read from lib itself, each rename being on
// disk before the next: a file moved aside is in the stage, a new file
// placed is no longer there. The journal's marks must agree with that; a
// journal that does not (edited, or lib changed by hand since) is refused
// and left for a person to look at.
//
// It is long because it reads the journal, checks each of its marks
// against lib and rolls forward or back, in that order.
func Recover(lib string, ops FileOps) (Recovery, error) {
	if ops == nil {
		ops = OS{}
	}
	jn, stage := filepath.Join(lib, JournalName), filepath.Join(lib, StageName)
	data, err := os.ReadFile(jn)
	if errors.Is(err, fs.ErrNotExist) {
		if _, err := os.Lstat(stage); err == nil {
			return Recovery{Outcome: RolledBack}, cleanup(ops, lib)
		}
		return Recovery{Outcome: Nothing}, nil
	}
	if err != nil {
		return Recovery{}, fmt.Errorf("read %s: %w", jn, err)
	}
	j, complete, err := parseJournal(data)
	if err != nil {
		return Recovery{}, fmt.Errorf("%s: %w; compare lib with the journal and remove it by hand", jn, err)
	}
	_, stageErr := os.Lstat(stage)
	if !complete {
		// Cut short while it was written: nothing after it was begun.
		if stageErr == nil {
			return Recovery{}, fmt.Errorf("%s: %w: its header is cut short but %s exists; compare lib with it and remove both by hand", jn, errJournal, stage)
		}
		return Recovery{Outcome: RolledBack}, cleanup(ops, lib)
	}
	// A mark a power cut cut short is ended before Recover adds its own.
	mark := func(m string) error {
		b := []byte(m + "\n")
		if len(data) > 0 && data[len(data)-1] != '\n' {
			b = append([]byte("\n"), b...)
		}
		if err := ops.Append(jn, b); err != nil {
			return fmt.Errorf("mark %s: %w", jn, err)
		}
		data = append(data, b...)
		return nil
	}
	r := Recovery{Steps: len(j.Steps)}
	switch {
	case j.committed:
		r.Outcome, r.Done = Completed, len(j.Steps)
		return r, cleanup(ops, lib)
	case j.rolledBack, !j.staged:
		r.Outcome = RolledBack
		return r, cleanup(ops, lib)
	}
	if stageErr != nil {
		return r, fmt.Errorf("%s: %w: renames had begun but %s is missing: %w", jn, errJournal, stage, stageErr)
	}
	done := 0
	for k, s := range j.Steps {
		_, err := os.Lstat(filepath.Join(stage, s.File))
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return r, fmt.Errorf("look at %s: %w", filepath.Join(stage, s.File), err)
		}
		isDone := (s.Op == stepAside) == (err == nil)
		switch {
		case isDone && done == k:
			done++
		case isDone:
			return r, fmt.Errorf("%s: step %d (%s %s) is done but step %d is not: lib was changed since; compare it with the journal", jn, k, s.Op, s.Name, done)
		case j.done[k]:
			return r, fmt.Errorf("%s: step %d (%s %s) is marked done but is not: lib was changed since; compare it with the journal", jn, k, s.Op, s.Name)
		}
	}
	r.Done = done
	if done == len(j.Steps) {
		if err := mark(markCommitted); err != nil {
			return r, err
		}
		r.Outcome = Completed
		return r, cleanup(ops, lib)
	}
	for k := done - 1; k >= 0; k-- {
		s := j.Steps[k]
		inLib, inStage := filepath.Join(lib, filepath.FromSlash(s.Name)), filepath.Join(stage, s.File)
		from, to := inStage, inLib // an aside undone
		if s.Op == stepPlace {
			from, to = inLib, inStage
		}
		if err := renameSynced(ops, from, to); err != nil {
			return r, fmt.Errorf("undo step %d: %w", k, err)
		}
	}
	if err := mark(markRolledBack); err != nil {
		return r, err
	}
	r.Outcome = RolledBack
	return r, cleanup(ops, lib)
}
