package payload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// ErrManifest is returned, wrapped with the line, for a manifest that
// java.util.jar.Manifest refuses to read.
var ErrManifest = errors.New("malformed manifest")

// Manifest is the main section of a JAR manifest. Attribute names are
// case-insensitive, as in the JAR specification; values are trimmed.
type Manifest struct {
	attrs map[string]string
	// Repeated lists attribute names that appear more than once in the main
	// section; Get returns the last value, as the JDK does.
	Repeated []string
}

// ManifestOf returns the manifest whose main section has these attributes
// (names in lower case, as Attributes returns them) and these repeated
// names: a manifest read before, kept as data.
func ManifestOf(attrs map[string]string, repeated []string) Manifest {
	m := Manifest{attrs: make(map[string]string, len(attrs)), Repeated: repeated}
	for k, v := range attrs {
		m.attrs[strings.ToLower(k)] = v
	}
	return m
}

// Get returns the value of the named attribute.
func (m Manifest) Get(name string) (string, bool) {
	// An ASCII name (every attribute name is) is lowered on the stack: a
	// start asks a few thousand times, and strings.ToLower allocates.
	var buf [72]byte
	if len(name) <= len(buf) {
		b := buf[:len(name)]
		for i := 0; i < len(name); i++ {
			c := name[i]
			if c >= utf8.RuneSelf {
				goto unicode
			}
			if 'A' <= c && c <= 'Z' {
				c += 'a' - 'A'
			}
			b[i] = c
		}
		v, ok := m.attrs[string(b)]
		return v, ok
	}
unicode:
	v, ok := m.attrs[strings.ToLower(name)]
	return v, ok
}

// Len returns the number of distinct attributes.
func (m Manifest) Len() int { return len(m.attrs) }

// Attributes returns the attributes with lower-case names.
func (m Manifest) Attributes() map[string]string { return m.attrs }

// ParseManifest reads a manifest as java.util.jar.Manifest reads it, and
// keeps its main section. The whole manifest must be well formed, per-entry
// sections included, since the JVM refuses a JAR whose manifest is not:
//   - lines end in CRLF, LF or CR; a line (its end included) longer than
//     512 bytes is refused; a last line without an end is ignored;
//   - a header is "Name: value", the name 1-70 of [A-Za-z0-9_-]; a line
//     that starts with a space continues the previous one;
//   - an empty line ends a section; each later section starts with
//     "Name: ";
//   - values are UTF-8, each malformed sequence read as U+FFFD.
//
// The JVM reads lines through a 512-byte line buffer filled from 8 KiB
// blocks; where a CR ends one and its LF starts the next, it sees an empty
// line, and so does this parser.
func ParseManifest(r io.Reader) (Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, maxDeclaredMF+1))
	if err != nil {
		return Manifest{}, err
	}
	return parseManifest(data)
}

// parseManifest is ParseManifest of a manifest already read.
func parseManifest(data []byte) (Manifest, error) {
	if len(data) > maxDeclaredMF {
		return Manifest{}, fmt.Errorf("%w: longer than %d bytes", ErrManifest, maxDeclaredMF)
	}
	lr := &lines{data: data}
	m := Manifest{attrs: map[string]string{}}
	if err := lr.section(func(name, value []byte) {
		key := lowerName(name)
		if _, dup := m.attrs[key]; dup {
			m.Repeated = append(m.Repeated, string(name))
		}
		m.attrs[key] = strings.TrimSpace(decodeUTF8(value))
	}); err != nil {
		return Manifest{}, err
	}
	for {
		line, ok := lr.next()
		if !ok {
			return m, nil
		}
		if len(line) == 0 {
			continue // empty lines between sections
		}
		if len(line) < 6 || !bytes.EqualFold(line[:4], []byte("name")) || line[4] != ':' || line[5] != ' ' {
			return Manifest{}, fmt.Errorf("%w: line %d starts a section without \"Name: \": %q", ErrManifest, lr.n, clip(line))
		}
		for lr.peek() == ' ' { // a wrapped section name
			if _, ok := lr.next(); !ok {
				return m, nil
			}
		}
		if err := lr.section(nil); err != nil {
			return Manifest{}, err
		}
	}
}

// lineMax is the JVM's manifest line buffer; blockSize the size of the
// blocks it refills that buffer from.
const (
	lineMax   = 512
	blockSize = 8192
)

// lines splits a manifest into lines as the JVM's manifest reader does.
type lines struct {
	data []byte
	pos  int
	n    int   // number of the line last read
	err  error // a line too long
}

