package release

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"golang.org/x/sync/errgroup"
)

// A Binary is one command built for one platform.
type Binary struct {
	Command string // a folder of cmd/
	OS      string
	Arch    string
}

// Name is the binary's file name in the release: COMMAND-OS-ARCH.
func (b Binary) Name() string { return b.Command + "-" + b.OS + "-" + b.Arch }

// Platform is OS/ARCH.
func (b Binary) Platform() string { return b.OS + "/" + b.Arch }

// Binaries are the binaries of a release: the entrypoint for both image
// platforms, the CLI for them and for the Macs its users run it on.
var Binaries = []Binary{
	{"entrypoint", "linux", "amd64"},
	{"entrypoint", "linux", "arm64"},
	{"streamfusion", "linux", "amd64"},
	{"streamfusion", "linux", "arm64"},
	{"streamfusion", "darwin", "arm64"},
}

// ImagePlatforms are the platforms of the webhook/CLI image.
var ImagePlatforms = []string{"amd64", "arm64"}

// goBuild builds static binaries of cmds for one platform into dir (one
// go build, so that commands sharing packages compile them once), with the
// version stamped and the module graph and VCS stamp in them (go version -m
// shows both). The environment is pinned where it changes the bytes: no
// cgo, default GOAMD64 and GOARM64, no GOFLAGS or GOEXPERIMENT of the
// caller's.
func goBuild(ctx context.Context, o Options, goos, goarch string, cmds []string, dir string) error {
	goCmd := o.Go
	if goCmd == "" {
		goCmd = "go"
	}
	args := []string{"build", "-trimpath", "-buildvcs=true", "-mod=readonly", "-ldflags", "-s -w -X main.version=" + o.Version, "-o", dir + string(os.PathSeparator)}
	for _, c := range cmds {
		args = append(args, "./cmd/"+c)
	}
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = o.Source
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS="+goos, "GOARCH="+goarch,
		"GOAMD64=v1", "GOARM64=v8.0", "GOFLAGS=", "GOEXPERIMENT=")
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("go build %s for %s/%s: %w\n%s", strings.Join(cmds, " "), goos, goarch, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// built is a binary of the release: its file and its SBOM's.
type built struct {
	Binary
	Path string
}

// buildBinaries builds every binary into bin/ with its SBOM in sbom/.
// The platforms build at once: a go build of one platform leaves a core
// idle much of the time (linking, packages waiting on their imports).
func buildBinaries(ctx context.Context, o Options, m *Manifest) (map[string]built, error) {
	platforms := map[string][]string{}
	var order []string
	for _, b := range Binaries {
		if platforms[b.Platform()] == nil {
			order = append(order, b.Platform())
		}
		platforms[b.Platform()] = append(platforms[b.Platform()], b.Command)
	}
	tmp, err := os.MkdirTemp(o.Out, ".build-")
	if err != nil {
		return nil, err
	}
	defer func() { _ = os.RemoveAll(tmp) }()
	g, gctx := errgroup.WithContext(ctx)
	for _, p := range order {
		goos, goarch, _ := strings.Cut(p, "/")
		dir := filepath.Join(tmp, goos+"-"+goarch)
		g.Go(func() error {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				return err
			}
			return o.Build(gctx, o, goos, goarch, platforms[p], dir)
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	bins := map[string]built{}
	for _, b := range Binaries {
		rel := "bin/" + b.Name()
		dst, err := o.path(rel)
		if err != nil {
			return nil, err
		}
		if err := os.Rename(filepath.Join(tmp, b.OS+"-"+b.Arch, b.Command), dst); err != nil {
			return nil, fmt.Errorf("%s: %w", b.Name(), err)
		}
		if err := os.Chmod(dst, 0o755); err != nil {
			return nil, err
		}
		if err := m.add(o.Out, rel, "binary", b.Platform()); err != nil {
			return nil, err
		}
		bom, goVersion, err := binarySBOM(o, b, dst)
		if err != nil {
			return nil, err
		}
		if m.Go != "" && m.Go != goVersion {
			return nil, fmt.Errorf("%s was built by %s, the others by %s", b.Name(), goVersion, m.Go)
		}
		m.Go = goVersion
		srel := "sbom/" + b.Name() + ".cdx.json"
		if err := writeFile(o, srel, bom); err != nil {
			return nil, err
		}
		if err := m.add(o.Out, srel, "sbom", b.Platform()); err != nil {
			return nil, err
		}
		bins[b.Name()] = built{b, dst}
	}
	return bins, nil
}

func writeFile(o Options, rel string, data []byte) error {
	p, err := o.path(rel)
	if err != nil {
		return err
	}
	return os.WriteFile(p, data, 0o644)
}
