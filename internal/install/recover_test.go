package install

import (
	"bytes"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

type entry struct {
	dir  bool
	mode fs.FileMode
	data []byte
}

// tree is a directory's contents by relative path.
type tree map[string]entry

func readTree(t *testing.T, dir string) tree {
	t.Helper()
	out := tree{}
	require.NoError(t, filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		info, err := d.Info()
		if err != nil {
			return err
		}
		e := entry{dir: d.IsDir(), mode: info.Mode()}
		if !d.IsDir() {
			if e.data, err = os.ReadFile(p); err != nil {
				return err
			}
		}
		out[rel] = e
		return nil
	}))
	return out
}

func writeTree(t *testing.T, dir string, tr tree) {
	t.Helper()
	require.NoError(t, os.RemoveAll(dir))
	for _, pass := range []bool{true, false} { // directories first
		for rel, e := range tr {
			if e.dir != pass {
				continue
			}
			p := filepath.Join(dir, rel)
			if e.dir {
				require.NoError(t, os.MkdirAll(p, e.mode.Perm()))
			} else {
				require.NoError(t, os.WriteFile(p, e.data, e.mode.Perm()))
			}
		}
	}
}

// recording is OS, copying lib after every operation: the states a kill
// after each operation leaves.
type recording struct {
	OS
	lib    string
	t      *testing.T
	states []tree
	wrote  []bool // the operation wrote the journal
}

func (r *recording) record(err error) error {
	r.states = append(r.states, readTree(r.t, r.lib))
	r.wrote = append(r.wrote, false)
	return err
}

func (r *recording) journal(n string, err error) error {
	r.record(err) //nolint:errcheck // err is returned below
	r.wrote[len(r.wrote)-1] = filepath.Base(n) == JournalName
	return err
}

func (r *recording) Mkdir(n string) error               { return r.record(r.OS.Mkdir(n)) }
func (r *recording) WriteFile(n string, d []byte) error { return r.journal(n, r.OS.WriteFile(n, d)) }
func (r *recording) Append(n string, d []byte) error    { return r.journal(n, r.OS.Append(n, d)) }
func (r *recording) Rename(a, b string) error           { return r.record(r.OS.Rename(a, b)) }
func (r *recording) Remove(n string) error              { return r.record(r.OS.Remove(n)) }
func (r *recording) RemoveAll(n string) error           { return r.record(r.OS.RemoveAll(n)) }
func (r *recording) SyncDir(d string) error             { return r.record(r.OS.SyncDir(d)) }

// Every state an install can be stopped in (after each operation), and
// each state after a write of the journal with that write cut short at
// every byte (a power cut during it: the header, or a mark), is recovered to lib as
// it was before or as the install makes it, with nothing of the install
// left; which one is the package's rule: completed exactly when every new
// file was in place.
func TestRecoverEveryCrashState(t *testing.T) {
	d := testkit.Good("2.2.1").With(testkit.Placed{Name: "sub/streamfusion-csv-0.1.0.jar", Payload: testkit.Extension("csv", "2.2", "0.1.0")})
	ps := append(payloads("2.2", "0.2.0"), Payload{Source: "csv.jar", Data: testkit.Extension("csv", "2.2", "0.2.0").Bytes()})
	root := dist(t, d)
	lib := filepath.Join(root, testkit.LibDir)
	before := readTree(t, lib)
	rec := &recording{lib: lib, t: t}
	_, err := install(t, root, "2.2", ps, rec)
	require.NoError(t, err)
	after := readTree(t, lib)
	require.NotEqual(t, before, after)

	var variants []tree
	for i, st := range rec.states {
		variants = append(variants, st)
		j, ok := st[JournalName]
		if !ok || !rec.wrote[i] {
			continue
		}
		body := j.data[:len(j.data)-1]
		last := bytes.LastIndexByte(body, '\n') + 1 // start of the last line
		step := 1
		if last == 0 || bytes.Count(body, []byte("\n")) == 1 {
			step = 13 // the header: every 13th byte is plenty
		}
		for cut := last; cut < len(j.data)-1; cut += step {
			v := tree{}
			for k, e := range st {
				v[k] = e
			}
			v[JournalName] = entry{mode: j.mode, data: j.data[:cut]}
			variants = append(variants, v)
		}
	}
	require.Greater(t, len(variants), len(rec.states))
	outcomes := map[string]int{}
	for i, v := range variants {
		writeTree(t, lib, v)
		r, err := Recover(lib, nil)
		require.NoError(t, err, "variant %d", i)
		got := readTree(t, lib)
		switch {
		case assert.ObjectsAreEqual(before, got):
			assert.NotEqual(t, Completed, r.Outcome, "variant %d", i)
		case assert.ObjectsAreEqual(after, got):
			assert.NotEqual(t, RolledBack, r.Outcome, "variant %d", i)
		default:
			t.Fatalf("variant %d (%s) recovered to neither before nor after", i, r)
		}
		outcomes[r.Outcome]++
	}
	assert.Positive(t, outcomes[RolledBack])
	assert.Positive(t, outcomes[Completed])
	t.Logf("%d states, %d with torn journals: %v", len(rec.states), len(variants)-len(rec.states), outcomes)
}

// A journal that disagrees with lib (edited, or lib changed by hand since)
// is refused, and lib is left alone for a person to look at.
func TestRecoverRefusesAJournalThatDisagrees(t *testing.T) {
	root := dist(t, testkit.Good("2.2.1"))
	lib := filepath.Join(root, testkit.LibDir)
	rec := &recording{lib: lib, t: t}
	_, err := install(t, root, "2.2", payloads("2.2", "0.2.0"), rec)
	require.NoError(t, err)
	// Stopped after the first rename's mark, then the moved file put back by hand.
	var st tree
	for _, s := range rec.states {
		if j, ok := s[JournalName]; ok && bytes.HasSuffix(j.data, []byte("done 0\n")) {
			st = s
			break
		}
	}
	require.NotNil(t, st)
	writeTree(t, lib, st)
	var old string
	for k := range st {
		if filepath.Ext(k) == ".old" {
			old = k
		}
	}
	require.NoError(t, os.Remove(filepath.Join(lib, old)))
	kept := readTree(t, lib)
	_, err = Recover(lib, nil)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "marked done but is not")
	assert.Equal(t, kept, readTree(t, lib), "nothing touched")
}
