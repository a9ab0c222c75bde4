package main

import (
	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

type rulesOptions struct{ Markdown bool }

func newRules() *cobra.Command {
	o := &rulesOptions{}
	c := &cobra.Command{
		Use:   "rules [--markdown]",
		Short: "Print the rule catalogue: the entrypoint's rules, the image rules of verify and the rules of install",
		Args:  none,
		RunE: func(c *cobra.Command, _ []string) error {
			return report.Rules(c.OutOrStdout(), o.Markdown, append(append(admission.Catalogue(), image.GuardRules...), install.Rules...))
		},
	}
	c.Flags().BoolVar(&o.Markdown, "markdown", false, "print a Markdown table")
	return c
}
