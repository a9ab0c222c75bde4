package image

import (
	"archive/tar"
	"bytes"
	"context"
	"debug/elf"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"path"
	"sort"
	"strings"

	"github.com/klauspost/compress/gzip"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/baked"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/image/deep"
	"github.com/streamfusion/image-entrypoint/internal/image/flatten"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/memfs"
	"github.com/streamfusion/image-entrypoint/internal/payload"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// The layout every StreamFusion image has; the Dockerfile lays out the same
// paths (a test holds the two together).
const (
	EntrypointPath = flatten.EntrypointPath
	OriginalPath   = settings.DefaultOriginal // Flink's own script, moved aside
	EntrypointMode = 0o555
	PayloadMode    = 0o644
)

// Annotations added to baked manifests.
const (
	AnnotationBaseName   = "org.opencontainers.image.base.name"
	AnnotationBaseDigest = "org.opencontainers.image.base.digest"
)

// File is a payload JAR to install.
type File struct {
	Name   string // file name in lib
	Data   []byte
	Source string // the argument that named it ("--payload PATH"), for messages
	Stock  bool   // a stock JAR (a connector, a format): installed as it is, not a payload
}

// BakeOptions say what bake adds.
type BakeOptions struct {
	Read       VerifyOptions // how the base's layers are read
	Entrypoint []byte        // the entrypoint binary for the image's platform
	Payloads   []File
	Usrlib     []File // job JARs for usrlib, beside lib
	Epoch      int64  // SOURCE_DATE_EPOCH: every timestamp bake writes
	BaseName   string
	// DeepVerdict checks the baked image deep (shadowing and linkage)
	// and writes its verdict and class index into lib (host.VerdictFile,
	// internal/baked), which every start then applies for the price of
	// the JARs' fingerprints.
	DeepVerdict bool
}

// Refused is an image that would not start: its findings.
type Refused struct {
	Platform v1.Platform
	Decision *admission.Decision
	Sources  map[string]string // image path -> what the user named the file by
}

func (r *Refused) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "the %s image would be refused at start:", r.Platform.String())
	for _, f := range r.Decision.Errors() {
		b.WriteString("\n  [" + f.Rule + "] " + f.Text())
		if src, ok := r.Sources[f.Path]; ok {
			b.WriteString(" (from " + src + ")")
		}
	}
	return b.String()
}

// Unwrap makes errors.Is(err, admit.ErrRefused) hold.
func (r *Refused) Unwrap() error { return admit.ErrRefused }

