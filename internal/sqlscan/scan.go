// Package sqlscan finds, in Flink SQL, the options that name a table
// factory: 'connector', 'format', 'key.format' and 'value.format' in the
// WITH clause of a CREATE TABLE, and 'type' in a CREATE CATALOG's. Flink's
// FactoryUtil looks each of those identifiers up among the factories on
// the class path when a statement uses the table or the catalog.
//
// It is a tolerant scanner, not a parser: no Go library parses Flink's
// SQL dialect (Calcite's grammar with Flink's extensions, a Java parser),
// and the rule needs only these options. It reads tokens as Flink's
// parser does (-- and /* */ comments, a doubled quote inside a string literal, quoted
// identifiers in backquotes or double quotes), splits statements at
// semicolons outside parentheses, and in a statement that starts with
// CREATE [OR REPLACE] [TEMPORARY] TABLE or CREATE CATALOG, reads the first
// WITH followed by a parenthesized list outside the column list: its
// 'key' = 'value' pairs. It does not read: options given any other way
// (table hints, a LIKE clause's inherited options, a catalog's stored
// tables, a Hive dialect), Unicode-escaped literals
// (U&'...'), or statements it cannot follow (an unclosed string or
// comment ends the scan with what was found before it). It says which
// statements add JARs (ADD JAR, USING JAR, SET 'pipeline.jars'), where a
// factory may come from, and skips a value with a ${placeholder}. Its test
// holds it to Flink's own parser on both lines (internal/realflink).
package sqlscan

import (
	"strings"
)

// Use is one factory identifier a statement names.
type Use struct {
	Statement string // "table" or "catalog"
	Name      string // the table or catalog, as written
	Option    string // connector, format, key.format, value.format; type for a catalog
	Value     string
	Line      int // of the option's key, 1-based
}

// Bounds of Scan: the SQL it reads (longer text is cut there), and the
// uses it returns (a file naming more is said to, Truncated).
const (
	MaxBytes = 1 << 20
	MaxUses  = 256
)

// Result is what Scan found.
type Result struct {
	Uses []Use
	// AddsCode are the lines of the first statements (at most MaxAddsCode)
	// that put JARs on the job's class path (ADD JAR, CREATE FUNCTION ...
	// USING JAR, SET 'pipeline.jars' or 'pipeline.classpaths'): a factory
	// may come from them. A factory option whose value holds a
	// placeholder (${...}) a runner fills in is not a use.
	AddsCode  []int
	Truncated bool // more than MaxUses uses: the rest are not returned
}

// MaxAddsCode bounds Result.AddsCode.
const MaxAddsCode = 8

// tableOptions are the options of a table that name a factory.
var tableOptions = []string{"connector", "format", "key.format", "value.format"}

type kind int

const (
	word kind = iota
	literal
	quoted // a quoted identifier
	punct
)

type token struct {
	kind kind
	text string // a literal's or quoted identifier's content, unescaped
	line int
}

// Scan returns the factory identifiers the statements of sql name, in
// order, and the statements that add JARs. Text past MaxBytes is not read.
func Scan(sql []byte) Result {
	if len(sql) > MaxBytes {
		sql = sql[:MaxBytes]
	}
	var r Result
	var uses []Use
	var stmt []token
	depth := 0
	lex(string(sql), func(t token) {
		switch {
		case t.kind == punct && t.text == "(":
			depth++
		case t.kind == punct && t.text == ")" && depth > 0:
			depth--
		case t.kind == punct && t.text == ";" && depth == 0:
			uses = statement(stmt, uses, &r)
			stmt = stmt[:0]
			return
		}
		stmt = append(stmt, t)
	})
	uses = statement(stmt, uses, &r)
	for _, u := range uses {
		switch {
		case strings.Contains(u.Value, "${"):
		case len(r.Uses) == MaxUses:
			r.Truncated = true
		default:
			r.Uses = append(r.Uses, u)
		}
	}
	return r
}

// addsCode says whether a statement's tokens put JARs on the class path.
func addsCode(ts []token) bool {
	word := func(i int, w string) bool {
		return i < len(ts) && ts[i].kind == word && strings.EqualFold(ts[i].text, w)
	}
	switch {
	case word(0, "ADD") && word(1, "JAR"):
		return true
	case word(0, "SET") && len(ts) > 1 && ts[1].kind == literal:
		return ts[1].text == "pipeline.jars" || ts[1].text == "pipeline.classpaths"
	case word(0, "CREATE"):
		for i := range ts {
			if word(i, "USING") && word(i+1, "JAR") {
				return true
			}
		}
	}
	return false
}

