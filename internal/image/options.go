package image

import (
	"github.com/streamfusion/image-entrypoint/internal/image/deep"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Update is the progress of one layer (flatten.Update); Op "deep" and
// "classes" are the deep check's.
type Update = flatten.Update

// JobJAR is a JAR of this machine placed into an image's usrlib for the
// deep check (deep.JobJAR).
type JobJAR = deep.JobJAR

// ErrLayer is returned, wrapped with the layer and entry, for layer
// contents this tool will not trust.
var ErrLayer = flatten.ErrLayer

// VerifyOptions say how Verify and Bake read layers.
type VerifyOptions struct {
	// Cache holds layer facts across runs; nil: every layer is read.
	// It holds the deep check's results too (deepcache.go), keyed by
	// the image's layers, environment and platform and by this build: a
	// deep check of an image whose result is there reads no layer for it.
	Cache *layercache.Cache
	// NoDeepCache keeps the deep check's results out of Cache (the layer
	// facts stay in it): every deep check reads the JARs' bytes.
	NoDeepCache bool
	// Progress receives updates while layers are read; it is called from
	// several goroutines, never at once.
	Progress func(Update)
	// TempDir is where large JARs are spooled while read; "": os.TempDir.
	TempDir string
	// Workers is the number of layers read at once; 0: 2.
	Workers int
	// Budget bounds the bytes written below TempDir at once: each large
	// JAR spooled while its layer is read and each copy the deep check
	// keeps is reserved before it is written, waiting while it does not
	// fit, and released when the file is removed. nil: unbounded.
	Budget *spool.Budget

	// Deep runs the deep check as well (shadowing, linkage-*,
	// bytecode-version): the JARs of lib and usrlib the merged image ends
	// with are copied out of their layers into a private temporary
	// directory below TempDir (as the layers are read; the layers whose
	// facts came from Cache are read again for them), removed before
	// Verify or Bake returns, and their classes judged by the same code
	// and rules as `streamfusion check` on a directory. An image whose config sets STREAMFUSION_LINKAGE=true
	// is checked deep whatever Deep says, as its entrypoint would be at
	// start. Images beyond the deep check's bounds fail with deep.ErrLimit.
	Deep bool
	// JobJARs are JARs of this machine placed into the image's usrlib for
	// the check, as a session job's JAR is loaded (child-first over lib);
	// they imply Deep. Every rule judges them as files of usrlib, so the
	// verdict is about the image with these JARs, not about the image:
	// two checks of one image digest with different job JARs can differ,
	// and a cache of verdicts must key them by the JARs' contents too.
	JobJARs []JobJAR
}

// run is one verification's or bake's state beside its options, which it
// never writes: the copies of JARs the deep check keeps (nil when the
// check is not deep).
type run struct {
	VerifyOptions
	keep *deep.Copies
}

// flat is how the run reads layers: with its options, handing every JAR
// read to its copies when it keeps any.
func (o *run) flat() flatten.Options {
	f := flatten.Options{Cache: o.Cache, Progress: o.Progress, TempDir: o.TempDir, Workers: o.Workers, Budget: o.Budget}
	if o.keep != nil {
		f.Keep = o.keep // never a nil *deep.Copies in the interface
	}
	return f
}
