package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

type checkOptions struct {
	FlinkHome    string
	JSON         bool
	WriteVerdict bool
}

func newCheck(env []string) *cobra.Command {
	o := &checkOptions{}
	c := &cobra.Command{
		Use:   "check [--flink-home DIR] [--json]",
		Short: "Check a local Flink distribution as the entrypoint checks an image at start",
		Long: `check reads a Flink distribution on this machine (--flink-home, else
FLINK_HOME; FLINK_LIB_DIR, JAVA_HOME and PATH as the entrypoint reads them)
and prints the entrypoint's report: exit 0 when Flink would be admitted, 78
when it would be refused.`,
		Args: none,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c, env) },
	}
	c.Flags().StringVar(&o.FlinkHome, "flink-home", "", "the Flink distribution (default $FLINK_HOME)")
	c.Flags().BoolVar(&o.JSON, "json", false, "print the report as JSON")
	c.Flags().BoolVar(&o.WriteVerdict, "write-verdict", false, "when admitted, write the deep verdict and class index into lib ("+host.VerdictFile+"), as bake does, for the entrypoint to apply at every start")
	return c
}

// localSettings are the entrypoint's settings for a Flink distribution on
// this machine: the environment, with FLINK_HOME (and its lib) replaced
// when one is given.
func localSettings(env []string, flinkHome string) (settings.Config, host.Settings, error) {
	if flinkHome != "" {
		abs, err := filepath.Abs(flinkHome)
		if err != nil {
			return settings.Config{}, host.Settings{}, err
		}
		info, err := os.Stat(abs)
		if err != nil {
			return settings.Config{}, host.Settings{}, fmt.Errorf("--flink-home %s: no such directory", flinkHome)
		}
		if !info.IsDir() {
			return settings.Config{}, host.Settings{}, usagef("--flink-home %s: not a directory", flinkHome)
		}
		kept := []string{"FLINK_HOME=" + abs}
		for _, kv := range env {
			if !strings.HasPrefix(kv, "FLINK_HOME=") && !strings.HasPrefix(kv, "FLINK_LIB_DIR=") && !strings.HasPrefix(kv, "FLINK_PLUGINS_DIR=") {
				kept = append(kept, kv)
			}
		}
		env = kept
	}
	cfg, err := settings.FromEnv(env)
	if err != nil {
		return settings.Config{}, host.Settings{}, usagef("%s", strings.ReplaceAll(err.Error(), "\n", "; "))
	}
	return cfg, cfg.HostSettings("linux", host.NormalizeArch(runtime.GOARCH)), nil
}

func (o *checkOptions) run(c *cobra.Command, env []string) error {
	_, s, err := localSettings(env, o.FlinkHome)
	if err != nil {
		return err
	}
	v, err := deepCheck(c.Context(), s, o.WriteVerdict)
	if err != nil {
		return err
	}
	r := report.New(v.Facts, v.Decision)
	if o.JSON {
		err = r.JSON(c.OutOrStdout())
	} else {
		err = r.Text(c.OutOrStdout())
	}
	if err != nil {
		return err
	}
	return reported(v.Err())
}

// deepCheck checks the distribution s names as check does, shadowing and
// linkage included, and with write, when it is admitted, writes lib's deep
// verdict and class index beside it for every start to apply.
func deepCheck(ctx context.Context, s host.Settings, write bool) (*admit.Checked, error) {
	s.Deep = true // shadowing and linkage: the CLI always checks them
	admit.LimitDeepMemory()
	r := admit.Request{Root: os.DirFS("/"), Settings: s}
	if write {
		return admit.Bake(ctx, r)
	}
	return admit.Check(ctx, r)
}
