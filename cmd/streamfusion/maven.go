package main

import (
	"github.com/spf13/cobra"
)

// mavenOptions say where PAYLOAD coordinates are resolved.
type mavenOptions struct {
	Settings string
	Repos    []string
}

func (m *mavenOptions) bind(c *cobra.Command) {
	c.Flags().StringVar(&m.Settings, "maven-settings", "", "Maven settings.xml for coordinates: local repository, mirrors, profiles' repositories, server credentials (default ~/.m2/settings.xml)")
	c.Flags().StringArrayVar(&m.Repos, "maven-repo", nil, "a Maven repository URL to resolve coordinates from, tried in order after the local repository (repeatable)")
}

// resolveAll reads every PAYLOAD argument: a local JAR, or coordinates
// resolved through Maven repositories.
func (m *mavenOptions) resolveAll(c *cobra.Command, env []string, flag string, args []string) ([]resolved, error) {
	var out []resolved
	for _, a := range args {
		if isCoordinates(a) {
			return nil, usagef("%s%s: Maven coordinates are not supported yet", flag, a)
		}
		r, err := readLocal(flag, a)
		if err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	return out, nil
}
