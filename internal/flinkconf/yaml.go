package flinkconf

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// ReadYAML reads config.yaml as Flink 2.x does (snakeyaml-engine, YAML
// 1.2 core schema, then flattened: nested keys joined with dots, the later
// of two equal flat keys winning), values rendered as Flink's
// Configuration.toMap renders them. It refuses what Flink refuses (syntax
// errors, duplicate keys, null values, more than MaxAliases aliases to
// collections: ErrFlink) and what is beyond its limits (ErrLimit). file
// names the file in errors and entries' sources.
func ReadYAML(data []byte, file string) ([]Entry, error) {
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, file, MaxBytes)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(blankComments(data), &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrFlink, file, err)
	}
	if len(doc.Content) == 0 {
		return nil, nil // an empty file: an empty configuration
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && resolve(root) == "null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s: the document is not a mapping", ErrFlink, file)
	}
	// snakeyaml-engine counts the aliases to collections as it composes
	// the document, before anything is read from it.
	if n := collectionAliases(root, 0); n > MaxAliases {
		return nil, fmt.Errorf("%w: %s: %d aliases to collections, where Flink's YAML loader allows %d", ErrFlink, file, n, MaxAliases)
	}
	f := &flattener{file: file}
	if err := f.mapping(root, "", 0); err != nil {
		return nil, err
	}
	return f.out, nil
}

// collectionAliases counts the alias nodes of a tree whose anchor is a
// collection, without following any. The parser bounds the tree's depth.
func collectionAliases(n *yaml.Node, count int) int {
	if n.Kind == yaml.AliasNode {
		if n.Alias != nil && n.Alias.Kind != yaml.ScalarNode {
			count++
		}
		return count
	}
	for _, c := range n.Content {
		count = collectionAliases(c, count)
	}
	return count
}

// blankComments cuts the lines that are a comment from their first column
// down to their '#', keeping the line count: the shipped config.yaml is
// mostly such lines, whose text the YAML parser would otherwise keep in
// comment nodes (most of its time). The '#' stays: an empty line would let
// a plain scalar continue past the comment, where YAML (and Flink) ends it
// (TestConfigAsFlinkLoadsIt checks the reading against Flink).
func blankComments(data []byte) []byte {
	if !bytes.Contains(data, []byte("\n#")) && !bytes.HasPrefix(data, []byte("#")) {
		return data
	}
	out := make([]byte, 0, len(data))
	for len(data) > 0 {
		line, rest, found := bytes.Cut(data, []byte("\n"))
		if len(line) > 0 && line[0] == '#' {
			line = line[:1]
		}
		out = append(out, line...)
		if found {
			out = append(out, '\n')
		}
		data = rest
	}
	return out
}

// flattener walks the document into entries within one budget: the nodes
// it visits (an aliased collection once per alias) and the bytes it
// renders, so that aliases cannot make it expand more than that.
type flattener struct {
	file     string
	out      []Entry
	nodes    int  // visited, aliases followed
	again    bool // rendering nodes visited already (a value, its list items): not counted twice
	rendered int  // bytes of the values in out
}

// visit counts n against the budget and follows it if it is an alias.
func (f *flattener) visit(n *yaml.Node) (*yaml.Node, error) {
	if !f.again {
		f.nodes++
	}
	if f.nodes > MaxNodes {
		return nil, fmt.Errorf("%w: %s: its aliases expand to more than %d values", ErrLimit, f.file, MaxNodes)
	}
	if n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, fmt.Errorf("%w: %s, line %d: an unknown alias", ErrFlink, f.file, n.Line)
		}
		n = n.Alias // an anchor is never itself an alias
	}
	return n, nil
}