// statement appends the uses of one statement's tokens, and notes one
// that adds code in r.
func statement(ts []token, out []Use, r *Result) []Use {
	if addsCode(ts) {
		if len(r.AddsCode) < MaxAddsCode {
			r.AddsCode = append(r.AddsCode, ts[0].line)
		}
		return out
	}
	if len(out) > MaxUses { // more are only counted as more
		return out
	}
	i := 0
	next := func(words ...string) bool {
		if i < len(ts) && ts[i].kind == word {
			for _, w := range words {
				if strings.EqualFold(ts[i].text, w) {
					i++
					return true
				}
			}
		}
		return false
	}
	if !next("CREATE") {
		return out
	}
	if next("OR") && !next("REPLACE") {
		return out
	}
	next("TEMPORARY")
	what := ""
	switch {
	case next("TABLE"):
		what = "table"
	case next("CATALOG"):
		what = "catalog"
	default:
		return out
	}
	if next("IF") && !(next("NOT") && next("EXISTS")) {
		return out
	}
	var name []string
	for i < len(ts) && (ts[i].kind == word || ts[i].kind == quoted || ts[i].kind == punct && ts[i].text == ".") {
		if ts[i].kind == word && strings.EqualFold(ts[i].text, "WITH") {
			break
		}
		name = append(name, ts[i].text)
		i++
	}
	depth := 0
	for ; i+1 < len(ts); i++ {
		t := ts[i]
		switch {
		case t.kind == punct && t.text == "(":
			depth++
		case t.kind == punct && t.text == ")":
			depth--
		case depth == 0 && t.kind == word && strings.EqualFold(t.text, "WITH") && ts[i+1].kind == punct && ts[i+1].text == "(":
			return options(ts[i+2:], what, strings.Join(name, ""), out)
		case depth == 0 && t.kind == word && strings.EqualFold(t.text, "AS"):
			return out // a CTAS's query: its WITH is a common table expression
		}
	}
	return out
}

// options reads 'key' = 'value' pairs up to the list's closing
// parenthesis.
func options(ts []token, what, name string, out []Use) []Use {
	for i := 0; i+2 < len(ts); {
		k, eq, v := ts[i], ts[i+1], ts[i+2]
		if k.kind != literal || eq.kind != punct || eq.text != "=" || v.kind != literal {
			return out // not a list of options this scanner reads
		}
		// Flink matches keys and identifiers exactly: 'Connector' is no
		// connector option, and ' kafka' no identifier 'kafka'.
		if key := k.text; what == "table" && contains(tableOptions, key) || what == "catalog" && key == "type" {
			out = append(out, Use{Statement: what, Name: name, Option: key, Value: v.text, Line: k.line})
		}
		i += 3
		if i < len(ts) && ts[i].kind == punct && ts[i].text == "," {
			i++
			continue
		}
		return out // the closing parenthesis, or what this scanner does not read
	}
	return out
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// lex calls emit with each token of s; an unclosed string, quoted
// identifier or comment ends it.
//
// It is long because it is one case per kind of token.
func lex(s string, emit func(token)) {
	line := 1
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\n':
			line++
			i++
		case c == ' ' || c == '\t' || c == '\r' || c == '\f':
			i++
		case c == '-' && i+1 < len(s) && s[i+1] == '-':
			for i < len(s) && s[i] != '\n' {
				i++
			}
		case c == '/' && i+1 < len(s) && s[i+1] == '*':
			end := strings.Index(s[i+2:], "*/")
			if end < 0 {
				return
			}
			line += strings.Count(s[i:i+2+end], "\n")
			i += end + 4
		case c == '\'' || c == '`' || c == '"':
			text, end, ok := quotedRun(s, i, c)
			if !ok {
				return
			}
			k := quoted // backquotes and double quotes quote identifiers
			if c == '\'' {
				k = literal
			}
			emit(token{kind: k, text: text, line: line})
			line += strings.Count(s[i:end], "\n")
			i = end
		case isWord(c):
			j := i
			for j < len(s) && isWord(s[j]) {
				j++
			}
			emit(token{kind: word, text: s[i:j], line: line})
			i = j
		default:
			emit(token{kind: punct, text: s[i : i+1], line: line})
			i++
		}
	}
}

// quotedRun reads the quoted run starting at s[i], a quote q: its text,
// a doubled quote read as one, and where it ends; not ok when it is not
// closed.
func quotedRun(s string, i int, q byte) (text string, end int, ok bool) {
	var b strings.Builder
	j := i + 1
	for {
		k := strings.IndexByte(s[j:], q)
		if k < 0 {
			return "", 0, false
		}
		b.WriteString(s[j : j+k])
		j += k + 1
		if j < len(s) && s[j] == q {
			b.WriteByte(q)
			j++
			continue
		}
		return b.String(), j, true
	}
}

func isWord(c byte) bool {
	return c == '_' || c == '$' || '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || c >= 0x80
}
