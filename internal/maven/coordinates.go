package maven

import (
	"fmt"
	"path"
	"regexp"
	"strings"
)

// Coordinates name an artifact: group:artifact:version[:classifier], a JAR.
type Coordinates struct {
	Group, Artifact, Version, Classifier string
}

var part = regexp.MustCompile(`^[A-Za-z0-9_][A-Za-z0-9_.+-]*$`)

// Parse reads group:artifact:version[:classifier].
func Parse(s string) (Coordinates, error) {
	f := strings.Split(s, ":")
	if len(f) < 3 || len(f) > 4 {
		return Coordinates{}, fmt.Errorf("coordinates %q: want group:artifact:version[:classifier]", s)
	}
	for _, p := range f {
		if !part.MatchString(p) || strings.Contains(p, "..") {
			return Coordinates{}, fmt.Errorf("coordinates %q: %q is not a Maven coordinate (letters, digits, '.', '_', '-', '+')", s, p)
		}
	}
	c := Coordinates{Group: f[0], Artifact: f[1], Version: f[2]}
	if len(f) == 4 {
		c.Classifier = f[3]
	}
	return c, nil
}

func (c Coordinates) String() string {
	s := c.Group + ":" + c.Artifact + ":" + c.Version
	if c.Classifier != "" {
		s += ":" + c.Classifier
	}
	return s
}

// FileName is the artifact's file name in a repository.
func (c Coordinates) FileName() string {
	n := c.Artifact + "-" + c.Version
	if c.Classifier != "" {
		n += "-" + c.Classifier
	}
	return n + ".jar"
}

// Path is the artifact's path in a repository (local or remote), with
// slashes.
func (c Coordinates) Path() string {
	return path.Join(strings.ReplaceAll(c.Group, ".", "/"), c.Artifact, c.Version, c.FileName())
}

// Snapshot reports a SNAPSHOT version.
func (c Coordinates) Snapshot() bool { return strings.HasSuffix(c.Version, "-SNAPSHOT") }
