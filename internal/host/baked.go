package host

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/jvm"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// VerdictFile is the file inside lib that `streamfusion bake` and
// `install` write: the deep verdict of the lib they produced and its
// class index (internal/baked). Not a *.jar: Flink's classpath never
// sees it.
const VerdictFile = ".streamfusion-deep-verdict"

// bakedFile is a verdict file found in lib: its header read, or why not.
type bakedFile struct {
	path string // absolute
	v    *baked.Verdict
	err  error
}

// readVerdict reads the header of lib's verdict file; nil when lib has
// none. Only the header is read (the class index is read when usrlib
// needs it).
func readVerdict(fsys fs.FS, libDir string) *bakedFile {
	p := path.Join(path.Clean(libDir), VerdictFile)
	f, _, info, err := rootfs.OpenRegular(fsys, rel(p))
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	b := &bakedFile{path: p}
	if err != nil {
		b.err = err
		return b
	}
	defer f.Close()
	r, ok := f.(io.ReaderAt)
	if !ok {
		b.err = fmt.Errorf("no random access to %s", p)
		return b
	}
	want := min(info.Size(), 16<<10)
	for range 2 {
		buf := make([]byte, want)
		n, err := r.ReadAt(buf, 0)
		if err != nil && !errors.Is(err, io.EOF) {
			b.err = err
			return b
		}
		v, need, err := baked.DecodeHeader(buf[:n])
		switch {
		case err != nil:
			b.err = err
			return b
		case v != nil:
			b.v = v
			return b
		case need > info.Size():
			b.err = fmt.Errorf("%w: the file ends at %d bytes, inside its header (truncated)", baked.ErrFormat, info.Size())
			return b
		}
		want = need
	}
	b.err = fmt.Errorf("%w: the header could not be read whole", baked.ErrFormat)
	return b
}

// readIndex reads the verdict's class index.
func (b *bakedFile) readIndex(fsys fs.FS) (*baked.Index, error) {
	f, _, info, err := rootfs.OpenRegular(fsys, rel(b.path))
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, ok := f.(io.ReaderAt)
	if !ok {
		return nil, fmt.Errorf("no random access to %s", b.path)
	}
	n := info.Size() - b.v.IndexAt()
	if n < 0 || n > baked.MaxIndex+16 {
		return nil, fmt.Errorf("%w: a class index of %d bytes", baked.ErrFormat, n)
	}
	buf := make([]byte, n)
	if k, err := r.ReadAt(buf, b.v.IndexAt()); int64(k) < n {
		return nil, fmt.Errorf("read the class index: %w", err)
	}
	return baked.DecodeIndex(buf, len(b.v.Lib))
}

