package main

import (
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// build is what this binary says of itself: the version stamped at build
// time, the commit and whether the tree had changes (the Go toolchain's
// VCS stamp), the Go release it was built with.
type build struct {
	Version  string `json:"version"`
	Commit   string `json:"commit"` // "unknown" when the binary carries no VCS stamp
	Modified bool   `json:"modified"`
	Go       string `json:"go"`
}

// commit is stamped at build time (-ldflags -X main.commit=...; make
// build does), for toolchains that leave out the VCS stamp (-buildvcs=false).
var commit string

func buildOf() build {
	b := build{Version: version, Commit: "unknown", Go: runtime.Version()}
	if commit != "" {
		b.Commit = commit
		return b
	}
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, s := range info.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Commit = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	return b
}

// String is "VERSION (commit C[, modified], GO)".
func (b build) String() string {
	commit := b.Commit
	if b.Modified {
		commit += ", modified"
	}
	return fmt.Sprintf("%s (commit %s, %s)", b.Version, commit, b.Go)
}

func newVersion() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version, commit and Go release of this command and the Flink releases it supports",
		Args:  none,
		RunE: func(c *cobra.Command, _ []string) error {
			b := buildOf()
			if asJSON {
				return json.NewEncoder(c.OutOrStdout()).Encode(b)
			}
			_, err := fmt.Fprintf(c.OutOrStdout(), "streamfusion %s\n%s\n", b, admission.MatrixText())
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
