package main

import (
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/maven"
	"github.com/streamfusion/image-entrypoint/internal/settings"
)

// mavenOptions say where PAYLOAD coordinates are resolved.
type mavenOptions struct {
	Settings string
	Repos    []string
}

func (m *mavenOptions) bind(c *cobra.Command) {
	c.Flags().StringVar(&m.Settings, "maven-settings", "", "Maven settings.xml for coordinates: local repository, mirrors, active profiles' repositories, server credentials (default ~/.m2/settings.xml)")
	c.Flags().StringArrayVar(&m.Repos, "maven-repo", nil, "a Maven repository URL, or ID::URL to use the credentials of settings.xml's <server> ID; tried in order after the local repository, instead of settings.xml's (repeatable)")
}

// resolver builds the Maven resolver of the options and the environment.
func (m *mavenOptions) resolver(env []string) (*maven.Resolver, error) {
	home, ok := settings.Lookup(env, "HOME")
	if !ok || home == "" {
		var err error
		if home, err = os.UserHomeDir(); err != nil {
			return nil, fmt.Errorf("maven: no home directory for ~/.m2: %w", err)
		}
	}
	file, optional := m.Settings, false
	if file == "" {
		file, optional = filepath.Join(home, ".m2", "settings.xml"), true
	}
	getenv := func(k string) string { v, _ := settings.Lookup(env, k); return v }
	s, err := maven.ReadSettings(file, optional, getenv, home)
	if err != nil {
		return nil, err
	}
	r := &maven.Resolver{Local: s.Local(home)}
	if len(m.Repos) == 0 {
		r.Remotes = s.Remotes()
		return r, nil
	}
	for i, arg := range m.Repos {
		id, raw, ok := strings.Cut(arg, "::")
		if !ok {
			id, raw = "maven-repo-"+strconv.Itoa(i+1), arg
		}
		u, err := url.Parse(raw)
		if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" {
			return nil, usagef("--maven-repo %q: want an http(s) URL, or ID::URL", arg)
		}
		repo := maven.Repository{ID: id, URL: raw}
		for _, sv := range s.Servers {
			if sv.ID == id {
				repo.Username, repo.Password = sv.Username, sv.Password
			}
		}
		r.Remotes = append(r.Remotes, repo)
	}
	return r, nil
}

// resolveAll reads every PAYLOAD argument: a local JAR, or coordinates
// resolved through Maven repositories into the local repository.
func (m *mavenOptions) resolveAll(c *cobra.Command, env []string, flag string, args []string) ([]resolved, error) {
	var out []resolved
	var res *maven.Resolver
	for _, a := range args {
		if !isCoordinates(a) {
			r, err := readLocal(flag, a)
			if err != nil {
				return nil, err
			}
			out = append(out, r)
			continue
		}
		coords, err := maven.Parse(a)
		if err != nil {
			return nil, usagef("%s%v", flag, err)
		}
		if res == nil {
			if res, err = m.resolver(env); err != nil {
				return nil, err
			}
		}
		p, err := res.Resolve(c.Context(), coords)
		if err != nil {
			return nil, fmt.Errorf("%s%w", flag, err)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return nil, fmt.Errorf("%s%s: %w", flag, a, err)
		}
		fmt.Fprintf(c.ErrOrStderr(), "streamfusion: %s is %s\n", a, p)
		out = append(out, resolved{Arg: a, Path: p, Name: filepath.Base(p), Data: data})
	}
	return out, nil
}
