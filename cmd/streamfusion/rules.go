package main

import (
	"slices"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/install"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

// hostRules are the rules the host CLI adds to the entrypoint's.
func hostRules() []admission.Rule {
	return slices.Concat(image.GuardRules, install.Rules, deploy.Rules, judge.Rules)
}

// catalogue is every rule the product emits, the entrypoint's first: what
// `rules` prints and docs/rules.md is generated from.
func catalogue() []admission.Rule { return append(admission.Catalogue(), hostRules()...) }

type rulesOptions struct{ Markdown bool }

func newRules() *cobra.Command {
	o := &rulesOptions{}
	c := &cobra.Command{
		Use:   "rules [--markdown]",
		Short: "Print the rule catalogue: the entrypoint's rules, then those of verify's image guard, install, a cluster's images together and the webhook",
		Args:  none,
		RunE: func(c *cobra.Command, _ []string) error {
			return report.Rules(c.OutOrStdout(), o.Markdown, catalogue())
		},
	}
	c.Flags().BoolVar(&o.Markdown, "markdown", false, "print a Markdown table")
	return c
}
