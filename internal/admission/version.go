package admission

import (
	"strconv"
	"strings"
)

// FlinkVersion is a Flink release as flink-dist and the planner name it:
// a numeric major and minor, then the rest as written ("1", "1-SNAPSHOT",
// "" for a bare line). The one parser of releases: which config file a
// release reads, which table of options it takes, which line an image's
// release is on.
type FlinkVersion struct {
	Major, Minor int
	Rest         string
}

// ParseFlinkVersion reads "MAJOR.MINOR[.REST]"; false when major or minor
// is not a number.
func ParseFlinkVersion(s string) (FlinkVersion, bool) {
	parts := strings.SplitN(s, ".", 3)
	if len(parts) < 2 {
		return FlinkVersion{}, false
	}
	major, err1 := strconv.Atoi(parts[0])
	minor, err2 := strconv.Atoi(parts[1])
	if err1 != nil || err2 != nil {
		return FlinkVersion{}, false
	}
	v := FlinkVersion{Major: major, Minor: minor}
	if len(parts) == 3 {
		v.Rest = parts[2]
	}
	return v, true
}

// Line is the release's line, "MAJOR.MINOR".
func (v FlinkVersion) Line() string { return strconv.Itoa(v.Major) + "." + strconv.Itoa(v.Minor) }

// Less orders releases: major, minor, then the rest's leading number, then
// the rest as text (2.2.0 < 2.2.1 < 2.2.10).
func (v FlinkVersion) Less(o FlinkVersion) bool {
	if v.Major != o.Major {
		return v.Major < o.Major
	}
	if v.Minor != o.Minor {
		return v.Minor < o.Minor
	}
	a, b := leadingNumber(v.Rest), leadingNumber(o.Rest)
	if a != b {
		return a < b
	}
	return v.Rest < o.Rest
}

func leadingNumber(s string) int {
	i := 0
	for i < len(s) && i < 9 && '0' <= s[i] && s[i] <= '9' {
		i++
	}
	n, _ := strconv.Atoi(s[:i])
	return n
}

// LineOf is the line of a release, "" when it is not one.
func LineOf(release string) string {
	v, ok := ParseFlinkVersion(release)
	if !ok {
		return ""
	}
	return v.Line()
}
