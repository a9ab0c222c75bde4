package payload

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
)

// MaxMainSection bounds the main section of a manifest. Flink's and
// StreamFusion's are a few hundred bytes; signed JARs have long manifests
// but a short main section, and only the main section is read.
const MaxMainSection = 1 << 20

// ErrManifest is returned, wrapped with the line, for a manifest that
// breaks the JAR manifest syntax.
var ErrManifest = errors.New("malformed manifest")

// Manifest is the main section of a JAR manifest. Attribute names are
// case-insensitive, as in the JAR specification; values are trimmed.
type Manifest struct {
	attrs map[string]string
	// Repeated lists attribute names that appear more than once in the main
	// section; Get returns the last value, as the JDK does.
	Repeated []string
}

// Get returns the value of the named attribute.
func (m Manifest) Get(name string) (string, bool) {
	v, ok := m.attrs[strings.ToLower(name)]
	return v, ok
}

// Len returns the number of distinct attributes.
func (m Manifest) Len() int { return len(m.attrs) }

// Attributes returns the attributes with lower-case names.
func (m Manifest) Attributes() map[string]string { return m.attrs }

// ParseManifest reads the main section of a manifest: header lines up to the
// first empty line or the end. Lines end in CRLF, LF or CR; a line that
// starts with a space continues the previous value. Reading stops after
// MaxMainSection bytes.
func ParseManifest(r io.Reader) (Manifest, error) {
	data, err := io.ReadAll(io.LimitReader(r, MaxMainSection+1))
	if err != nil {
		return Manifest{}, err
	}
	m, complete, err := parseMain(data)
	if err != nil {
		return Manifest{}, err
	}
	if !complete && len(data) > MaxMainSection {
		return Manifest{}, fmt.Errorf("%w: main section longer than %d bytes", ErrManifest, MaxMainSection)
	}
	return m, nil
}

// parseMain parses the main section in data; complete reports whether an
// empty line ended it before the data did.
func parseMain(data []byte) (m Manifest, complete bool, err error) {
	m.attrs = map[string]string{}
	var name string
	var value []byte
	flush := func() {
		if name == "" {
			return
		}
		key := strings.ToLower(name)
		if _, dup := m.attrs[key]; dup {
			m.Repeated = append(m.Repeated, name)
		}
		m.attrs[key] = string(bytes.TrimSpace(value))
		name, value = "", nil
	}
	for n := 1; len(data) > 0; n++ {
		i := bytes.IndexAny(data, "\r\n")
		line, rest := data, []byte(nil)
		if i >= 0 {
			line, rest = data[:i], data[i+1:]
			if data[i] == '\r' && len(rest) > 0 && rest[0] == '\n' {
				rest = rest[1:]
			}
		} else if len(data) > MaxMainSection {
			// The limit cut this line; the caller reports it.
			return m, false, nil
		}
		data = rest
		switch {
		case len(line) == 0:
			flush()
			return m, true, nil
		case bytes.IndexByte(line, 0) >= 0:
			return Manifest{}, false, fmt.Errorf("%w: line %d contains a NUL byte", ErrManifest, n)
		case line[0] == ' ':
			if name == "" {
				return Manifest{}, false, fmt.Errorf("%w: line %d continues nothing", ErrManifest, n)
			}
			value = append(value, line[1:]...)
		default:
			flush()
			c := bytes.Index(line, []byte(": "))
			if c <= 0 || !validName(line[:c]) {
				return Manifest{}, false, fmt.Errorf("%w: line %d is not a \"Name: value\" header: %q", ErrManifest, n, clip(line))
			}
			name = string(line[:c])
			value = append([]byte(nil), line[c+2:]...)
		}
	}
	flush()
	return m, false, nil
}

// validName follows the JAR specification: alphanumerics, '-' and '_', at
// most 70 bytes.
func validName(b []byte) bool {
	if len(b) > 70 {
		return false
	}
	for _, c := range b {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_') {
			return false
		}
	}
	return true
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
