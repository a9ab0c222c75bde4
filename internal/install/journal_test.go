package install

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func sampleJournal(t testing.TB) []byte {
	t.Helper()
	b, err := journalHeader(header{Lib: "/opt/flink/lib", Steps: []step{
		{Op: stepAside, Name: "streamfusion-loader-0.1.0.jar", File: "3.old"},
		{Op: stepAside, Name: "sub/json.jar", File: "4.old"},
		{Op: stepPlace, Name: "00-streamfusion-loader.jar", File: "0.new"},
	}})
	require.NoError(t, err)
	return b
}

func TestParseJournal(t *testing.T) {
	head := string(sampleJournal(t))
	for _, tc := range []struct {
		name, data string
		complete   bool
		err        string
		check      func(*testing.T, *journal)
	}{
		{name: "empty", data: ""},
		{name: "magic cut short", data: journalMagic[:5]},
		{name: "header cut short", data: head[:len(head)-9]},
		{name: "header only", data: head, complete: true, check: func(t *testing.T, j *journal) {
			assert.False(t, j.staged)
			assert.Len(t, j.Steps, 3)
		}},
		{name: "marks, the last cut short", data: head + "staged\ndone 0\ndone 1\ncommi", complete: true, check: func(t *testing.T, j *journal) {
			assert.True(t, j.staged)
			assert.Equal(t, map[int]bool{0: true, 1: true}, j.done)
			assert.False(t, j.committed)
		}},
		{name: "a cut mark ended by a recovery's own", data: head + "staged\ndone 0\ndo\nrolled-back\n", complete: true, check: func(t *testing.T, j *journal) {
			assert.True(t, j.rolledBack)
		}},
		{name: "another magic", data: "streamfusion-install-journal 2\n{}\n", err: "first line"},
		{name: "a header that is not JSON", data: journalMagic + "\nnot json\n", err: "header"},
		{name: "an unknown field", data: journalMagic + "\n{\"lib\":\"/l\",\"steps\":[],\"x\":1}\n", err: "header"},
		{name: "a step out of lib", data: journalMagic + "\n{\"steps\":[{\"op\":\"aside\",\"name\":\"../../etc/passwd.jar\",\"file\":\"0.old\"}]}\n", err: "not a JAR below lib"},
		{name: "an absolute step", data: journalMagic + "\n{\"steps\":[{\"op\":\"aside\",\"name\":\"/etc/x.jar\",\"file\":\"0.old\"}]}\n", err: "not a JAR below lib"},
		{name: "a stage file out of the stage", data: journalMagic + "\n{\"steps\":[{\"op\":\"place\",\"name\":\"x.jar\",\"file\":\"../x.new\"}]}\n", err: "stage file"},
		{name: "an aside into a .new", data: journalMagic + "\n{\"steps\":[{\"op\":\"aside\",\"name\":\"x.jar\",\"file\":\"0.new\"}]}\n", err: "stage file"},
		{name: "a stage file twice", data: journalMagic + "\n{\"steps\":[{\"op\":\"place\",\"name\":\"x.jar\",\"file\":\"0.new\"},{\"op\":\"place\",\"name\":\"y.jar\",\"file\":\"0.new\"}]}\n", err: "stage file"},
		{name: "a done mark beyond the steps", data: head + "done 3\n", err: "mark"},
		{name: "an unknown mark", data: head + "maybe\n", err: "mark"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j, complete, err := parseJournal([]byte(tc.data))
			if tc.err != "" {
				require.ErrorIs(t, err, errJournal)
				assert.Contains(t, err.Error(), tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.complete, complete)
			if tc.check != nil {
				tc.check(t, j)
			}
		})
	}
}

// The journal is read back from lib, which anyone who can write lib can
// shape: any bytes are an error or a journal whose every step stays inside
// lib and the stage, never a panic.
func FuzzParseJournal(f *testing.F) {
	head := sampleJournal(f)
	f.Add(head)
	f.Add(append(append([]byte{}, head...), "staged\ndone 0\ndone 1\ncommitted\n"...))
	f.Add(append(append([]byte{}, head...), "staged\ndone 0\nd"...))
	f.Add([]byte(journalMagic + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		j, complete, err := parseJournal(data)
		if err != nil || !complete {
			return
		}
		for _, s := range j.Steps {
			if !filepath.IsLocal(filepath.FromSlash(s.Name)) || !strings.HasSuffix(s.Name, ".jar") {
				t.Fatalf("step name %q escapes lib", s.Name)
			}
			if !filepath.IsLocal(s.File) || strings.ContainsAny(s.File, "/\\") {
				t.Fatalf("stage file %q escapes the stage", s.File)
			}
		}
		for n := range j.done {
			if n < 0 || n >= len(j.Steps) {
				t.Fatalf("done mark %d of %d steps", n, len(j.Steps))
			}
		}
	})
}
