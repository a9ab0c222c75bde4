package flinkconf

import (
	"strings"
	"unicode/utf8"
)

// The YAML 1.2 core schema, as snakeyaml-engine resolves plain scalars, and
// the flat env.java.home line of Flink's scripts, read by hand: these are
// the regular expressions of scalars_test.go (FuzzScalarMatchers holds the
// two to the same answers), which cost every start their compilation at
// package init and a backtracking match per scalar.

// isCoreNull is ^(null|Null|NULL|~)?$.
func isCoreNull(s string) bool {
	switch s {
	case "", "null", "Null", "NULL", "~":
		return true
	}
	return false
}

// isCoreBool is ^(true|True|TRUE|false|False|FALSE)$.
func isCoreBool(s string) bool {
	switch s {
	case "true", "True", "TRUE", "false", "False", "FALSE":
		return true
	}
	return false
}

// isCoreInt is ^([-+]?[0-9]+|0o[0-7]+|0x[0-9a-fA-F]+)$.
func isCoreInt(s string) bool {
	switch {
	case strings.HasPrefix(s, "0o"):
		return len(s) > 2 && all(s[2:], func(c byte) bool { return '0' <= c && c <= '7' })
	case strings.HasPrefix(s, "0x"):
		return len(s) > 2 && all(s[2:], isHex)
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	return s != "" && all(s, isDigit)
}

// isCoreFloat is
// ^([-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?|[-+]?\.(inf|Inf|INF)|\.(nan|NaN|NAN))$.
func isCoreFloat(s string) bool {
	switch s {
	case ".nan", ".NaN", ".NAN":
		return true
	}
	if s != "" && (s[0] == '-' || s[0] == '+') {
		s = s[1:]
	}
	switch s {
	case ".inf", ".Inf", ".INF":
		return true
	}
	i := digits(s, 0)
	switch {
	case i == 0: // \.[0-9]+
		if s == "" || s[0] != '.' {
			return false
		}
		if i = digits(s, 1); i == 1 {
			return false
		}
	case i < len(s) && s[i] == '.': // [0-9]+\.[0-9]*
		i = digits(s, i+1)
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '-' || s[i] == '+') {
			i++
		}
		j := digits(s, i)
		if j == i {
			return false
		}
		i = j
	}
	return i == len(s)
}

// ScriptJavaHome is the submatch of ^ *env.java.home *: ([^#]*) in line
// (each '.' any character but a newline, as the scripts' sed has it).
func ScriptJavaHome(line string) (string, bool) {
	s := strings.TrimLeft(line, " ")
	for i, word := range []string{"env", "java", "home"} {
		if i > 0 {
			r, n := utf8.DecodeRuneInString(s)
			if n == 0 || r == '\n' {
				return "", false
			}
			s = s[n:]
		}
		if !strings.HasPrefix(s, word) {
			return "", false
		}
		s = s[len(word):]
	}
	s = strings.TrimLeft(s, " ")
	if !strings.HasPrefix(s, ": ") {
		return "", false
	}
	s = s[2:]
	if i := strings.IndexByte(s, '#'); i >= 0 {
		s = s[:i]
	}
	return s, true
}

func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

func isHex(c byte) bool { return isDigit(c) || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F' }

// digits returns where the run of decimal digits of s from i ends.
func digits(s string, i int) int {
	for i < len(s) && isDigit(s[i]) {
		i++
	}
	return i
}
