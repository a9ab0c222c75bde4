package main

import (
	"github.com/spf13/cobra"
	"os"

	"github.com/streamfusion/image-entrypoint/internal/admit"
	"github.com/streamfusion/image-entrypoint/internal/report"
)

type inspectOptions struct {
	JSON  bool
	Maven mavenOptions
}

func newInspect(env []string) *cobra.Command {
	o := &inspectOptions{}
	c := &cobra.Command{
		Use:   "inspect [--json] PAYLOAD...",
		Short: "Print the StreamFusion identity of JARs",
		Long: `inspect prints what each JAR says it is: its payload kind, module, release,
Flink line, Java needs, native platforms and embedded core. PAYLOAD is a JAR
path or Maven coordinates. Exit status 78 when one would fail admission.`,
		Args: atLeastOne("PAYLOAD"),
		RunE: func(c *cobra.Command, args []string) error { return o.run(c, env, args) },
	}
	c.Flags().BoolVar(&o.JSON, "json", false, "print JSON")
	o.Maven.bind(c)
	return c
}

func (o *inspectOptions) run(c *cobra.Command, env, args []string) error {
	rs, err := o.Maven.resolveAll(c, env, "", args)
	if err != nil {
		return err
	}
	jars := make([]report.Shown, 0, len(rs))
	for _, r := range rs {
		jars = append(jars, report.Shown{Path: mustAbs(r.Path), As: r.Arg})
	}
	bad, err := report.InspectAll(c.OutOrStdout(), os.DirFS("/"), jars, o.JSON)
	if err != nil {
		return err
	}
	if bad {
		return reported(admit.ErrRefused)
	}
	return nil
}
