package maven

import (
	"encoding/xml"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Settings are the parts of settings.xml resolution uses.
type Settings struct {
	LocalRepository string    `xml:"localRepository"`
	Mirrors         []Mirror  `xml:"mirrors>mirror"`
	Servers         []Server  `xml:"servers>server"`
	Profiles        []Profile `xml:"profiles>profile"`
	ActiveProfiles  []string  `xml:"activeProfiles>activeProfile"`
}

// Mirror stands in for the repositories its MirrorOf matches.
type Mirror struct {
	ID       string `xml:"id"`
	URL      string `xml:"url"`
	MirrorOf string `xml:"mirrorOf"`
}

// Server holds the credentials of the repository or mirror of its ID.
type Server struct {
	ID       string `xml:"id"`
	Username string `xml:"username"`
	Password string `xml:"password"`
}

// Profile is a settings profile; only its repositories matter here.
type Profile struct {
	ID         string `xml:"id"`
	Activation struct {
		ActiveByDefault bool `xml:"activeByDefault"`
	} `xml:"activation"`
	Repositories []struct {
		ID       string `xml:"id"`
		URL      string `xml:"url"`
		Releases struct {
			Enabled string `xml:"enabled"`
		} `xml:"releases"`
	} `xml:"repositories>repository"`
}

var interpolation = regexp.MustCompile(`\$\{(env\.[A-Za-z_][A-Za-z0-9_]*|user\.home)\}`)

// ReadSettings reads a settings.xml. A missing file gives empty settings
// when optional (the default path), an error otherwise. ${env.NAME} and
// ${user.home} are replaced from getenv and home, as Maven does.
func ReadSettings(file string, optional bool, getenv func(string) string, home string) (*Settings, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		if optional && errors.Is(err, fs.ErrNotExist) {
			return &Settings{}, nil
		}
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("maven settings %s: no such file", file)
		}
		return nil, fmt.Errorf("maven settings %s: %w", file, err)
	}
	var s Settings
	if err := xml.Unmarshal(data, &s); err != nil {
		return nil, fmt.Errorf("maven settings %s: %w", file, err)
	}
	var missing []string
	expand := func(v string) string {
		return strings.TrimSpace(interpolation.ReplaceAllStringFunc(v, func(m string) string {
			key := m[2 : len(m)-1]
			if key == "user.home" {
				return home
			}
			val := getenv(strings.TrimPrefix(key, "env."))
			if val == "" {
				missing = append(missing, m)
			}
			return val
		}))
	}
	s.LocalRepository = expand(s.LocalRepository)
	for i := range s.Mirrors {
		s.Mirrors[i].URL = expand(s.Mirrors[i].URL)
	}
	for i := range s.Servers {
		sv := &s.Servers[i]
		sv.Username, sv.Password = expand(sv.Username), expand(sv.Password)
		if strings.HasPrefix(sv.Password, "{") && strings.HasSuffix(sv.Password, "}") {
			return nil, fmt.Errorf("maven settings %s: server %q has an encrypted password; settings-security.xml is not read: give it as ${env.NAME}", file, sv.ID)
		}
	}
	for i := range s.Profiles {
		for j := range s.Profiles[i].Repositories {
			s.Profiles[i].Repositories[j].URL = expand(s.Profiles[i].Repositories[j].URL)
		}
	}
	if len(missing) > 0 {
		return nil, fmt.Errorf("maven settings %s: %s not set in the environment", file, strings.Join(missing, ", "))
	}
	return &s, nil
}

// Local returns the local repository: localRepository, else
// home/.m2/repository.
func (s *Settings) Local(home string) string {
	if s.LocalRepository != "" {
		return s.LocalRepository
	}
	return filepath.Join(home, ".m2", "repository")
}

// Repository is a remote repository to resolve from.
type Repository struct {
	ID       string
	URL      string
	Username string
	Password string
	// Via is the mirror's ID when the repository is a mirror's stand-in.
	Via string
}

func (r Repository) String() string {
	if r.Via != "" {
		return fmt.Sprintf("%s (%s, mirror of %s)", r.URL, r.Via, r.ID)
	}
	return fmt.Sprintf("%s (%s)", r.URL, r.ID)
}

// central is the repository every Maven build has. Its address is Maven's
// business, not ours: it is reached only through a mirror that names it.
const central = "central"

// Remotes returns the remote repositories of the settings: the active
// profiles' repositories and Maven's central one, each replaced by the
// mirror that matches it (central is dropped without one), deduplicated,
// with the credentials of the server of the mirror's or repository's ID.
func (s *Settings) Remotes() []Repository {
	active := map[string]bool{}
	for _, id := range s.ActiveProfiles {
		active[strings.TrimSpace(id)] = true
	}
	var repos []Repository
	for _, p := range s.Profiles {
		if !active[p.ID] && !p.Activation.ActiveByDefault {
			continue
		}
		for _, r := range p.Repositories {
			if strings.TrimSpace(r.Releases.Enabled) == "false" {
				continue
			}
			repos = append(repos, Repository{ID: r.ID, URL: r.URL})
		}
	}
	repos = append(repos, Repository{ID: central})
	var out []Repository
	seen := map[string]bool{}
	for _, r := range repos {
		if m := s.mirrorFor(r); m != nil {
			r = Repository{ID: r.ID, URL: m.URL, Via: m.ID}
		}
		if r.URL == "" || seen[r.URL] {
			continue
		}
		seen[r.URL] = true
		out = append(out, s.withCredentials(r))
	}
	return out
}

func (s *Settings) withCredentials(r Repository) Repository {
	id := r.ID
	if r.Via != "" {
		id = r.Via
	}
	for _, sv := range s.Servers {
		if sv.ID == id {
			r.Username, r.Password = sv.Username, sv.Password
		}
	}
	return r
}

// mirrorFor returns the mirror of r, as Maven chooses it: a mirror of r's
// exact ID first, else the first whose pattern matches.
func (s *Settings) mirrorFor(r Repository) *Mirror {
	for i, m := range s.Mirrors {
		if strings.TrimSpace(m.MirrorOf) == r.ID {
			return &s.Mirrors[i]
		}
	}
	for i, m := range s.Mirrors {
		if mirrorMatches(m.MirrorOf, r) {
			return &s.Mirrors[i]
		}
	}
	return nil
}

// mirrorMatches reads a mirrorOf pattern: "*", "external:*",
// "external:http:*", IDs separated by commas, and "!id" exclusions.
func mirrorMatches(pattern string, r Repository) bool {
	matched := false
	for _, p := range strings.Split(pattern, ",") {
		p = strings.TrimSpace(p)
		switch {
		case strings.HasPrefix(p, "!"):
			if p[1:] == r.ID {
				return false
			}
		case p == "*", p == r.ID:
			matched = true
		case p == "external:*":
			matched = matched || !local(r.URL)
		case p == "external:http:*":
			matched = matched || (!local(r.URL) && strings.HasPrefix(r.URL, "http:"))
		}
	}
	return matched
}

// local reports a repository on this machine (central, with no URL known
// here, is external).
func local(url string) bool {
	return strings.HasPrefix(url, "file:") || strings.Contains(url, "://localhost") || strings.Contains(url, "://127.0.0.1")
}
