// Command release builds a StreamFusion release (make release) and checks
// one (make test-release): see internal/release.
//
//	release build --version X.Y.Z --out DIR [--repository R] [--ca-certs FILE]
//	release check DIR
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strconv"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:]); err != nil {
		fmt.Fprintln(os.Stderr, "release:", err)
		os.Exit(1)
	}
}

func run(ctx context.Context, args []string) error {
	if len(args) == 0 {
		return fmt.Errorf("usage: release build --version X.Y.Z --out DIR | release check DIR")
	}
	switch args[0] {
	case "build":
		return build(ctx, args[1:])
	case "check":
		if len(args) != 2 {
			return fmt.Errorf("usage: release check DIR")
		}
		bad, err := release.Check(ctx, args[1])
		if err != nil {
			return err
		}
		for _, b := range bad {
			fmt.Fprintln(os.Stderr, b)
		}
		if len(bad) > 0 {
			return fmt.Errorf("%s: %d disagreements (above)", args[1], len(bad))
		}
		fmt.Printf("%s: every artifact agrees with the manifest and with each other\n", args[1])
		return nil
	}
	return fmt.Errorf("unknown command %q", args[0])
}

func build(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("release build", flag.ContinueOnError)
	var o release.Options
	fs.StringVar(&o.Version, "version", "", "the release's version (SemVer 2)")
	fs.StringVar(&o.Out, "out", "release", "an empty or missing folder")
	fs.StringVar(&o.Repository, "repository", release.DefaultRepository, "the image's repository, as the chart pulls it")
	fs.StringVar(&o.CACerts, "ca-certs", "/etc/ssl/certs/ca-certificates.crt", "the CA bundle put in the image")
	if err := fs.Parse(args); err != nil {
		return err
	}
	o.Source = "."
	if err := release.Hygiene(ctx, o.Source, ""); err != nil {
		return fmt.Errorf("refused: %w", err)
	}
	commit, secs, err := release.Commit(ctx, o.Source)
	if err != nil {
		return err
	}
	if e := os.Getenv("SOURCE_DATE_EPOCH"); e != "" {
		secs = e
	}
	n, err := strconv.ParseInt(secs, 10, 64)
	if err != nil {
		return fmt.Errorf("time %q: %w", secs, err)
	}
	o.Commit, o.Time = commit, time.Unix(n, 0).UTC()
	start := time.Now()
	m, err := release.Run(ctx, o)
	if err != nil {
		return err
	}
	bad, err := release.Check(ctx, o.Out)
	if err != nil {
		return err
	}
	for _, b := range bad {
		fmt.Fprintln(os.Stderr, b)
	}
	if len(bad) > 0 {
		return fmt.Errorf("the release in %s has %d disagreements (above): it is not one release", o.Out, len(bad))
	}
	fmt.Printf("release %s (commit %s) in %s, %.1fs:\n  image index %s@%s\n  chart %s\n  %d artifacts: %s/manifest.json, %s/SHA256SUMS\n",
		m.Version, m.Commit, o.Out, time.Since(start).Seconds(), m.Image.Repository, m.Image.Index, m.Chart, len(m.Artifacts), o.Out, o.Out)
	return nil
}
