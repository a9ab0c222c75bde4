// Command streamfusion-image verifies and bakes StreamFusion images without
// a Docker daemon: images in a registry, `docker save` tarballs and OCI
// layouts.
//
//	streamfusion-image verify [--json] [--platform OS/ARCH] IMAGE
//	streamfusion-image bake --base IMAGE (--output FILE | --tag REF | --layout DIR)
//	                        [--payload JAR]... [--entrypoint PATH] [--platform OS/ARCH]
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

const usage = `usage:
  streamfusion-image verify [--json] [--platform OS/ARCH] IMAGE
  streamfusion-image bake --base IMAGE (--output FILE | --tag REF | --layout DIR)
                          [--payload JAR]... [--entrypoint PATH] [--platform OS/ARCH]

IMAGE is a registry reference, a 'docker save' tarball, an OCI layout directory
or docker-daemon:REF, an image of the container engine at DOCKER_HOST.
verify exits 0 when every image would start, 78 when one would be refused.
`

const (
	exitRefused = 78
	exitUsage   = 64
	exitFailure = 1
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// options are the registry options of every command; tests point them at
// an in-memory registry's transport.
var options []remote.Option

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	switch args[0] {
	case "verify":
		return verify(ctx, args[1:], stdout, stderr)
	case "bake":
		return bake(ctx, args[1:], getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return 0
	}
	fmt.Fprintf(stderr, "streamfusion-image: unknown command %q\n%s", args[0], usage)
	return exitUsage
}

func parsePlatform(s string) (*v1.Platform, error) {
	if s == "" {
		return nil, nil
	}
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return nil, fmt.Errorf("--platform %q: want OS/ARCH such as linux/amd64", s)
	}
	return p, nil
}

type verified struct {
	Platform string        `json:"platform"`
	Report   report.Report `json:"report"`
}

func verify(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("verify", flag.ContinueOnError)
	fs.SetOutput(stderr)
	asJSON := fs.Bool("json", false, "print JSON")
	plat := fs.String("platform", "", "verify only this platform of an index (OS/ARCH)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 1 {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	want, err := parsePlatform(*plat)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitUsage
	}
	src, err := image.Open(ctx, fs.Arg(0), options...)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitFailure
	}
	defer src.Close()
	imgs, err := src.Images(want)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitFailure
	}
	code := 0
	var all []verified
	for _, p := range imgs {
		res, err := readOptions(stderr).Verify(ctx, p.Image)
		if err != nil {
			fmt.Fprintf(stderr, "streamfusion-image: %s: %v\n", p.Platform.String(), err)
			if errors.Is(err, image.ErrConfig) {
				return exitUsage
			}
			return exitFailure
		}
		r := report.New(res.Facts, res.Decision)
		if !r.Admitted {
			code = exitRefused
		}
		if *asJSON {
			all = append(all, verified{p.Platform.String(), r})
			continue
		}
		fmt.Fprintf(stdout, "== %s %s\n", fs.Arg(0), p.Platform.String())
		if err := r.Text(stdout); err != nil {
			return exitFailure
		}
	}
	if *asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(all); err != nil {
			return exitFailure
		}
	}
	return code
}

type multi []string

func (m *multi) String() string     { return strings.Join(*m, ",") }
func (m *multi) Set(v string) error { *m = append(*m, v); return nil }

