package source

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strings"
)

// ErrNoSuchFile is a local image path that does not exist.
var ErrNoSuchFile = errors.New("no such file or directory")

// CheckLocal refuses a reference that names a local file the user typed
// but that is not there: a path (absolute, ./, ../, ~/), a name with a
// file suffix (.tar, .tar.gz, .tgz, .oci), or a name whose first component
// is an existing directory. Otherwise, a mistyped tarball name would become
// a registry lookup of an image of that name.
func CheckLocal(ref string) error {
	if _, err := os.Stat(ref); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	looksLocal := strings.HasPrefix(ref, "/") || strings.HasPrefix(ref, "./") || strings.HasPrefix(ref, "../") ||
		strings.HasPrefix(ref, "~/") || ref == "." || ref == ".."
	for _, suf := range []string{".tar", ".tar.gz", ".tgz", ".oci"} {
		looksLocal = looksLocal || strings.HasSuffix(ref, suf)
	}
	if first, _, ok := strings.Cut(ref, "/"); ok && !strings.ContainsAny(first, ".:") {
		if info, err := os.Stat(first); err == nil && info.IsDir() {
			looksLocal = true
		}
	}
	if looksLocal {
		return fmt.Errorf("%s: %w (a local image is a 'docker save' tarball or an OCI layout directory)", ref, ErrNoSuchFile)
	}
	return nil
}