func (f *flattener) mapping(n *yaml.Node, prefix string, depth int) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: %s, line %d: nested deeper than %d", ErrLimit, f.file, n.Line, MaxDepth)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := f.visit(n.Content[i])
		if err != nil {
			return err
		}
		if kn.Kind != yaml.ScalarNode {
			return fmt.Errorf("%w: %s, line %d: a key that is not a scalar", ErrLimit, f.file, kn.Line)
		}
		kind, key := resolve(kn), scalarText(kn)
		// Every key made counts against the budget: a long key repeated by
		// an alias, or below a long prefix, is as costly as a long value.
		if err := f.spend(len(prefix) + 2*len(key) + len(kind) + 2); err != nil {
			return err
		}
		if seen[kind+"\x00"+key] {
			return fmt.Errorf("%w: %s, line %d: duplicate key %s", ErrFlink, f.file, kn.Line, key)
		}
		seen[kind+"\x00"+key] = true
		if prefix != "" {
			key = prefix + "." + key
		}
		vn, err := f.visit(n.Content[i+1])
		if err != nil {
			return err
		}
		if vn.Kind == yaml.MappingNode {
			if err := f.mapping(vn, key, depth+1); err != nil {
				return err
			}
			continue
		}
		if vn.Kind == yaml.ScalarNode && resolve(vn) == "null" {
			return fmt.Errorf("%w: %s, line %d: %s has no value (null)", ErrFlink, f.file, vn.Line, key)
		}
		if len(f.out) >= MaxEntries {
			return fmt.Errorf("%w: %s: more than %d keys", ErrLimit, f.file, MaxEntries)
		}
		e := Entry{Key: key, Source: fmt.Sprintf("%s, line %d", f.file, kn.Line)}
		if e.Value, e.Items, err = f.value(vn, depth+1); err != nil {
			return err
		}
		if vn.Kind == yaml.ScalarNode {
			if t := resolve(vn); t != "str" {
				e.Type = t
			}
		}
		f.out = append(f.out, e)
	}
	return nil
}

// value renders vn, visited already, and a list's items: each node is
// counted once against the budget, its bytes each time they are made.
func (f *flattener) value(vn *yaml.Node, depth int) (string, []string, error) {
	f.again = true // vn itself
	var b strings.Builder
	err := f.flow(&b, vn, depth, true, true)
	f.again = false
	if serr := f.spend(b.Len()); err == nil {
		err = serr
	}
	if err != nil || vn.Kind != yaml.SequenceNode {
		return b.String(), nil, err
	}
	items := make([]string, 0, len(vn.Content))
	f.again = true
	defer func() { f.again = false }()
	for _, c := range vn.Content {
		item, err := f.render(c, depth+1, true)
		if err != nil {
			return "", nil, err
		}
		items = append(items, item)
	}
	return b.String(), items, nil
}

// spend counts n bytes made against the budget.
func (f *flattener) spend(n int) error {
	f.rendered += n
	if f.rendered > MaxRendered {
		return fmt.Errorf("%w: %s: its keys and values (aliases expanded) are longer than %d bytes", ErrLimit, f.file, MaxRendered)
	}
	return nil
}

// render is one value as flow renders it, counted against the budget.
func (f *flattener) render(n *yaml.Node, depth int, top bool) (string, error) {
	var b strings.Builder
	err := f.flow(&b, n, depth, top, false)
	if serr := f.spend(b.Len()); err == nil {
		err = serr
	}
	return b.String(), err
}

