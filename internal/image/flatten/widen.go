package flatten

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"slices"
	"strings"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// maxReadings bounds how often one verdict reads an image's layers.
const maxReadings = 3

// Read reads img's layers into facts, and returns them with their merged
// view; sel says what the first reading keeps (NewSelection: what the
// configured payload directories hold). Links decide what a container
// really reads, and they are known only once the layers are merged: when
// the merged view shows a payload directory reached through a link
// (/opt/flink -> /opt/flink-2.2.1) or a JAR in one that links outside
// (lib/x.jar -> ../opt/x.jar), the layers are read again keeping that too.
// Images without such links are read once; the cache keeps each reading.
func Read(ctx context.Context, img v1.Image, sel *Selection, o Options) ([]*Facts, *View, error) {
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("read image config: %w", err)
	}
	diffIDs := cfg.RootFS.DiffIDs
	ls := o.layersOf(img, diffIDs)
	for reading := 1; ; reading++ {
		facts, err := o.readFacts(ctx, ls, len(diffIDs), sel)
		if err != nil {
			return nil, nil, err
		}
		v := Merge(facts)
		if reading == maxReadings {
			return facts, v, nil
		}
		wider := sel.widen(v)
		if wider == nil {
			return facts, v, nil
		}
		sel = wider
	}
}

// widen returns the selection with what v shows it missed, or nil when it
// missed nothing: the directories the payload directories' links lead to,
// the files outside the payload directories that links to *.jar in them
// lead to, and where links lead the files kept whole (Flink's config).
// Only a missing last name can be a file the scan left out: every
// directory and link is kept (or implied), so a link that misses a
// directory on the way is dangling in the image too and is left to
// admission, as is a target still missing once kept.
func (s *Selection) widen(v *View) *Selection {
	dirs := slices.Clone(s.dirs)
	for _, d := range s.dirs {
		target, info, err := rootfs.Resolve(v.FS, strings.TrimSuffix(d, "/"))
		if err == nil && info.IsDir() && !slices.Contains(dirs, target+"/") {
			dirs = append(dirs, target+"/")
		}
	}
	wider := &Selection{dirs: dirs, small: maps.Clone(s.small), jars: maps.Clone(s.jars), native: s.native, libDirs: s.libDirs}
	if wider.jars == nil {
		wider.jars = map[string]bool{}
	}
	grew := len(dirs) > len(s.dirs)
	for name := range s.small {
		var dangling *rootfs.DanglingError
		if _, _, err := rootfs.Resolve(v.FS, name); errors.As(err, &dangling) && dangling.Missing == dangling.Target && !wider.small[dangling.Target] {
			wider.small[dangling.Target] = true
			grew = true
		}
	}
	for name, f := range v.FS {
		if f.Mode&fs.ModeSymlink == 0 || !strings.HasSuffix(name, ".jar") || !wider.inDirs(name) {
			continue
		}
		var dangling *rootfs.DanglingError
		if _, _, err := rootfs.Resolve(v.FS, name); errors.As(err, &dangling) && dangling.Missing == dangling.Target && !wider.jars[dangling.Target] && !wider.inDirs(dangling.Target) {
			wider.jars[dangling.Target] = true
			grew = true
		}
	}
	if !grew {
		return nil
	}
	return wider
}

// inDirs reports whether name is below one of the payload directories.
func (s *Selection) inDirs(name string) bool {
	for _, d := range s.dirs {
		if strings.HasPrefix(name, d) {
			return true
		}
	}
	return false
}
