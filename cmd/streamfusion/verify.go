package main

import (
	"fmt"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// remoteOptions are the registry options of every command; tests point them
// at an in-memory registry's transport.
var remoteOptions []remote.Option

type verifyOptions struct {
	JSON     bool
	Platform string
	Deep     bool
	env      []string
}

// verified is one platform's report, as `verify --json` prints it.
type verified struct {
	Platform string        `json:"platform"`
	Report   report.Report `json:"report"`
}

func newVerify(env []string) *cobra.Command {
	o := &verifyOptions{env: env}
	c := &cobra.Command{
		Use:   "verify [--json] [--platform OS/ARCH] [--deep=false] IMAGE",
		Short: "Decide whether an image would start, as its entrypoint would",
		Long: `verify reads an image (registry reference, 'docker save' tarball or OCI
layout) and decides, for each platform, what the StreamFusion entrypoint
would decide when a container of it starts: the payloads in lib, the host
facts, and the guard itself (a StreamFusion entrypoint at /docker-entrypoint.sh
that the image's ENTRYPOINT reaches, Flink's script kept under /opt/streamfusion/).

By default it also runs the deep check, as 'streamfusion check' does on a
directory: the classes of every JAR of lib and usrlib, shadowed or not
linking against the host (classpath-shadowed, linkage-*, bytecode-version).
It reads the layers holding those JARs a second time when the layer cache
knows their facts, unless the cache holds the deep check's result for the
same layers, environment, platform and build of this command: then no layer
is read for it (stderr says so). --deep=false skips it (the fast path).
STREAMFUSION_NO_CACHE=1 turns the cache off.

Exit status 0 when every image would start, 78 when one would be refused.`,
		Args: exactly(1, "one IMAGE"),
		// One image (or one deployment's few) read and judged: a one-check
		// program's memory limit, with or without -f.
		PreRun: func(*cobra.Command, []string) { admit.LimitDeepMemory() },
		RunE:   func(c *cobra.Command, args []string) error { return o.run(c, args[0]) },
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print the reports as JSON")
	c.Flags().StringVar(&o.Platform, "platform", "", "verify only this platform of an index (OS/ARCH)")
	c.Flags().BoolVar(&o.Deep, "deep", true, "run the deep check too: shadowing and linkage of the classes in lib and usrlib (--deep=false: the fast path)")
	withDeployments(c, o) // -f: whole deployments (deploy.go)
	return c
}

func parsePlatform(s string) (*v1.Platform, error) {
	if s == "" {
		return nil, nil
	}
	p, err := v1.ParsePlatform(s)
	if err != nil || p.OS == "" || p.Architecture == "" {
		return nil, usagef("--platform %q: want OS/ARCH such as linux/amd64", s)
	}
	return p, nil
}

func (o *verifyOptions) run(c *cobra.Command, ref string) error {
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	src, err := openImage(c, ref)
	if err != nil {
		return err
	}
	defer src.Close()
	imgs, err := src.Images(want)
	if err != nil {
		return err
	}
	out := c.OutOrStdout()
	refused := false
	all := []verified{}
	for _, p := range imgs {
		ro := readOptions(c, o.env)
		ro.Deep = o.Deep
		res, err := ro.Verify(c.Context(), p.Image)
		if err != nil {
			return fmt.Errorf("%s: %w", p.Platform.String(), err)
		}
		r := report.New(res.Facts, res.Decision)
		refused = refused || !r.Admitted
		if o.JSON {
			all = append(all, verified{p.Platform.String(), r})
			continue
		}
		fmt.Fprintf(out, "== %s %s\n", ref, p.Platform.String())
		if err := r.Text(out); err != nil {
			return err
		}
	}
	if o.JSON {
		if err := report.WriteJSON(out, all); err != nil {
			return err
		}
	}
	if refused {
		return reported(admit.ErrRefused)
	}
	return nil
}

// readOptions are how images are read: the layer-facts cache under the
// user cache directory (STREAMFUSION_NO_CACHE=1 turns it off), progress on
// stderr (a line per layer on a terminal, plain lines otherwise).
func readOptions(c *cobra.Command, env []string) image.VerifyOptions {
	o := image.VerifyOptions{Progress: image.ProgressPrinter(c.ErrOrStderr())}
	if v, _ := settings.Lookup(env, "STREAMFUSION_NO_CACHE"); v == "" {
		o.Cache, _ = layercache.Default()
	}
	return o
}

// openImage opens an image the user named. A name that looks like a file
// (a path, or a tarball's suffix) and is not there is "no such file", never
// a registry lookup.
func openImage(c *cobra.Command, ref string) (*source.Set, error) {
	if err := source.CheckLocal(ref); err != nil {
		return nil, err
	}
	src, err := source.Open(c.Context(), ref, remoteOptions...)
	if err != nil {
		return nil, err
	}
	return src, nil
}