// Bake appends the StreamFusion layer to one image and verifies the result.
// The base's layers are kept as they are (same blobs, same digests); each
// is read once, or not at all when opt.Read.Cache knows it, and the
// verification of the result reuses what was read.
//
// It is long because it is the bake's steps in order (read the base, check
// it, write the layer, verify the result, write the deep verdict), each a
// call.
func Bake(ctx context.Context, base v1.Image, opt BakeOptions) (v1.Image, *Result, error) {
	cfg, err := base.ConfigFile()
	if err != nil {
		return nil, nil, fmt.Errorf("read base config: %w", err)
	}
	if err := checkMachine(opt.Entrypoint, cfg.Architecture); err != nil {
		return nil, nil, err
	}
	c, err := settings.FromEnv(cfg.Config.Env)
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	sel := flatten.NewSelection(c, cfg.Architecture)
	r := &run{VerifyOptions: opt.Read}
	r.Deep = r.Deep || opt.DeepVerdict // the run's copy: opt is not written
	if r.deepWanted(c) {
		if r.keep, err = deep.NewCopies(r.TempDir, r.Budget); err != nil {
			return nil, nil, err
		}
		defer r.keep.Remove()
	}
	facts, baseView, err := flatten.Read(ctx, base, sel, r.flat())
	if err != nil {
		return nil, nil, err
	}
	layer, err := bakeLayer(baseView, c.LibDir, opt, nil)
	if err != nil {
		return nil, nil, err
	}
	img, err := bakedImage(base, layer, opt)
	if err != nil {
		return nil, nil, err
	}

	// Verify the result from the base's facts and the new layer's.
	top, err := flatten.ScanLayer(ctx, bytes.NewReader(layer), len(facts), sel, r.flat())
	if err != nil {
		return nil, nil, fmt.Errorf("verify the baked image: %w", err)
	}
	bakedCfg, err := img.ConfigFile()
	if err != nil {
		return nil, nil, err
	}
	bc, err := settings.FromEnv(bakedCfg.Config.Env)
	if err != nil {
		return nil, nil, fmt.Errorf("verify the baked image: %w: %w", ErrConfig, err)
	}
	all := append(facts[:len(facts):len(facts)], top)
	v := flatten.Merge(all)
	if r.keep == nil && r.deepWanted(bc) {
		// The base's settings did not ask for the deep check, the baked image's do.
		if r.keep, err = deep.NewCopies(r.TempDir, r.Budget); err != nil {
			return nil, nil, err
		}
		defer r.keep.Remove()
	}
	d, err := r.deep(ctx, img, all, v, bc)
	if err != nil {
		return nil, nil, fmt.Errorf("verify the baked image: %w", err)
	}
	var verdict []byte
	var verdictErr error
	var rules []admit.Rule
	if opt.DeepVerdict && d != nil {
		rules = append(rules, func(f *admission.Facts, dd *admission.Decision) []admission.Finding {
			verdict, verdictErr = baked.Build(f, dd) // the archives are open until the rules have run
			return nil
		})
	}
	res, err := decide(ctx, bakedCfg, bc, v, d, rules...)
	if err != nil {
		return nil, nil, fmt.Errorf("verify the baked image: %w", err)
	}
	if !res.Decision.Admitted() {
		return nil, res, &Refused{Platform: res.Platform, Decision: res.Decision, Sources: sources(c.LibDir, opt)}
	}
	if opt.DeepVerdict {
		if verdictErr != nil {
			return nil, nil, fmt.Errorf("bake the deep verdict: %w", verdictErr)
		}
		// The same layer with the verdict in lib: a file Flink's
		// classpath never sees, so the verdict of the image is the one
		// just reached.
		lib := strings.TrimPrefix(path.Clean("/"+c.LibDir), "/")
		if layer, err = bakeLayer(baseView, c.LibDir, opt, map[string][]byte{lib + "/" + host.VerdictFile: verdict}); err != nil {
			return nil, nil, err
		}
		if img, err = bakedImage(base, layer, opt); err != nil {
			return nil, nil, err
		}
		res.Verdict = len(verdict)
	}
	if d != nil {
		// The deep result of the image written, for a verify of it: the
		// verdict file in lib is no file of Flink's classpath, so the
		// image's deep findings are the ones just reached.
		if final, err := img.ConfigFile(); err == nil {
			r.deepCacheFor(final).put(ctx, bakedCfg, bc, v, res)
		}
	}
	return img, res, nil
}

// bakedImage appends the layer to base, with the image's environment,
// creation time and annotations.
func bakedImage(base v1.Image, layer []byte, opt BakeOptions) (v1.Image, error) {
	mt, err := base.MediaType()
	if err != nil {
		return nil, err
	}
	layerType := types.OCILayer
	if mt == types.DockerManifestSchema2 {
		layerType = types.DockerLayer
	}
	gz, err := compress(layer)
	if err != nil {
		return nil, err
	}
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(gz)), nil }, tarball.WithMediaType(layerType))
	if err != nil {
		return nil, err
	}
	created := v1.Time{Time: flatten.Epoch(opt.Epoch)}
	img, err := mutate.Append(base, mutate.Addendum{Layer: l, MediaType: layerType, History: v1.History{
		Created: created, CreatedBy: "streamfusion bake", Comment: "StreamFusion entrypoint and payloads",
	}})
	if err != nil {
		return nil, err
	}
	if img, err = mutate.CreatedAt(img, created); err != nil {
		return nil, err
	}
	anns := map[string]string{}
	if opt.BaseName != "" {
		anns[AnnotationBaseName] = opt.BaseName
	}
	if d, err := base.Digest(); err == nil {
		anns[AnnotationBaseDigest] = d.String()
	}
	return mutate.Annotations(img, anns).(v1.Image), nil
}

