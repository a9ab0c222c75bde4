package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

func newVersion() *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "version [--json]",
		Short: "Print the version of this command and the Flink releases it supports",
		Args:  none,
		RunE: func(c *cobra.Command, _ []string) error {
			if asJSON {
				_, err := fmt.Fprintf(c.OutOrStdout(), "{\"version\": %q, \"go\": %q}\n", version, runtime.Version())
				return err
			}
			_, err := fmt.Fprintf(c.OutOrStdout(), "streamfusion %s (%s)\n%s\n", version, runtime.Version(), admission.MatrixText())
			return err
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}
