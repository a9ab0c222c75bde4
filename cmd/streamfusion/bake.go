package main

import (
	"fmt"
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"strconv"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/sink"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// BakeMemoryLimit is bake's soft memory limit, unless GOMEMLIMIT sets one.
// A bake's live heap peaks at about 75 MB (a deep check of lib, then its
// class index parsed and encoded); the garbage collector's default lets
// the heap grow to twice what was live, 175-200 MB of peak RSS on the real
// 2.2.0 image. Under the limit it collects sooner: 147 MB for about 5 %
// more CPU (docs/performance.md). A bake whose live heap passes the limit
// is slowed (the collector takes at most half the CPU), never stopped.
const BakeMemoryLimit = 128 << 20

// Official Flink bases by line, for bake without --base.
var lineBases = map[string]string{
	"2.2":  "flink:2.2.1-scala_2.12-java17",
	"1.18": "flink:1.18.1-scala_2.12-java17",
}

type bakeOptions struct {
	Base       string
	FlinkLine  string
	Output     string
	Tag        string
	Layout     string
	Load       bool
	Name       string
	Entrypoint string
	Platform   string
	Payloads   []string
	Lib        []string
	Usrlib     []string
	Deep       bool
	Maven      mavenOptions
}

func newBake(env []string) *cobra.Command {
	o := &bakeOptions{}
	c := &cobra.Command{
		Use:   "bake (--base IMAGE | --flink-line 2.2|1.18) (--output FILE | --tag REF | --layout DIR | --load) [--payload PAYLOAD]... [--lib JAR]... [--usrlib JAR]...",
		Short: "Add the StreamFusion entrypoint and payloads to a Flink image",
		Long: `bake appends one layer to a Flink image: the StreamFusion entrypoint at
/docker-entrypoint.sh, Flink's script kept at /opt/streamfusion/docker-entrypoint.sh,
the payloads and stock JARs in lib and the job JARs in usrlib. The result is
verified as the entrypoint would verify it at start, and by the deep check
(shadowing and linkage of the classes in lib and usrlib, as 'streamfusion
check' runs it; --deep=false skips it); an image that would be refused is
not written (exit 78). The deep check's verdict and the class index of lib
are written into lib (.streamfusion-deep-verdict): every start applies the
verdict for the price of the JARs' fingerprints, and judges against the
index only the job JARs added to usrlib since (docs/config.md). The deep
check's result also goes into the cache, so that 'streamfusion verify' of
the image written reads no layer for its deep check.

Without --base, --flink-line chooses the official Flink image of the line
(2.2: flink:2.2.1-scala_2.12-java17, 1.18: flink:1.18.1-scala_2.12-java17).
SOURCE_DATE_EPOCH sets every timestamp bake writes (reproducible digests).`,
		Args: none,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c, env) },
	}
	f := c.Flags()
	f.StringVar(&o.Base, "base", "", "base image: a registry reference, a tarball or an OCI layout")
	f.StringVar(&o.FlinkLine, "flink-line", "", "Flink line (2.2 or 1.18): chooses the official base when --base is not given")
	f.StringVar(&o.Output, "output", "", "write a 'docker save' style tarball")
	f.StringVar(&o.Tag, "tag", "", "push to this registry reference")
	f.StringVar(&o.Layout, "layout", "", "write an OCI image layout directory")
	f.BoolVar(&o.Load, "load", false, "load the result into the container engine at DOCKER_HOST (Docker or podman's API service)")
	f.StringVar(&o.Name, "name", "streamfusion/flink:baked", "the image name of a --output tarball or a --load")
	f.StringVar(&o.Entrypoint, "entrypoint", "", "the entrypoint binary (default: entrypoint beside this command; for several platforms, entrypoint-linux-ARCH)")
	f.StringVar(&o.Platform, "platform", "", "bake only this platform of an index (OS/ARCH)")
	f.StringArrayVar(&o.Payloads, "payload", nil, "a StreamFusion payload for lib: a JAR path or group:artifact:version[:classifier] (repeatable)")
	f.StringArrayVar(&o.Lib, "lib", nil, "a stock JAR for lib, such as a Flink connector (repeatable)")
	f.StringArrayVar(&o.Usrlib, "usrlib", nil, "a job JAR for usrlib, for application mode (repeatable)")
	f.BoolVar(&o.Deep, "deep", true, "verify the result with the deep check too: shadowing and linkage of the classes in lib and usrlib, its verdict written into lib for every start (--deep=false: the fast path, and no verdict)")
	o.Maven.bind(c)
	return c
}

func (o *bakeOptions) sink(c *cobra.Command) (sink.Writer, error) {
	n := 0
	for _, set := range []bool{o.Output != "", o.Tag != "", o.Layout != "", o.Load} {
		if set {
			n++
		}
	}
	if n != 1 {
		return nil, usagef("bake needs exactly one of --output, --tag, --layout, --load (got %d)", n)
	}
	switch {
	case o.Output != "", o.Load:
		tag, err := name.NewTag(o.Name)
		if err != nil {
			return nil, usagef("--name %q: %v", o.Name, err)
		}
		if o.Load {
			return sink.Engine{Tag: tag}, nil
		}
		return sink.Tarball{Path: o.Output, Tag: tag}, nil
	case o.Tag != "":
		ref, err := name.ParseReference(o.Tag)
		if err != nil {
			return nil, usagef("--tag %q: %v", o.Tag, err)
		}
		return sink.Registry{Ref: ref, Options: remoteOptions, Progress: image.ProgressPrinter(c.ErrOrStderr())}, nil
	}
	return sink.Layout{Dir: o.Layout}, nil
}