// compress gzips the new layer; klauspost's gzip is several times faster
// than the standard library's at the same ratio.
func compress(layer []byte) ([]byte, error) {
	var buf bytes.Buffer
	zw, err := gzip.NewWriterLevel(&buf, gzip.DefaultCompression)
	if err != nil {
		return nil, err
	}
	if _, err := zw.Write(layer); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// bakeLayer writes the layer: the entrypoint, Flink's script moved aside
// (unless a bake before us did), the payloads, and whiteouts for the
// StreamFusion payloads of an earlier bake that this one replaces. Every
// parent directory of what it writes carries the base's owner, group,
// mode and time, so that the layer changes no directory of the base.
// extra are more files to write, by name (the deep verdict).
//
// It is long because it writes each kind of entry above in order, each
// with its own header.
func bakeLayer(base *flatten.View, libDir string, opt BakeOptions, extra map[string][]byte) ([]byte, error) {
	entries := map[string]*tar.Header{}
	data := map[string][]byte{}
	add := func(name string, mode int64, b []byte) {
		entries[name] = &tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: mode, Size: int64(len(b)), ModTime: flatten.Epoch(opt.Epoch), Format: tar.FormatPAX}
		data[name] = b
	}
	orig := strings.TrimPrefix(OriginalPath, "/")
	if _, err := fs.Stat(base.FS, orig); err != nil {
		script, mode, err := readFollowing(base.FS, strings.TrimPrefix(EntrypointPath, "/"))
		if err != nil {
			return nil, fmt.Errorf("the base image has no %s to keep at %s: %w", EntrypointPath, OriginalPath, err)
		}
		add(orig, int64(mode|0o111), script)
	}
	add(strings.TrimPrefix(EntrypointPath, "/"), EntrypointMode, opt.Entrypoint)

	lib := strings.TrimPrefix(path.Clean("/"+libDir), "/")
	fresh := map[string]bool{}
	for _, p := range opt.Payloads {
		if p.Name == "" || strings.Contains(p.Name, "/") || !strings.HasSuffix(p.Name, ".jar") {
			return nil, fmt.Errorf("payload file name %q: want a plain *.jar name", p.Name)
		}
		fresh[p.Name] = true
		add(lib+"/"+p.Name, PayloadMode, p.Data)
	}
	if err := addUsrlib(entries, add, lib, opt); err != nil {
		return nil, err
	}
	for n, b := range extra {
		add(n, PayloadMode, b)
	}
	if verdict := lib + "/" + host.VerdictFile; !opt.DeepVerdict {
		if _, err := fs.Stat(base.FS, verdict); err == nil {
			// An earlier bake's verdict would not match what this one
			// changes: remove it rather than leave every start a full check.
			wh := lib + "/.wh." + host.VerdictFile
			entries[wh] = &tar.Header{Typeflag: tar.TypeReg, Name: wh, Mode: 0o644, ModTime: flatten.Epoch(opt.Epoch), Format: tar.FormatPAX}
		}
	}
	if len(opt.Payloads) > 0 {
		// Re-baking replaces the payloads of the bake before.
		old, _ := fs.ReadDir(base.FS, lib)
		for _, e := range old {
			if e.IsDir() || !strings.HasSuffix(e.Name(), ".jar") || fresh[e.Name()] {
				continue
			}
			j := base.ReadJAR(base.FS, lib+"/"+e.Name(), payload.Options{})
			if id := admission.Identify(j); id != nil {
				wh := lib + "/.wh." + e.Name()
				entries[wh] = &tar.Header{Typeflag: tar.TypeReg, Name: wh, Mode: 0o644, ModTime: flatten.Epoch(opt.Epoch), Format: tar.FormatPAX}
			}
		}
	}
	for n := range maps.Clone(entries) {
		for d := path.Dir(n); d != "."; d = path.Dir(d) {
			if h := parentDir(base.FS, d, opt.Epoch); h != nil {
				entries[d+"/"] = h
			}
		}
	}
	names := make([]string, 0, len(entries))
	for n := range entries {
		names = append(names, n)
	}
	sort.Strings(names)
	var buf bytes.Buffer
	size := 1024 // the end of the archive
	for _, n := range names {
		size += 3*512 + (len(data[n])+511)/512*512 // a header, PAX records, the data in blocks
	}
	buf.Grow(size) // not grown by doubling: the entrypoint and the verdict are megabytes
	tw := tar.NewWriter(&buf)
	for _, n := range names {
		if err := tw.WriteHeader(entries[n]); err != nil {
			return nil, err
		}
		if _, err := tw.Write(data[n]); err != nil {
			return nil, err
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// parentDir is the layer's entry for directory d: the base's owner, group,
// mode and time when the base has it; root's 0755 when it does not; none
// when the base has something else there (a link to a directory stays a
// link).
func parentDir(base memfs.FS, d string, sec int64) *tar.Header {
	h := &tar.Header{Typeflag: tar.TypeDir, Name: d + "/", Mode: 0o755, ModTime: flatten.Epoch(sec), Format: tar.FormatPAX}
	f, ok := base[d]
	if !ok {
		return h
	}
	n, isNode := f.Sys.(*flatten.Node)
	if !f.Mode.IsDir() || !isNode {
		return nil
	}
	if n.Implied {
		return h // no entry in the base: root's 0755 at the epoch
	}
	h.Mode, h.Uid, h.Gid, h.ModTime = n.Mode, n.UID, n.GID, flatten.Epoch(n.ModTime)
	return h
}

func readFollowing(fsys memfs.FS, name string) ([]byte, fs.FileMode, error) {
	target, info, err := rootfs.Resolve(fsys, name)
	if err != nil {
		return nil, 0, err
	}
	if !info.Mode().IsRegular() {
		return nil, 0, fmt.Errorf("/%s is not a regular file", target)
	}
	f := fsys[target]
	if n, ok := f.Sys.(*flatten.Node); ok && n.Size != int64(len(f.Data)) {
		return nil, 0, fmt.Errorf("/%s is %d bytes, more than a script this tool moves aside", target, n.Size)
	}
	return f.Data, info.Mode().Perm(), nil
}

// checkMachine refuses an entrypoint built for another architecture than
// the image's: it would fail with "exec format error" at every start.
func checkMachine(bin []byte, arch string) error {
	machine, err := elfMachine(bin)
	if err != nil {
		return fmt.Errorf("the entrypoint is not an ELF binary: %w", err)
	}
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	if want == 0 {
		return fmt.Errorf("no entrypoint for image architecture %q (built: linux/amd64, linux/arm64)", arch)
	}
	if machine != want {
		return fmt.Errorf("the entrypoint is built for %s, the image is %s: use the %s build (make dist)", machine, arch, arch)
	}
	return nil
}

// elfMachine reads the machine of an ELF file from its header alone (the
// layer facts keep no more of a large binary than its first 64 bytes).
func elfMachine(bin []byte) (elf.Machine, error) {
	if len(bin) < 20 || !bytes.HasPrefix(bin, []byte(elf.ELFMAG)) {
		return 0, errors.New("no ELF header")
	}
	switch elf.Class(bin[elf.EI_CLASS]) {
	case elf.ELFCLASS32, elf.ELFCLASS64:
	default:
		return 0, fmt.Errorf("unknown ELF class %d", bin[elf.EI_CLASS])
	}
	switch elf.Data(bin[elf.EI_DATA]) {
	case elf.ELFDATA2LSB:
		return elf.Machine(binary.LittleEndian.Uint16(bin[18:])), nil
	case elf.ELFDATA2MSB:
		return elf.Machine(binary.BigEndian.Uint16(bin[18:])), nil
	}
	return 0, fmt.Errorf("unknown ELF data encoding %d", bin[elf.EI_DATA])
}

// BakeAll bakes every image of the source (those of the platform asked
// for, when one is), and returns them as an index when the source was one.
func BakeAll(ctx context.Context, src *source.Set, want *v1.Platform, entrypoints map[string][]byte, opt BakeOptions) ([]source.Platformed, v1.ImageIndex, error) {
	imgs, err := src.Images(want)
	if err != nil {
		return nil, nil, err
	}
	var out []source.Platformed
	for _, p := range imgs {
		o := opt
		o.Entrypoint = entrypoints[p.Platform.Architecture]
		if o.Entrypoint == nil {
			return nil, nil, fmt.Errorf("no entrypoint binary for %s", p.Platform.String())
		}
		img, _, err := Bake(ctx, p.Image, o)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w (use --platform to bake only the platforms the payloads support)", p.Platform.String(), err)
		}
		out = append(out, source.Platformed{Platform: p.Platform, Image: img})
	}
	if src.Index == nil {
		return out, nil, nil
	}
	mt, err := src.Index.MediaType()
	if err != nil {
		return nil, nil, err
	}
	idx := mutate.IndexMediaType(empty.Index, mt)
	for _, p := range out {
		pl := p.Platform
		idx = mutate.AppendManifests(idx, mutate.IndexAddendum{Add: p.Image, Descriptor: v1.Descriptor{Platform: &pl}})
	}
	return out, idx, nil
}
