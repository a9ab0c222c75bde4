package install

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/host"
)

// StageName is the directory inside lib that holds an install's new files
// until they are renamed into place, and the files they replace once moved
// aside. Its names never end in .jar, so Flink's classpath never sees them.
const StageName = ".streamfusion-install.stage"

// JournalName is host.InstallJournal: the file inside lib that says an
// install has begun and not finished. The entrypoint's one look for it is
// a stat of this fixed name.
const JournalName = host.InstallJournal

const journalMagic = "streamfusion-install-journal 1"

// Step kinds of a journal.
const (
	stepAside = "aside" // lib/Name -> stage/File: a file that goes, or is replaced
	stepPlace = "place" // stage/File -> lib/Name: a new file into place
)

// step is one rename of an install, in the order Apply makes them: every
// aside first, then every place.
type step struct {
	Op   string `json:"op"`
	Name string `json:"name"` // below lib, slash separated
	File string `json:"file"` // in the stage: N.old or N.new
}

// header is the journal's first record: what the install will do.
type header struct {
	Lib   string `json:"lib"` // for people reading it; recovery uses the journal's own directory
	Steps []step `json:"steps"`
}

// Marks appended to the journal as the install goes, one a line.
const (
	markStaged     = "staged"      // every new file is complete in the stage; renames may begin
	markDone       = "done"        // "done N": step N is done (and synced)
	markCommitted  = "committed"   // every step done: the install stands
	markRolledBack = "rolled-back" // every done step undone: lib is as before
)

// journal is a parsed journal file.
type journal struct {
	header
	staged, committed, rolledBack bool
	done                          map[int]bool
}

var stageFile = regexp.MustCompile(`^[0-9]{1,6}\.(old|new)$`)

// errJournal is a journal that cannot be read as one Apply writes.
var errJournal = errors.New("install journal unreadable")

// parseJournal reads a journal. A last line without its line end is the
// write a crash cut short and is ignored; anything else that is not a
// journal Apply writes is an error wrapping errJournal, and the header is
// reported as missing (complete == false) when the crash cut the header
// itself.
func parseJournal(data []byte) (j *journal, complete bool, err error) {
	lines := bytes.Split(data, []byte("\n"))
	lines = lines[:len(lines)-1] // the part after the last line end: torn, or empty
	if len(lines) < 2 {
		if len(lines) == 1 && string(lines[0]) != journalMagic {
			return nil, false, fmt.Errorf("%w: first line %q, want %q", errJournal, clip(lines[0]), journalMagic)
		}
		return nil, false, nil
	}
	if string(lines[0]) != journalMagic {
		return nil, false, fmt.Errorf("%w: first line %q, want %q", errJournal, clip(lines[0]), journalMagic)
	}
	j = &journal{done: map[int]bool{}}
	dec := json.NewDecoder(bytes.NewReader(lines[1]))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&j.header); err != nil {
		return nil, false, fmt.Errorf("%w: header: %w", errJournal, err)
	}
	files := map[string]bool{}
	for i, s := range j.Steps {
		if s.Op != stepAside && s.Op != stepPlace {
			return nil, false, fmt.Errorf("%w: step %d: op %q", errJournal, i, clip([]byte(s.Op)))
		}
		if !filepath.IsLocal(filepath.FromSlash(s.Name)) || !strings.HasSuffix(s.Name, ".jar") || strings.Contains(s.Name, "\\") {
			return nil, false, fmt.Errorf("%w: step %d: name %q is not a JAR below lib", errJournal, i, clip([]byte(s.Name)))
		}
		if !stageFile.MatchString(s.File) || files[s.File] || (s.Op == stepAside) != strings.HasSuffix(s.File, ".old") {
			return nil, false, fmt.Errorf("%w: step %d: stage file %q", errJournal, i, clip([]byte(s.File)))
		}
		files[s.File] = true
	}
	for _, l := range lines[2:] {
		switch m := string(l); {
		case m == markStaged:
			j.staged = true
		case m == markCommitted:
			j.committed = true
		case m == markRolledBack:
			j.rolledBack = true
		case strings.HasPrefix(m, markDone+" "):
			n, err := strconv.Atoi(strings.TrimPrefix(m, markDone+" "))
			if err != nil || n < 0 || n >= len(j.Steps) {
				return nil, false, fmt.Errorf("%w: mark %q", errJournal, clip(l))
			}
			j.done[n] = true
		case torn(m):
			// A mark a power cut cut short, followed by the line end a
			// recovery wrote before its own mark: it was never on disk.
		default:
			return nil, false, fmt.Errorf("%w: mark %q", errJournal, clip(l))
		}
	}
	return j, true, nil
}

// torn says whether m is a mark cut short ("done 1" cut from "done 12" is
// a whole mark, and true: steps are done in order).
func torn(m string) bool {
	for _, full := range []string{markStaged, markCommitted, markRolledBack, markDone + " "} {
		if len(m) < len(full) && strings.HasPrefix(full, m) {
			return true
		}
	}
	return false
}

func clip(b []byte) string {
	if len(b) > 80 {
		return string(b[:80]) + "..."
	}
	return string(b)
}

// journalHeader is the bytes Apply writes first: the magic line and the
// header, each ended by a line end.
func journalHeader(h header) ([]byte, error) {
	b, err := json.Marshal(h)
	if err != nil {
		return nil, err
	}
	return []byte(journalMagic + "\n" + string(b) + "\n"), nil
}
