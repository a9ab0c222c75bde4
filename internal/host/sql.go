package host

import (
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/sqlscan"
)

// Bounds on the SQL files read.
const (
	maxSQLFiles = 64 // files read, usrlib's and the named ones together
	maxSQLDepth = 3  // directories below usrlib walked
)

// programArgs is the configuration key of an application's job arguments
// (the Kubernetes operator's application mode writes it).
const programArgs = "$internal.application.program-args"

// gatherSQL reads the SQL files the process may run: those its arguments
// or the application's program-args name (absolute paths ending in .sql),
// and every *.sql file below usrlib (at most three directories down).
// Each is read up to sqlscan.MaxBytes and scanned for the table factories
// it names; one that cannot be read says why.
func gatherSQL(fsys fs.FS, s Settings, f *admission.Facts) []admission.SQLFile {
	named := map[string]bool{}
	var order []string
	add := func(p string, isNamed bool) {
		p = path.Clean(p)
		if _, seen := named[p]; !seen {
			if len(order) >= maxSQLFiles {
				return
			}
			order = append(order, p)
		}
		named[p] = named[p] || isNamed
	}
	for _, a := range s.Args {
		if path.IsAbs(a) && strings.HasSuffix(a, ".sql") {
			add(a, true)
		}
	}
	if e, ok := flinkconf.Last(f.Config.Entries, programArgs); ok {
		for _, a := range strings.Split(e.Value, ";") {
			if a = strings.TrimSpace(a); path.IsAbs(a) && strings.HasSuffix(a, ".sql") {
				add(a, true)
			}
		}
	}
	usrlib := path.Join(path.Dir(path.Clean(s.LibDir)), "usrlib")
	var walk func(dir string, depth int)
	walk = func(dir string, depth int) {
		entries, err := fs.ReadDir(fsys, rel(dir))
		if err != nil {
			return
		}
		for _, e := range entries {
			p := path.Join(dir, e.Name())
			switch {
			case e.IsDir() && depth < maxSQLDepth:
				walk(p, depth+1)
			case e.Type().IsRegular() && strings.HasSuffix(e.Name(), ".sql"):
				add(p, false)
			}
		}
	}
	walk(usrlib, 0)
	var out []admission.SQLFile
	for _, p := range order {
		sf := admission.SQLFile{Path: p, Named: named[p]}
		data, err := readSQL(fsys, p)
		if err != nil {
			sf.Err = err.Error()
		} else {
			r := sqlscan.Scan(data)
			sf.Uses, sf.AddsCode, sf.Truncated = r.Uses, r.AddsCode, r.Truncated
		}
		out = append(out, sf)
	}
	return out
}

// readSQL reads a regular file (through links within the root) of at
// most sqlscan.MaxBytes.
func readSQL(fsys fs.FS, p string) ([]byte, error) {
	f, _, info, err := rootfs.OpenRegular(fsys, rel(p))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if info.Size() > sqlscan.MaxBytes {
		return nil, fmt.Errorf("%s is %d bytes, more than the %d this tool reads", p, info.Size(), sqlscan.MaxBytes)
	}
	return io.ReadAll(io.LimitReader(f, sqlscan.MaxBytes))
}