// run is the bake command. It is long because it checks each flag's
// combination with the others and builds the sources and sinks they name,
// in the order they run, each step a call.
func (o *bakeOptions) run(c *cobra.Command, env []string) error {
	to, err := o.sink(c)
	if err != nil {
		return err
	}
	if _, set := lookupEnv(env, "GOMEMLIMIT"); !set && debug.SetMemoryLimit(-1) == math.MaxInt64 {
		debug.SetMemoryLimit(BakeMemoryLimit) // GOMEMLIMIT=off or any value is the user's
	}
	base := o.Base
	if o.FlinkLine != "" {
		if _, ok := lineBases[o.FlinkLine]; !ok {
			return usagef("--flink-line %q: want 2.2 or 1.18", o.FlinkLine)
		}
	}
	if base == "" {
		if o.FlinkLine == "" {
			return usagef("bake needs --base IMAGE or --flink-line 2.2|1.18")
		}
		base = lineBases[o.FlinkLine]
	}
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	opt := image.BakeOptions{BaseName: base, Read: readOptions(c, env)}
	opt.Read.Deep = o.Deep
	opt.DeepVerdict = o.Deep // the deep check's verdict and class index go into lib for every start
	if s, ok := settings.Lookup(env, "SOURCE_DATE_EPOCH"); ok && s != "" {
		if opt.Epoch, err = strconv.ParseInt(s, 10, 64); err != nil || opt.Epoch < 0 {
			return usagef("SOURCE_DATE_EPOCH=%q is not a non-negative number of seconds", s)
		}
	}
	payloads, err := o.Maven.resolveAll(c, env, "--payload ", o.Payloads)
	if err != nil {
		return err
	}
	var libs, jobs []resolved
	for _, a := range o.Lib {
		r, err := readLocal("--lib ", a)
		if err != nil {
			return err
		}
		libs = append(libs, r)
	}
	for _, a := range o.Usrlib {
		r, err := readLocal("--usrlib ", a)
		if err != nil {
			return err
		}
		jobs = append(jobs, r)
	}
	if err := sameNames("", append(append([]resolved(nil), payloads...), libs...)); err != nil {
		return err
	}
	if err := sameNames("--usrlib ", jobs); err != nil {
		return err
	}
	for _, r := range payloads {
		opt.Payloads = append(opt.Payloads, image.File{Name: r.Name, Data: r.Data, Source: "--payload " + r.Arg})
	}
	for _, r := range libs {
		opt.Payloads = append(opt.Payloads, image.File{Name: r.Name, Data: r.Data, Source: "--lib " + r.Arg, Stock: true})
	}
	for _, r := range jobs {
		opt.Usrlib = append(opt.Usrlib, image.File{Name: r.Name, Data: r.Data, Source: "--usrlib " + r.Arg})
	}
	entrypoints, err := loadEntrypoints(o.Entrypoint)
	if err != nil {
		return err
	}
	// Fail fast: the payloads and the output are checked before the base is read.
	if err := image.CheckPayloads(opt.Payloads); err != nil {
		return err // image.ErrPayload: refused (78), as admission would refuse them
	}
	for _, out := range []string{o.Output, o.Layout} {
		if out == "" {
			continue
		}
		if err := sink.CheckOutput(out); err != nil {
			return usagef("%v", err)
		}
	}
	src, err := openImage(c, base)
	if err != nil {
		return err
	}
	defer src.Close()
	baked, idx, err := image.BakeAll(c.Context(), src, want, entrypoints, opt)
	if err != nil {
		return err
	}
	where, err := to.Write(c.Context(), baked, idx)
	if err != nil {
		return err
	}
	out := c.OutOrStdout()
	for _, b := range baked {
		d, err := b.Image.Digest()
		if err != nil {
			return err
		}
		fmt.Fprintf(out, "baked %s %s\n", b.Platform.String(), d)
	}
	fmt.Fprintf(out, "wrote %s\n", where)
	return nil
}

// loadEntrypoints reads the entrypoint binaries by architecture: one given
// path (bake refuses it for images of another architecture), or those
// built beside this command.
func loadEntrypoints(given string) (map[string][]byte, error) {
	if given != "" {
		data, err := os.ReadFile(given)
		if err != nil {
			return nil, fmt.Errorf("--entrypoint %s: %w", given, err)
		}
		if err := image.CheckEntrypoint(data); err != nil {
			return nil, fmt.Errorf("--entrypoint %s: %w", given, err)
		}
		return map[string][]byte{"amd64": data, "arm64": data}, nil
	}
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return loadEntrypointsFrom(filepath.Dir(self))
}

// loadEntrypointsFrom reads entrypoint-linux-ARCH from dir (make dist), or
// else dir/entrypoint (make build) for every architecture.
func loadEntrypointsFrom(dir string) (map[string][]byte, error) {
	out := map[string][]byte{}
	for _, a := range []string{"amd64", "arm64"} {
		p := filepath.Join(dir, "entrypoint-linux-"+a)
		data, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if err := image.CheckEntrypoint(data); err != nil {
			return nil, fmt.Errorf("%s: %w", p, err)
		}
		out[a] = data
	}
	if len(out) > 0 {
		return out, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "entrypoint"))
	if err != nil {
		return nil, fmt.Errorf("no entrypoint binary beside this command (%w); build it (make build) or pass --entrypoint", err)
	}
	if err := image.CheckEntrypoint(data); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "entrypoint"), err)
	}
	return map[string][]byte{"amd64": data, "arm64": data}, nil
}