// flow renders a value as Flink's toMap does: a string as it is at the
// top, everything else as snakeyaml-engine dumps it in flow style.
func (f *flattener) flow(b *strings.Builder, n *yaml.Node, depth int, top, visited bool) error {
	if depth > MaxDepth {
		return fmt.Errorf("%w: %s, line %d: nested deeper than %d", ErrLimit, f.file, n.Line, MaxDepth)
	}
	if b.Len() > MaxBytes || f.rendered+b.Len() > MaxRendered {
		return fmt.Errorf("%w: %s: a value longer than %d bytes", ErrLimit, f.file, min(MaxBytes, MaxRendered-f.rendered))
	}
	n, err := f.visit(n)
	if visited {
		f.again = false // the value's top was counted by mapping; its content is not yet
	}
	if err != nil {
		return err
	}
	switch n.Kind {
	case yaml.ScalarNode:
		kind, text := resolve(n), scalarText(n)
		if top || kind != "str" {
			b.WriteString(text)
		} else {
			b.WriteString(quoteFlow(text))
		}
	case yaml.SequenceNode:
		b.WriteByte('[')
		for i, c := range n.Content {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := f.flow(b, c, depth+1, false, false); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	case yaml.MappingNode:
		b.WriteByte('{')
		for i := 0; i+1 < len(n.Content); i += 2 {
			if i > 0 {
				b.WriteString(", ")
			}
			if err := f.flow(b, n.Content[i], depth+1, false, false); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := f.flow(b, n.Content[i+1], depth+1, false, false); err != nil {
				return err
			}
		}
		b.WriteByte('}')
	}
	return nil
}

// resolve is a scalar's type: str, null, bool, int or float.
func resolve(n *yaml.Node) string {
	switch {
	case n.Style&(yaml.DoubleQuotedStyle|yaml.SingleQuotedStyle|yaml.LiteralStyle|yaml.FoldedStyle) != 0:
		return "str"
	case n.Tag == "!!str" && n.Style&yaml.TaggedStyle != 0:
		return "str"
	case isCoreNull(n.Value): // the YAML 1.2 core schema (scalars.go)
		return "null"
	case isCoreBool(n.Value):
		return "bool"
	case isCoreInt(n.Value):
		return "int"
	case isCoreFloat(n.Value):
		return "float"
	}
	return "str"
}

// scalarText is a scalar as Java's toString prints the value
// snakeyaml-engine constructs.
func scalarText(n *yaml.Node) string {
	v := n.Value
	switch resolve(n) {
	case "bool":
		return strings.ToLower(v)
	case "int":
		s := strings.TrimPrefix(v, "+")
		base := 0
		switch {
		case strings.HasPrefix(s, "0x"):
			base = 16
		case strings.HasPrefix(s, "0o"):
			base = 8
		default:
			return decimalText(s)
		}
		// Converting a long number to decimal is quadratic: beyond
		// maxRadixDigits it is shown as written.
		if len(s)-2 > maxRadixDigits {
			return v
		}
		if i, ok := new(big.Int).SetString(s[2:], base); ok {
			return i.String()
		}
	case "float":
		return javaDouble(v)
	}
	return v
}

// maxRadixDigits is the longest hexadecimal or octal integer shown in
// decimal, as Java prints it.
const maxRadixDigits = 256

// decimalText is a decimal integer of the core schema (an optional '-',
// digits) as Java prints it: no leading zeros, no "-0". Linear, where a
// conversion through big.Int is quadratic in the digits.
func decimalText(s string) string {
	neg := strings.HasPrefix(s, "-")
	digits := strings.TrimLeft(strings.TrimPrefix(s, "-"), "0")
	switch {
	case digits == "":
		return "0"
	case neg:
		return "-" + digits
	}
	return digits
}

// javaDouble renders a YAML float as snakeyaml-engine represents a Double:
// .inf, -.inf, .nan, else Double.toString.
func javaDouble(v string) string {
	lower := strings.ToLower(v)
	switch {
	case strings.HasSuffix(lower, ".nan"):
		return ".nan"
	case strings.HasSuffix(lower, ".inf"):
		if strings.HasPrefix(v, "-") {
			return "-.inf"
		}
		return ".inf"
	}
	f, err := strconv.ParseFloat(v, 64)
	if err != nil || math.IsInf(f, 0) {
		if math.IsInf(f, -1) {
			return "-.inf"
		}
		if math.IsInf(f, 1) {
			return ".inf"
		}
		return v
	}
	abs := math.Abs(f)
	if f == 0 || abs >= 1e-3 && abs < 1e7 {
		s := strconv.FormatFloat(f, 'f', -1, 64)
		if !strings.Contains(s, ".") {
			s += ".0"
		}
		if f == 0 && math.Signbit(f) {
			return "-0.0"
		}
		return s
	}
	s := strconv.FormatFloat(f, 'e', -1, 64) // d.ddde±XX
	mant, exp, _ := strings.Cut(s, "e")
	if !strings.Contains(mant, ".") {
		mant += ".0"
	}
	e, _ := strconv.Atoi(exp)
	return mant + "E" + strconv.Itoa(e)
}

// quoteFlow is a string inside a flow collection as snakeyaml-engine dumps
// it: plain when it reads back as the same string, else single-quoted
// (double-quoted when it holds a line break or a control character).
func quoteFlow(s string) string {
	plain := s != "" && s == strings.TrimSpace(s) && !strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") &&
		!strings.ContainsAny(s, ",[]{}\n\r\t") && !strings.Contains(s, ": ") && !strings.Contains(s, " #") &&
		!strings.HasSuffix(s, ":") && resolve(&yaml.Node{Kind: yaml.ScalarNode, Value: s}) == "str"
	if plain {
		return s
	}
	if strings.ContainsAny(s, "\n\r\t") || strings.IndexFunc(s, func(r rune) bool { return r < ' ' }) >= 0 {
		return strconv.Quote(s)
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}
