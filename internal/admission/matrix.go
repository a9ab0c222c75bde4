package admission

import (
	"errors"
	"fmt"
	"strings"

	"github.com/hashicorp/go-version"
)

// Support is how a Flink release is admitted.
type Support string

// How releases are admitted: supported, or experimental (with a warning).
const (
	Supported    Support = "supported"
	Experimental Support = "experimental"
)

// Release is one Flink release the entrypoint knows the planner ABI of.
type Release struct {
	Version *version.Version
	Line    string
	Support Support
}

// Matrix is the support matrix, fixed in the entrypoint: a release missing
// here is an unknown planner ABI.
var Matrix = []Release{
	{version.Must(version.NewVersion("2.2.0")), "2.2", Supported},
	{version.Must(version.NewVersion("2.2.1")), "2.2", Supported},
	{version.Must(version.NewVersion("1.18.1")), "1.18", Experimental},
}

var reRelease = lazy(`^[0-9]+\.[0-9]+\.[0-9]+$`)

// Lookup returns the release of a Flink version string, or nil.
func Lookup(v string) *Release {
	if !reRelease().MatchString(v) {
		return nil
	}
	parsed, err := version.NewVersion(v)
	if err != nil {
		return nil
	}
	for i := range Matrix {
		if Matrix[i].Version.Equal(parsed) {
			return &Matrix[i]
		}
	}
	return nil
}

// MatrixText renders the matrix for messages:
// "2.2.0, 2.2.1 (line 2.2, supported); 1.18.1 (line 1.18, experimental)".
func MatrixText() string {
	var parts []string
	for i := 0; i < len(Matrix); {
		j := i
		var vs []string
		for ; j < len(Matrix) && Matrix[j].Line == Matrix[i].Line; j++ {
			vs = append(vs, Matrix[j].Version.Original())
		}
		parts = append(parts, fmt.Sprintf("%s (line %s, %s)", strings.Join(vs, ", "), Matrix[i].Line, Matrix[i].Support))
		i = j
	}
	return strings.Join(parts, "; ")
}

// SupportedJava lists the JDK majors a host may run.
var SupportedJava = []int{11, 17}

// ErrJavaVersion is returned for a Java version string that cannot be read.
var ErrJavaVersion = errors.New("unrecognised Java version")

var reJava = lazy(`^([0-9]+)((?:\.[0-9]+)*)(?:_([0-9]+))?(?:[-+].*)?$`)

// JavaVersion is a normalised Java version.
type JavaVersion struct {
	Major   int
	Version *version.Version // major.minor.security[.patch], for display and ordering
	Raw     string
}

// ParseJava normalises the shapes Java versions come in: "17.0.15",
// "11.0.21+9", "21.0.1+12-LTS", "17-ea", "1.8.0_392" (major 8), "17".
// go-version alone rejects several of them.
func ParseJava(raw string) (JavaVersion, error) {
	s := strings.TrimSpace(raw)
	s = strings.Trim(s, `"`)
	m := reJava().FindStringSubmatch(s)
	if m == nil || len(s) > 64 {
		return JavaVersion{}, fmt.Errorf("%w: %q", ErrJavaVersion, raw)
	}
	nums := m[1] + m[2]
	if m[3] != "" {
		nums += "." + m[3]
	}
	v, err := version.NewVersion(nums)
	if err != nil {
		return JavaVersion{}, fmt.Errorf("%w: %q", ErrJavaVersion, raw)
	}
	seg := v.Segments()
	major := seg[0]
	if major == 1 && len(seg) > 1 {
		major = seg[1] // the 1.x scheme up to Java 8
	}
	if major < 1 || major > 999 {
		return JavaVersion{}, fmt.Errorf("%w: %q", ErrJavaVersion, raw)
	}
	return JavaVersion{Major: major, Version: v, Raw: raw}, nil
}
