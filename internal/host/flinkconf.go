package host

import (
	"bytes"
	"fmt"
	"io/fs"
	"math"
	"math/big"
	"path"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/streamfusion/image-entrypoint/internal/admission"
)

// Limits of the config reader: a config file is a few KiB; more, or YAML
// that expands (aliases) or nests beyond these, is refused, not read.
const (
	maxConfigBytes   = 1 << 20
	maxConfigEntries = 20000
	maxConfigDepth   = 64
	maxConfigAliases = 50 // snakeyaml-engine's default for aliases to collections, which Flink keeps
)

// ErrConfigLimit and ErrConfigFlink are admission's: a file beyond the
// reader's limits, a file Flink itself cannot load.
var (
	ErrConfigLimit = admission.ErrConfigLimit
	ErrConfigFlink = admission.ErrConfigFlink
)

// ReadConfig returns the configuration the process about to start runs
// with, as Flink builds it on the launch path: the config file of the
// release (flinkVersion; confFile), FLINK_PROPERTIES as the image
// entrypoint merges it (1.18: appended to flink-conf.yaml, then envsubst
// over the file; 2.x: each line a dynamic property of the rewrite), then
// the dynamic properties of argv (-D key=value, -Dkey=value), which win.
// Without s.ConfDir it returns the zero Config, which turns the config
// rules off.
func ReadConfig(fsys fs.FS, s Settings, flinkVersion string) admission.Config {
	if s.ConfDir == "" {
		return admission.Config{}
	}
	file := confFile(fsys, s.ConfDir, flinkVersion)
	c := admission.Config{Role: s.Role, Dir: path.Clean(s.ConfDir), File: file, Env: map[string]string{}}
	c.Present = exists(fsys, file)
	if major, minor, ok := majorMinor(flinkVersion); ok && (major >= 2 || major == 1 && minor <= 18) {
		other := path.Join(s.ConfDir, "flink-conf.yaml")
		if path.Base(file) == "flink-conf.yaml" {
			other = path.Join(s.ConfDir, "config.yaml")
		}
		if exists(fsys, other) {
			c.Other = other
		}
	}
	var fileEntries []admission.Entry
	if c.Present {
		data, err := readSmall(fsys, rel(file), maxConfigBytes)
		switch {
		case err != nil:
			c.Err = fmt.Errorf("read %s: %w", file, err)
		case path.Base(file) == "flink-conf.yaml":
			fileEntries = legacyEntries(string(data), file, s)
		default:
			fileEntries, err = standardEntries(data, file)
			if err != nil {
				c.Err = err
				fileEntries = nil
			}
			fileEntries = append(fileEntries, propertyEntries(s)...)
		}
	} else if s.Launch == LaunchImage && s.FlinkProperties != "" && path.Base(file) == "flink-conf.yaml" {
		fileEntries = legacyEntries("", file, s) // the image entrypoint's echo creates the file
	}
	c.Entries = append(fileEntries, DynamicProperties(s.Args)...)
	if s.Getenv != nil {
		for _, k := range []string{"GLIBC_TUNABLES"} {
			if v, ok := s.Getenv(k); ok {
				c.Env[k] = v
			}
		}
	}
	if s.Role == "taskmanager" || s.Role == "kubernetes-taskmanager" {
		c.JVMOptions = admission.TaskManagerJVM(fileEntries, s.Getenv)
	}
	return c
}