// gatherBaked gives the deep facts of a start that applies lib's baked
// verdict (Settings.Baked), and the sentence the log says of it:
//   - no verdict file: no deep facts, as before (the rules stay quiet);
//   - a verdict that cannot be read, or of another format, rule
//     catalogue or JDK, or a lib that differs from it by one JAR: the
//     deep facts in full (gatherDeep), the first with a finding;
//   - lib and usrlib as baked: the verdict's findings, nothing read;
//   - lib as baked, usrlib not: the verdict's findings on lib, and
//     usrlib's JARs judged against the verdict's class index.
//
// It is long because it is the three cases above, in order, each a few
// reads.
func gatherBaked(ctx context.Context, fsys fs.FS, s Settings, f *admission.Facts, b *bakedFile) (*admission.Deep, string) {
	lib := path.Clean(s.LibDir)
	if b == nil {
		return nil, "linkage not checked at this start: lib holds no baked deep verdict (" + path.Join(lib, VerdictFile) + ", written by streamfusion bake or check --write-verdict); STREAMFUSION_LINKAGE=true checks it in full"
	}
	full := func(err error, why string) (*admission.Deep, string) {
		d := gatherDeep(ctx, fsys, f)
		d.VerdictErr, d.VerdictPath = err, b.path
		return d, why + ": shadowing and linkage checked in full"
	}
	if b.err != nil {
		return full(b.err, "the baked deep verdict "+b.path+" cannot be used")
	}
	v := b.v.Moved(path.Dir(lib)) // a lib copied elsewhere is the same lib
	if stamp := admission.RulesStamp(); v.Rules != stamp {
		return full(fmt.Errorf("%w: judged with rule catalogue %s, this entrypoint's is %s", baked.ErrFormat, v.Rules, stamp),
			"the baked deep verdict "+b.path+" was judged by other rules")
	}
	if jv, err := admission.ParseJava(f.JDK.Version); err != nil || jv.Major != v.JDKMajor {
		return full(nil, fmt.Sprintf("the baked deep verdict was judged for Java %d, this start's JDK is %q", v.JDKMajor, f.JDK.Version))
	}
	if diff := differs(f.Classpath, v.Lib); diff != "" {
		return full(nil, "lib differs from its baked deep verdict ("+diff+")")
	}
	usrlibDir := path.Join(path.Dir(lib), "usrlib")
	// Plugins are judged at every start that has one to judge, never
	// from the verdict (its key is lib and usrlib): the verdict's findings
	// on plugins are dropped.
	var plugins admission.Deep
	openPlugins(ctx, fsys, f, &plugins, nil)
	var fromVerdict []admission.Finding
	for _, fd := range v.Findings {
		if !underPlugins(f, fd.Path) {
			fromVerdict = append(fromVerdict, fd)
		}
	}
	usrlibSame := differs(f.Usrlib, v.Usrlib) == ""
	if usrlibSame && len(plugins.Plugins) == 0 {
		return &admission.Deep{Baked: &admission.Baked{From: b.path, Findings: fromVerdict}, VerdictPath: b.path},
			fmt.Sprintf("the baked deep verdict applies: %d JARs of lib and %d of usrlib unchanged since it was baked (%s)", len(f.Classpath), len(f.Usrlib), b.path)
	}
	d := &admission.Deep{VerdictPath: b.path, ParentFirstFrom: v.ParentFirstFrom,
		Plugins: plugins.Plugins, PluginParentFirst: plugins.PluginParentFirst, PluginParentFirstFrom: plugins.PluginParentFirstFrom}
	var scopes []jvm.PrewalkScope
	if !usrlibSame { // else the verdict's findings on usrlib stand
		d.Usrlib = make([]*payload.Archive, len(f.Usrlib))
	}
	for i, j := range f.Usrlib {
		if usrlibSame || ctx.Err() != nil || j.Err != nil {
			continue
		}
		if a, err := payload.OpenArchive(fsys, rel(j.Path)); err == nil {
			d.Usrlib[i] = a
			scopes = append(scopes, jvm.PrewalkScope{JAR: a, Roots: jvm.EntryPoints(j, a)})
		}
	}
	d.ParentFirst = append(d.ParentFirst, v.ParentFirst...)
	d.ParentFirstDefault = len(d.ParentFirst)
	if extra, from := additionalParentFirst(f.Config, keyParentFirstAdditional); len(extra) > 0 {
		d.ParentFirst = append(d.ParentFirst, extra...)
		d.ParentFirstFrom += "; " + keyParentFirstAdditional + " from " + from
	}
	// usrlib's own classes are parsed while lib's index is decoded: the
	// walk of the linkage rules takes them as parsed (jvm.Prewalk).
	if len(scopes) > 0 {
		d.Prewalk = jvm.StartPrewalk(d.Usrlib, scopes, d.ParentFirst)
	}
	ix, err := b.readIndex(fsys)
	if err != nil {
		d.Close()
		return full(err, "the baked deep verdict's class index "+b.path+" cannot be used")
	}
	byArchive := make(map[*payload.Archive]int, len(v.Lib))
	for i, j := range v.Lib {
		a := payload.IndexedArchive(j.Path, ix.JARs[i].Classes)
		byArchive[a] = i
		d.Lib = append(d.Lib, a)
	}
	var kept []admission.Finding
	for _, fd := range fromVerdict {
		if usrlibSame || !strings.HasPrefix(fd.Path, usrlibDir+"/") {
			kept = append(kept, fd)
		}
	}
	d.Baked = &admission.Baked{From: b.path, Findings: kept,
		Classes: func(a *payload.Archive, name string) (*classfile.Class, error, bool) {
			i, ok := byArchive[a]
			if !ok {
				return nil, nil, false
			}
			c, err := ix.Class(i, name)
			return c, err, true
		}}
	if err := ctx.Err(); err != nil {
		d.Err = err
	}
	if usrlibSame {
		return d, fmt.Sprintf("the baked deep verdict applies to lib and usrlib (%d and %d JARs unchanged since it was baked, %s); plugins judged against its class index: %d",
			len(f.Classpath), len(f.Usrlib), b.path, len(plugins.Plugins))
	}
	return d, fmt.Sprintf("the baked deep verdict applies to lib (%d JARs unchanged since it was baked, %s); usrlib's %d JARs judged against its class index, "+
		"at every start until the image's build judges them once (RUN [\"/docker-entrypoint.sh\", \"streamfusion\", \"check\", \"--write-verdict\"] after the COPY)", len(f.Classpath), b.path, len(f.Usrlib))
}

// underPlugins says whether a finding's path is below the plugins
// directory (a plugin's JAR).
func underPlugins(f *admission.Facts, p string) bool {
	return f.FileSystems != nil && f.FileSystems.PluginsDir != "" && strings.HasPrefix(p, f.FileSystems.PluginsDir+"/")
}

// differs says how jars differ from the verdict's (added, changed,
// removed, reordered; the first few), "" when they do not.
func differs(jars []*payload.JAR, baked []baked.JAR) string {
	same := len(jars) == len(baked)
	for i := 0; same && i < len(jars); i++ {
		same = jars[i].Err == nil && jars[i].Path == baked[i].Path && jars[i].Fingerprint == baked[i].Fingerprint
	}
	if same {
		return ""
	}
	was := map[string]payload.Fingerprint{}
	for _, j := range baked {
		was[j.Path] = j.Fingerprint
	}
	var out []string
	now := map[string]bool{}
	for _, j := range jars {
		now[j.Path] = true
		fp, ok := was[j.Path]
		switch {
		case !ok:
			out = append(out, j.Path+" added")
		case j.Err != nil || fp != j.Fingerprint:
			out = append(out, j.Path+" changed")
		}
	}
	for _, j := range baked {
		if !now[j.Path] {
			out = append(out, j.Path+" removed")
		}
	}
	if len(out) == 0 {
		return "the classpath's order changed"
	}
	if len(out) > 3 {
		out = append(out[:3], fmt.Sprintf("%d more", len(out)-3))
	}
	return strings.Join(out, ", ")
}