// next returns the next line without its end; ok is false at the end of
// the data (a last line without an end is dropped) or after a line too long.
func (l *lines) next() (line []byte, ok bool) {
	start, total := l.pos, 0
	for total < lineMax {
		if l.pos >= len(l.data) {
			return nil, false
		}
		block := min((l.pos/blockSize+1)*blockSize, len(l.data))
		tpos, maxpos := l.pos, l.pos+min(lineMax-total, block-l.pos)
		var c byte
		for tpos < maxpos {
			c = l.data[tpos]
			tpos++
			if c == '\n' || c == '\r' {
				break
			}
		}
		if c == '\r' && tpos < maxpos && l.data[tpos] == '\n' {
			tpos++
		}
		total += tpos - l.pos
		l.pos = tpos
		if c = l.data[tpos-1]; c == '\n' || c == '\r' {
			break
		}
	}
	l.n++
	line = l.data[start:l.pos]
	if end := line[len(line)-1]; end != '\n' && end != '\r' {
		l.err = fmt.Errorf("%w: line %d is longer than %d bytes", ErrManifest, l.n, lineMax-1)
		return nil, false
	}
	line = line[:len(line)-1]
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	return line, true
}

// peek returns the next byte, or -1 at the end.
func (l *lines) peek() int {
	if l.pos >= len(l.data) {
		return -1
	}
	return int(l.data[l.pos])
}

// section reads headers up to an empty line or the end, and calls put for
// each complete one (name and value are only valid during the call: a
// value on one line is a slice of the data, a wrapped one is joined in a
// buffer the section reuses). A nil put only checks them: the per-entry
// sections of a large manifest (log4j-core's has hundreds) are read
// without a copy.
func (l *lines) section(put func(name, value []byte)) error {
	var name, value, joined []byte
	wrapped := false // value is in joined
	for {
		line, ok := l.next()
		if !ok {
			return l.err
		}
		if len(line) == 0 {
			return nil
		}
		if line[0] == ' ' {
			if len(name) == 0 {
				return fmt.Errorf("%w: line %d continues nothing", ErrManifest, l.n)
			}
			if put != nil {
				if !wrapped {
					joined, wrapped = append(joined[:0], value...), true
				}
				joined = append(joined, line[1:]...)
				value = joined
			}
		} else {
			c := bytes.IndexByte(line, ':')
			if c < 0 || c+1 >= len(line) || line[c+1] != ' ' {
				return fmt.Errorf("%w: line %d is not a \"Name: value\" header: %q", ErrManifest, l.n, clip(line))
			}
			name, value, wrapped = line[:c], line[c+2:], false
		}
		if l.peek() == ' ' {
			continue // the value goes on
		}
		if !validName(name) {
			return fmt.Errorf("%w: line %d: %q is not an attribute name (1-70 of A-Z, a-z, 0-9, '-', '_')", ErrManifest, l.n, clip(name))
		}
		if put != nil {
			put(name, value)
		}
	}
}

// lowerName is a valid attribute name (ASCII: validName) in lower case, as
// strings.ToLower gives it, in one allocation.
func lowerName(name []byte) string {
	var b strings.Builder
	b.Grow(len(name))
	for _, c := range name {
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b.WriteByte(c)
	}
	return b.String()
}

// validName follows the JAR specification: alphanumerics, '-' and '_', 1
// to 70 of them.
func validName(s []byte) bool {
	if len(s) == 0 || len(s) > 70 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}

// decodeUTF8 decodes b as the JVM's UTF-8 decoder does: each maximal
// malformed subsequence (an invalid byte, or the valid start of a sequence
// cut short) becomes one U+FFFD.
func decodeUTF8(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var s strings.Builder
	for len(b) > 0 {
		r, n := utf8.DecodeRune(b)
		if r != utf8.RuneError || n > 1 {
			s.WriteRune(r)
			b = b[n:]
			continue
		}
		s.WriteRune(utf8.RuneError)
		b = b[malformed(b):]
	}
	return s.String()
}

// malformed returns the length of the maximal subpart of an ill-formed
// sequence at the start of b (Unicode 3.9, U+FFFD substitution).
func malformed(b []byte) int {
	lo, hi, need := byte(0x80), byte(0xbf), 0
	switch c := b[0]; {
	case c >= 0xc2 && c <= 0xdf:
		need = 1
	case c == 0xe0:
		lo, need = 0xa0, 2
	case c == 0xed:
		hi, need = 0x9f, 2
	case c >= 0xe1 && c <= 0xef:
		need = 2
	case c == 0xf0:
		lo, need = 0x90, 3
	case c == 0xf4:
		hi, need = 0x8f, 3
	case c >= 0xf1 && c <= 0xf3:
		need = 3
	default:
		return 1
	}
	n := 1
	for ; n <= need && n < len(b); n++ {
		if b[n] < lo || b[n] > hi {
			break
		}
		lo, hi = 0x80, 0xbf
	}
	return n
}

func clip(b []byte) []byte {
	if len(b) > 80 {
		return append(b[:77:77], "..."...)
	}
	return b
}

// ParseProperties reads a Java properties file as far as this tool needs:
// "key=value" and "key: value" lines, '#' and '!' comments. Escapes and
// continuation lines are kept verbatim; the version keys never use them.
func ParseProperties(data []byte) map[string]string {
	props := map[string]string{}
	for _, line := range strings.FieldsFunc(string(data), func(r rune) bool { return r == '\n' || r == '\r' }) {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		i := strings.IndexAny(line, "=:")
		if i < 0 {
			props[line] = ""
			continue
		}
		props[strings.TrimSpace(line[:i])] = strings.TrimSpace(line[i+1:])
	}
	return props
}