// legacyEntries reads flink-conf.yaml as Flink 1.18's
// GlobalConfiguration does: line by line, a comment from the first '#',
// the rest trimmed and split at the first ": ", key and value trimmed,
// lines without both skipped. It is not YAML, so no YAML library reads it.
// On the image path FLINK_PROPERTIES is appended first (echo: with a
// newline) and envsubst runs over the whole file.
func legacyEntries(text, file string, s Settings) []admission.Entry {
	base := strings.Count(text, "\n") // lines from here on were appended (echo >> joins an unterminated last line to the first)
	if s.Launch == LaunchImage {
		if s.FlinkProperties != "" {
			text += s.FlinkProperties + "\n"
		}
		text = envsubst(text, s.Getenv)
	}
	var out []admission.Entry
	for i, line := range javaLines(text) {
		conf, _, _ := strings.Cut(line, "#")
		conf = javaTrim(conf)
		if conf == "" {
			continue
		}
		k, v, ok := strings.Cut(conf, ": ")
		if !ok {
			continue
		}
		k, v = javaTrim(k), javaTrim(v)
		if k == "" || v == "" {
			continue
		}
		src := fmt.Sprintf("%s, line %d", file, i+1)
		if s.Launch == LaunchImage && s.FlinkProperties != "" && i >= base {
			src = "FLINK_PROPERTIES"
		}
		out = append(out, admission.Entry{Key: k, Value: v, Source: src})
	}
	return out
}

// javaLines splits as BufferedReader.readLine does: at \n, \r or \r\n.
func javaLines(text string) []string {
	lines := strings.Split(strings.ReplaceAll(strings.ReplaceAll(text, "\r\n", "\n"), "\r", "\n"), "\n")
	if len(lines) > 0 && lines[len(lines)-1] == "" {
		lines = lines[:len(lines)-1]
	}
	return lines
}

// javaTrim is String.trim: every character up to U+0020 at either end.
func javaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return r <= ' ' })
}

// propertyEntries are FLINK_PROPERTIES as the 2.x image entrypoint hands
// them to Flink's bin/config-parser-utils.sh, which rewrites config.yaml:
// each line trimmed of spaces and split at the first ':', the key kept as
// it is and the value (its spaces kept) through envsubst, passed as one
// argument -Dkey=value. Flink's bin/bash-java-utils.sh then joins its
// arguments and splits them again at white space (runBashJavaUtilsCmd's
// unquoted $dynamic_args) before BashJavaUtils parses the -D properties:
// a value after "key: " is lost to that split, and words of a value that
// start with -D become properties of their own.
func propertyEntries(s Settings) []admission.Entry {
	if s.Launch != LaunchImage || s.FlinkProperties == "" {
		return nil
	}
	var args []string
	for _, line := range strings.Split(s.FlinkProperties, "\n") {
		line = strings.TrimFunc(line, isSpace)
		if line == "" {
			continue
		}
		k, v, _ := strings.Cut(line, ":")
		args = append(args, "-D"+k+"="+strings.TrimRight(envsubst(v, s.Getenv), "\n"))
	}
	out := DynamicProperties(strings.Fields(strings.Join(args, " ")))
	for i := range out {
		out[i].Source = "FLINK_PROPERTIES"
	}
	return out
}

func isSpace(r rune) bool {
	return r == ' ' || r == '\t' || r == '\n' || r == '\r' || r == '\v' || r == '\f'
}

// DynamicProperties are the -D properties of a Flink process's arguments,
// as Flink's entrypoints parse them: "-Dkey=value" or "-D" "key=value",
// split at the first '='; a property without '=' is "true".
func DynamicProperties(args []string) []admission.Entry {
	var out []admission.Entry
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-D") {
			continue
		}
		prop := a[2:]
		if prop == "" {
			if i+1 >= len(args) {
				break
			}
			i++
			prop = args[i]
		}
		k, v, ok := strings.Cut(prop, "=")
		if !ok {
			v = "true"
		}
		out = append(out, admission.Entry{Key: k, Value: v, Source: "argv (-D)"})
	}
	return out
}

// standardEntries reads config.yaml as Flink 2.x does (snakeyaml-engine,
// YAML 1.2 core schema, then flattened: nested keys joined with dots, the
// later of two equal flat keys winning), values rendered as Flink's
// Configuration.toMap renders them. It refuses what Flink refuses (syntax
// errors, duplicate keys, null values: ErrConfigFlink) and what is beyond
// its limits (ErrConfigLimit).
func standardEntries(data []byte, file string) ([]admission.Entry, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(blankComments(data), &doc); err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfigFlink, file, err)
	}
	f := &flattener{file: file}
	if len(doc.Content) == 0 {
		return nil, nil // an empty file: an empty configuration
	}
	root := doc.Content[0]
	if root.Kind == yaml.ScalarNode && resolve(root) == "null" {
		return nil, nil
	}
	if root.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%w: %s: the document is not a mapping", ErrConfigFlink, file)
	}
	if err := f.mapping(root, "", 0); err != nil {
		return nil, err
	}
	return f.out, nil
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