func bake(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("bake", flag.ContinueOnError)
	fs.SetOutput(stderr)
	base := fs.String("base", "", "base image: a registry reference, a tarball or an OCI layout")
	output := fs.String("output", "", "write a 'docker save' style tarball")
	tag := fs.String("tag", "", "push to this registry reference")
	layoutDir := fs.String("layout", "", "write an OCI image layout directory")
	entry := fs.String("entrypoint", "", "the entrypoint binary (default: entrypoint beside this command; for several platforms, entrypoint-linux-ARCH)")
	plat := fs.String("platform", "", "bake only this platform of an index (OS/ARCH)")
	tarName := fs.String("name", "streamfusion/flink:baked", "the image name a --output tarball carries")
	var payloads multi
	fs.Var(&payloads, "payload", "a payload JAR to install in lib (repeatable)")
	if err := fs.Parse(args); err != nil || fs.NArg() != 0 || *base == "" {
		fmt.Fprint(stderr, usage)
		return exitUsage
	}
	outs := 0
	for _, o := range []string{*output, *tag, *layoutDir} {
		if o != "" {
			outs++
		}
	}
	if outs != 1 {
		fmt.Fprintln(stderr, "streamfusion-image: bake needs exactly one of --output, --tag, --layout")
		return exitUsage
	}
	want, err := parsePlatform(*plat)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitUsage
	}
	var epoch int64
	if s := getenv("SOURCE_DATE_EPOCH"); s != "" {
		if epoch, err = strconv.ParseInt(s, 10, 64); err != nil || epoch < 0 {
			fmt.Fprintf(stderr, "streamfusion-image: SOURCE_DATE_EPOCH=%q is not a non-negative number of seconds\n", s)
			return exitUsage
		}
	}
	opt := image.BakeOptions{Epoch: epoch, BaseName: *base, Read: readOptions(stderr)}
	for _, p := range payloads {
		data, err := os.ReadFile(p)
		if err != nil {
			fmt.Fprintln(stderr, "streamfusion-image:", err)
			return exitFailure
		}
		opt.Payloads = append(opt.Payloads, image.File{Name: filepath.Base(p), Data: data})
	}
	entrypoints, err := loadEntrypoints(*entry)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitFailure
	}
	// Fail fast: payloads and the output are checked before the base is read.
	if err := image.CheckPayloads(opt.Payloads); err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitUsage
	}
	for _, o := range []string{*output, *layoutDir} {
		if err := image.CheckOutput(o); o != "" && err != nil {
			fmt.Fprintln(stderr, "streamfusion-image:", err)
			return exitUsage
		}
	}
	src, err := image.Open(ctx, *base, options...)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitFailure
	}
	defer src.Close()
	baked, idx, err := image.BakeAll(ctx, src, want, entrypoints, opt)
	if err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		var refused *image.Refused
		if errors.As(err, &refused) {
			return exitRefused
		}
		return exitFailure
	}
	if err := write(ctx, stderr, baked, idx, *output, *tarName, *tag, *layoutDir); err != nil {
		fmt.Fprintln(stderr, "streamfusion-image:", err)
		return exitFailure
	}
	for _, b := range baked {
		d, _ := b.Image.Digest()
		fmt.Fprintf(stdout, "baked %s %s\n", b.Platform.String(), d)
	}
	return 0
}

// loadEntrypoints reads the entrypoint binaries by architecture: one given
// path (bake refuses it for images of another architecture), or those
// built beside this command.
func loadEntrypoints(given string) (map[string][]byte, error) {
	if given != "" {
		data, err := os.ReadFile(given)
		if err != nil {
			return nil, err
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
		data, err := os.ReadFile(filepath.Join(dir, "entrypoint-linux-"+a))
		if err == nil {
			out[a] = data
		}
	}
	if len(out) > 0 {
		return out, nil
	}
	data, err := os.ReadFile(filepath.Join(dir, "entrypoint"))
	if err != nil {
		return nil, fmt.Errorf("no entrypoint binary beside this command (%w); build it (make build) or pass --entrypoint", err)
	}
	return map[string][]byte{"amd64": data, "arm64": data}, nil
}

// readOptions: the layer-facts cache under the user cache directory
// (STREAMFUSION_NO_CACHE=1 turns it off), progress on stderr.
func readOptions(stderr io.Writer) image.VerifyOptions {
	o := image.VerifyOptions{Progress: image.ProgressPrinter(stderr)}
	if os.Getenv("STREAMFUSION_NO_CACHE") == "" {
		o.Cache, _ = layercache.Default()
	}
	return o
}

func write(ctx context.Context, stderr io.Writer, baked []image.Platformed, idx v1.ImageIndex, output, tarName, tag, layoutDir string) error {
	switch {
	case output != "":
		if idx != nil && len(baked) != 1 {
			return fmt.Errorf("a tarball holds one image; the base has %d platforms: choose one with --platform, or use --layout or --tag", len(baked))
		}
		ref, err := name.NewTag(tarName)
		if err != nil {
			return err
		}
		return image.WriteTarball(output, ref, baked[0].Image)
	case tag != "":
		ref, err := name.ParseReference(tag)
		if err != nil {
			return err
		}
		progress, wait := image.PushProgress(image.ProgressPrinter(stderr))
		opts := append([]remote.Option{remote.WithContext(ctx), remote.WithAuthFromKeychain(authn.DefaultKeychain), remote.WithProgress(progress)}, options...)
		if idx != nil {
			err = remote.WriteIndex(ref, idx, opts...)
		} else {
			err = remote.Write(ref, baked[0].Image, opts...)
		}
		wait()
		return err
	default:
		return image.WriteLayout(layoutDir, baked[0].Image, idx)
	}
}
