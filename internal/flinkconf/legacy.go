package flinkconf

import "strings"

// ReadLegacy reads flink-conf.yaml as Flink 1.18's GlobalConfiguration
// does: line by line, a comment from the first '#', the rest trimmed and
// split at the first ": ", key and value trimmed, lines without both
// skipped. It is not YAML, so no YAML library reads it. source names the
// origin of the entry read from a line (counted from 0). The text is
// bounded by its caller (a file of at most MaxBytes, an environment
// string); the work is linear in it.
func ReadLegacy(text string, source func(line int) string) []Entry {
	var out []Entry
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
		out = append(out, Entry{Key: k, Value: v, Source: source(i)})
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

// Dynamic are the -D properties of a Flink process's arguments, as
// Flink's entrypoints parse them: "-Dkey=value" or "-D" "key=value", split
// at the first '='; a property without '=' is "true".
func Dynamic(args []string) []Entry {
	var out []Entry
	for i := 0; i < len(args); i++ {
		a := args[i]
		if !strings.HasPrefix(a, "-D") {
			continue
		}
		prop := a[2:]
		if prop == "" { // "-D" "key=value"
			rest := args[i+1:]
			if len(rest) == 0 {
				break
			}
			prop = rest[0]
			i++
		}
		k, v, ok := strings.Cut(prop, "=")
		if !ok {
			v = "true"
		}
		out = append(out, Entry{Key: k, Value: v, Source: "argv (-D)"})
	}
	return out
}