type flattener struct {
	file    string
	out     []admission.Entry
	aliases int
}

func (f *flattener) deref(n *yaml.Node) (*yaml.Node, error) {
	for n.Kind == yaml.AliasNode {
		if n.Alias == nil {
			return nil, fmt.Errorf("%w: %s, line %d: an unknown alias", ErrConfigFlink, f.file, n.Line)
		}
		if n.Alias.Kind != yaml.ScalarNode {
			f.aliases++
			if f.aliases > maxConfigAliases {
				return nil, fmt.Errorf("%w: %s: more than %d aliases to collections", ErrConfigLimit, f.file, maxConfigAliases)
			}
		}
		n = n.Alias
	}
	return n, nil
}

func (f *flattener) mapping(n *yaml.Node, prefix string, depth int) error {
	if depth > maxConfigDepth {
		return fmt.Errorf("%w: %s, line %d: nested deeper than %d", ErrConfigLimit, f.file, n.Line, maxConfigDepth)
	}
	seen := map[string]bool{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		kn, err := f.deref(n.Content[i])
		if err != nil {
			return err
		}
		if kn.Kind != yaml.ScalarNode {
			return fmt.Errorf("%w: %s, line %d: a key that is not a scalar", ErrConfigLimit, f.file, kn.Line)
		}
		kind, key := resolve(kn), scalarText(kn)
		if seen[kind+"\x00"+key] {
			return fmt.Errorf("%w: %s, line %d: duplicate key %s", ErrConfigFlink, f.file, kn.Line, key)
		}
		seen[kind+"\x00"+key] = true
		if prefix != "" {
			key = prefix + "." + key
		}
		vn, err := f.deref(n.Content[i+1])
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
			return fmt.Errorf("%w: %s, line %d: %s has no value (null)", ErrConfigFlink, f.file, vn.Line, key)
		}
		var b strings.Builder
		if err := f.flow(&b, vn, depth+1, true); err != nil {
			return err
		}
		if len(f.out) >= maxConfigEntries {
			return fmt.Errorf("%w: %s: more than %d keys", ErrConfigLimit, f.file, maxConfigEntries)
		}
		f.out = append(f.out, admission.Entry{Key: key, Value: b.String(), Source: fmt.Sprintf("%s, line %d", f.file, kn.Line)})
	}
	return nil
}

// flow renders a value as Flink's toMap does: a string as it is at the
// top, everything else as snakeyaml-engine dumps it in flow style.
func (f *flattener) flow(b *strings.Builder, n *yaml.Node, depth int, top bool) error {
	if depth > maxConfigDepth {
		return fmt.Errorf("%w: %s, line %d: nested deeper than %d", ErrConfigLimit, f.file, n.Line, maxConfigDepth)
	}
	if b.Len() > maxConfigBytes {
		return fmt.Errorf("%w: %s: a value longer than %d bytes", ErrConfigLimit, f.file, maxConfigBytes)
	}
	n, err := f.deref(n)
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
			if err := f.flow(b, c, depth+1, false); err != nil {
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
			if err := f.flow(b, n.Content[i], depth+1, false); err != nil {
				return err
			}
			b.WriteString(": ")
			if err := f.flow(b, n.Content[i+1], depth+1, false); err != nil {
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
		i := new(big.Int)
		s := strings.TrimPrefix(v, "+")
		var ok bool
		switch {
		case strings.HasPrefix(s, "0x"):
			_, ok = i.SetString(s[2:], 16)
		case strings.HasPrefix(s, "0o"):
			_, ok = i.SetString(s[2:], 8)
		default:
			_, ok = i.SetString(s, 10)
		}
		if ok {
			return i.String()
		}
	case "float":
		return javaDouble(v)
	}
	return v
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
