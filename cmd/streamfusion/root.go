package main

import (
	"github.com/spf13/cobra"
)

// newRoot builds the command tree for one run. started is set once a
// command's own code runs: errors before that are usage errors.
func newRoot(env []string) (*cobra.Command, *bool) {
	started := new(bool)
	root := &cobra.Command{
		Use:   "streamfusion",
		Short: "Check, install and bake StreamFusion payloads for Apache Flink",
		Long: `streamfusion checks and installs StreamFusion payloads into a Flink
distribution, and verifies and bakes Flink images without a Docker daemon.

PAYLOAD is a JAR path or Maven coordinates group:artifact:version[:classifier].
IMAGE is a registry reference, a 'docker save' tarball or an OCI layout directory.

Exit status: 0 admitted or done, 78 refused (the report says why),
64 usage error, 1 any other failure.`,
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRun: func(*cobra.Command, []string) {
			*started = true
		},
	}
	root.SetFlagErrorFunc(func(c *cobra.Command, err error) error {
		return usagef("%s: %v (see '%s --help')", c.CommandPath(), err, c.CommandPath())
	})
	root.AddCommand(
		newVerify(env),
		newBake(env),
		newInstall(env),
		newCheck(env),
		newInspect(env),
		newRules(),
		newVersion(),
		newWebhook(env),
		newAudit(env),
	)
	return root, started
}

// exactly returns an argument check that says which arguments are wanted.
func exactly(n int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) != n {
			return usagef("%s takes %s, got %d argument(s) (see '%s --help')", c.CommandPath(), what, len(args), c.CommandPath())
		}
		return nil
	}
}

func atLeastOne(what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if len(args) == 0 {
			return usagef("%s needs at least one %s (see '%s --help')", c.CommandPath(), what, c.CommandPath())
		}
		return nil
	}
}

func none(c *cobra.Command, args []string) error {
	if len(args) != 0 {
		return usagef("%s takes no arguments, got %q (see '%s --help')", c.CommandPath(), args, c.CommandPath())
	}
	return nil
}
