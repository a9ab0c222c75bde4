package flinkconf

import "errors"

// Entry is one key as set by one source.
type Entry struct {
	Key, Value string
	Source     string // "/opt/flink/conf/config.yaml, line 3", "FLINK_PROPERTIES", "argv (-D)"
	// Items are the elements of a YAML sequence value, as Flink hands a
	// list option the list itself; nil for any other value.
	Items []string `json:"-"`
	// Type is the YAML type of a config.yaml value that is a scalar but
	// not a string (int, float or bool, as the YAML 1.2 core schema Flink
	// 2's loader resolves it): Flink 2 keeps that value typed, and a
	// reporter's own options reach it typed (reporter-option-ignored).
	// "" for strings, lists and every other source.
	Type string `json:"-"`
}

// Limits of the reader. A config file is a few KiB (Flink's shipped
// config.yaml is 15 KiB, its largest real ones a few hundred keys); more,
// or YAML that nests or expands beyond these, is refused, not read.
const (
	MaxBytes   = 1 << 20 // a config file, and one value
	MaxEntries = 20000   // keys of one file
	MaxDepth   = 64      // mappings and sequences nested in each other
	// MaxAliases is snakeyaml-engine's maxAliasesForCollections, which
	// Flink's loader keeps: a file with more aliases to collections is one
	// Flink refuses (ErrFlink).
	MaxAliases = 50
	// MaxNodes and MaxRendered bound what the aliases a file may hold
	// expand to: the nodes flattening visits and the bytes of every value
	// rendered (ErrLimit).
	MaxNodes    = 100000
	MaxRendered = 4 << 20 // the values' bytes and the keys' (each flat key made counts)
)

// ErrLimit marks a config file beyond the reader's limits (nesting, keys,
// what its aliases expand to): it is not read, and nothing Flink would
// load in bounded time and memory either.
var ErrLimit = errors.New("config file beyond the reader's limits")

// ErrTooLarge marks a config file larger than MaxBytes: it is not read.
// Flink reads larger files (snakeyaml-engine takes 3 Mi code points, 1.18's
// line reader any size), so this says only that it was not judged.
var ErrTooLarge = errors.New("config file larger than the reader reads")

// ErrFlink marks a config file Flink itself cannot load (a YAML syntax
// error, a duplicate key, a null value, more than 50 aliases to
// collections): the process fails at start.
var ErrFlink = errors.New("config file that Flink cannot load")

// Last is the entry that sets key last (the one Flink uses), if any.
func Last(entries []Entry, key string) (Entry, bool) {
	for i := len(entries) - 1; i >= 0; i-- {
		if entries[i].Key == key {
			return entries[i], true
		}
	}
	return Entry{}, false
}
