package flinkconf

import (
	"regexp"
	"testing"
)

// The regular expressions the hand-written matchers of scalars.go stand
// for: the YAML 1.2 core schema as snakeyaml-engine resolves plain
// scalars, and the sed of Flink's scripts for env.java.home.
var (
	coreNull     = regexp.MustCompile(`^(null|Null|NULL|~)?$`)
	coreBool     = regexp.MustCompile(`^(true|True|TRUE|false|False|FALSE)$`)
	coreInt      = regexp.MustCompile(`^([-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$`)
	coreFloat    = regexp.MustCompile(`^([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$`)
	flatJavaHome = regexp.MustCompile(`^ *env.java.home *: ([^#]*)`)
)

// scalarSeeds are the edges of each pattern.
var scalarSeeds = []string{
	"", "~", "null", "NULL", "nULL", "true", "TRUE", "tRUE", "False", "0", "-0", "+12", "+", "-", "0o", "0o7", "0o8", "0x", "0xfF",
	"0xg", "-0x1", "1.", ".", ".5", "-.5", "1.5e", "1.5e+", "1.5E-3", "e5", "1e5", ".inf", "-.Inf", "+.INF", ".iNF", ".nan", "-.nan",
	".NaN", "1_000", " 1", "١",
	"env.java.home: /opt/java", "  env.java.home  : /opt/java # comment", "env_java-home: x", "envéjavaéhome: x", "env\xffjava.home: x",
	"env.java.home:/x", "env.java.home :", "env.java.home : ", "env.java.homes: x", "env\njava.home: x", "env.java.home: a\nb#c",
	"\tenv.java.home: x", "env.java.home: #", "env.java.home: a#b#c",
}

func TestScalarMatchers(t *testing.T) {
	for _, s := range scalarSeeds {
		checkScalarMatchers(t, s)
	}
}

func FuzzScalarMatchers(f *testing.F) {
	for _, s := range scalarSeeds {
		f.Add(s)
	}
	f.Fuzz(checkScalarMatchers)
}

func checkScalarMatchers(t *testing.T, s string) {
	for _, c := range []struct {
		name string
		re   *regexp.Regexp
		got  bool
	}{
		{"null", coreNull, isCoreNull(s)},
		{"bool", coreBool, isCoreBool(s)},
		{"int", coreInt, isCoreInt(s)},
		{"float", coreFloat, isCoreFloat(s)},
	} {
		if want := c.re.MatchString(s); c.got != want {
			t.Errorf("%s(%q) = %v, the pattern says %v", c.name, s, c.got, want)
		}
	}
	var want []string
	if m := flatJavaHome.FindStringSubmatch(s); m != nil {
		want = []string{m[1]}
	}
	var got []string
	if v, ok := ScriptJavaHome(s); ok {
		got = []string{v}
	}
	if len(got) != len(want) || len(got) == 1 && got[0] != want[0] {
		t.Errorf("ScriptJavaHome(%q) = %q, the pattern says %q", s, got, want)
	}
}
