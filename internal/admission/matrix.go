package admission

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
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
	Version string // major.minor.patch, as the planner's manifest says it
	Line    string
	Support Support
}

// Matrix is the support matrix, fixed in the entrypoint: a release missing
// here is an unknown planner ABI. Plain strings: parsing them at start-up
// (go-version compiles its pattern on first use) cost every start 0.3 ms.
var Matrix = []Release{
	{"2.2.0", "2.2", Supported},
	{"2.2.1", "2.2", Supported},
	{"1.18.1", "1.18", Experimental},
}

// Lookup returns the release of a Flink version string, or nil: the
// planner's Implementation-Version exactly as Flink writes it.
func Lookup(v string) *Release {
	for i := range Matrix {
		if Matrix[i].Version == v {
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
			vs = append(vs, Matrix[j].Version)
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

// JavaVersion is a normalised Java version.
type JavaVersion struct {
	Major   int
	Version string // its numbers, major.minor.security[.patch] (1.8.0_392 is 1.8.0.392), for display
	Raw     string
}

// ParseJava normalises the shapes Java versions come in: "17.0.15",
// "11.0.21+9", "21.0.1+12-LTS", "17-ea", "1.8.0_392" (major 8), "17":
// digits, dot-separated numbers, an optional _update, then an optional
// -tag or +build running to the end of the line. Read by hand: the start
// path parses the host JDK's version every time, and a pattern compiled
// for it cost more than the reading.
func ParseJava(raw string) (JavaVersion, error) {
	s := strings.TrimSpace(raw)
	s = strings.Trim(s, `"`)
	bad := fmt.Errorf("%w: %q", ErrJavaVersion, raw)
	if len(s) > 64 {
		return JavaVersion{}, bad
	}
	var nums []int
	i := 0
	number := func() bool {
		j := i
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
		if i == j {
			return false
		}
		n, err := strconv.Atoi(s[j:i])
		if err != nil {
			return false
		}
		nums = append(nums, n)
		return true
	}
	if !number() {
		return JavaVersion{}, bad
	}
	for i+1 < len(s) && s[i] == '.' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		if !number() {
			return JavaVersion{}, bad
		}
	}
	if i+1 < len(s) && s[i] == '_' && s[i+1] >= '0' && s[i+1] <= '9' {
		i++
		if !number() {
			return JavaVersion{}, bad
		}
	}
	if i < len(s) && (s[i] != '-' && s[i] != '+' || strings.ContainsRune(s[i:], '\n')) {
		return JavaVersion{}, bad
	}
	major := nums[0]
	if major == 1 { // the 1.x scheme up to Java 8; "1" alone is no version
		major = 0
		if len(nums) > 1 {
			major = nums[1]
		}
	}
	if major < 1 || major > 999 {
		return JavaVersion{}, bad
	}
	text := make([]string, len(nums))
	for k, n := range nums {
		text[k] = strconv.Itoa(n)
	}
	return JavaVersion{Major: major, Version: strings.Join(text, "."), Raw: raw}, nil
}
