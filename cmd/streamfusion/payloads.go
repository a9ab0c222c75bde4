package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// resolved is one PAYLOAD argument, read.
type resolved struct {
	Arg  string // as the user typed it
	Path string // the local file it came from
	Name string // its file name
	Data []byte
}

// coordinates are group:artifact:version[:classifier].
var coordinates = regexp.MustCompile(`^[A-Za-z0-9_.-]+:[A-Za-z0-9_.-]+:[A-Za-z0-9_.+-]+(:[A-Za-z0-9_.-]+)?$`)

// isCoordinates says whether arg is Maven coordinates rather than a path: it
// is when no file of that name exists and it has the coordinates' shape.
func isCoordinates(arg string) bool {
	if _, err := os.Lstat(arg); err == nil {
		return false
	}
	return coordinates.MatchString(arg) && !strings.ContainsAny(arg, `/\`)
}

// readLocal reads a payload given as a path. A missing file is "no such
// file": it is never looked up anywhere else.
func readLocal(flag, arg string) (resolved, error) {
	info, err := os.Stat(arg)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return resolved{}, fmt.Errorf("%s%s: no such file", flag, arg)
		}
		return resolved{}, fmt.Errorf("%s%s: %w", flag, arg, err)
	}
	if !info.Mode().IsRegular() {
		return resolved{}, fmt.Errorf("%s%s: not a regular file", flag, arg)
	}
	if !strings.HasSuffix(arg, ".jar") {
		return resolved{}, fmt.Errorf("%s%s: not a *.jar file name", flag, arg)
	}
	data, err := os.ReadFile(arg)
	if err != nil {
		return resolved{}, fmt.Errorf("%s%s: %w", flag, arg, err)
	}
	return resolved{Arg: arg, Path: arg, Name: filepath.Base(arg), Data: data}, nil
}

// sameNames refuses two arguments that would land under one file name.
func sameNames(flag string, rs []resolved) error {
	seen := map[string]string{}
	for _, r := range rs {
		if prev, ok := seen[r.Name]; ok {
			return usagef("%s%s and %s%s have the same file name %s: only one can be installed under it", flag, prev, flag, r.Arg, r.Name)
		}
		seen[r.Name] = r.Arg
	}
	return nil
}

func mustAbs(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return p
	}
	return abs
}

func describeID(id *admission.Identity) string {
	if id == nil {
		return "not StreamFusion content"
	}
	return id.String()
}

func lookupEnv(env []string, key string) (string, bool) { return settings.Lookup(env, key) }
