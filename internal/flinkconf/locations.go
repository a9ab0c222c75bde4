package flinkconf

import (
	"net/url"
	"slices"
	"strings"
)

// Location is a place the configuration names that Flink opens through its
// FileSystem (a checkpoint directory, HA storage), with the scheme Flink
// resolves it by.
type Location struct {
	Entry         // the setting that named it (its key may be a deprecated one)
	Option string // the option's own key
	What   string // what it is, for a message: "checkpoint directory"
	Value  string // one location (an entry of a list is one Location)
	// Scheme is the URI scheme as written (Flink looks its factory up by
	// it, case and all); "" when the value has none and Flink applies
	// fs.default-scheme (Default).
	Scheme  string
	Default bool
	// Err is a value Flink's URI parser refuses; Scheme is then "".
	Err string
}

// locationOption is an option whose value Flink opens through FileSystem.
type locationOption struct {
	keys []string // its own key by release: the first the release's table has
	what string
	list bool   // a comma-separated list of locations
	role string // read only by that process (internal/roles' name)
	// when says whether the process reads it at all under the
	// configuration (HA storage only with HA); nil: always.
	when func(get func(string) (Entry, bool)) bool
}

// locationOptions are the options naming FileSystem locations, taken from
// the releases' ConfigOptions (CheckpointingOptions, HighAvailabilityOptions,
// JobManagerOptions, HistoryServerOptions, the changelog's
// FsStateChangelogOptions). The releases' tables (TestLocationOptionsAreOptions)
// hold each key to an option of the release.
var locationOptions = []locationOption{
	{keys: []string{"execution.checkpointing.dir", "state.checkpoints.dir"}, what: "checkpoint directory"},
	{keys: []string{"execution.checkpointing.savepoint-dir", "state.savepoints.dir"}, what: "savepoint directory"},
	{keys: []string{"high-availability.storageDir"}, what: "high-availability storage directory", when: func(get func(string) (Entry, bool)) bool {
		e, ok := get("high-availability.type")
		return ok && !strings.EqualFold(strings.TrimSpace(e.Value), "none")
	}},
	{keys: []string{"jobmanager.archive.fs.dir"}, what: "JobManager archive directory (finished jobs for the HistoryServer)"},
	{keys: []string{"historyserver.archive.fs.dir"}, what: "HistoryServer archive directory", list: true, role: "history-server"},
	{keys: []string{"state.changelog.dstl.dfs.base-path", "dstl.dfs.base-path"}, what: "changelog storage directory", when: func(get func(string) (Entry, bool)) bool {
		on, ok := get("state.changelog.enabled")
		if !ok {
			on, ok = get("state.backend.changelog.enabled")
		}
		st, _ := get("state.changelog.storage")
		if st.Value == "" {
			st, _ = get("state.backend.changelog.storage")
		}
		return ok && strings.EqualFold(strings.TrimSpace(on.Value), "true") && strings.EqualFold(strings.TrimSpace(st.Value), "filesystem")
	}},
}

// Get returns the entry Flink reads for an option of keys: its own key's,
// else the first of its deprecated and fallback keys that is set (the last
// entry of a key wins). Without the option in keys, the key alone.
func Get(keys *Keys, entries []Entry, key string) (Entry, bool) {
	if e, ok := Last(entries, key); ok {
		return e, true
	}
	if keys == nil {
		return Entry{}, false
	}
	o := keys.Option(key)
	if o == nil {
		return Entry{}, false
	}
	for _, k := range slices.Concat(o.Deprecated, o.Fallback) {
		if e, ok := Last(entries, k); ok {
			return e, true
		}
	}
	return Entry{}, false
}

// Locations are the FileSystem locations the configuration names for a
// process of role ("" a whole image: every process but the HistoryServer)
// on the release of keys, in option order.
func Locations(keys *Keys, entries []Entry, role string) []Location {
	if keys == nil {
		return nil
	}
	get := func(k string) (Entry, bool) { return Get(keys, entries, k) }
	var out []Location
	for _, o := range locationOptions {
		if o.role != "" && o.role != role {
			continue
		}
		own := ""
		for _, k := range o.keys {
			if opt := keys.Option(k); opt != nil {
				own = k
				break
			}
		}
		if own == "" {
			continue
		}
		e, ok := get(own)
		if !ok || strings.TrimSpace(e.Value) == "" || o.when != nil && !o.when(get) {
			continue
		}
		values := []string{e.Value}
		if o.list {
			values = strings.Split(e.Value, ",")
		}
		for _, v := range values {
			if v = strings.TrimSpace(v); v == "" {
				continue
			}
			l := Location{Entry: e, Option: own, What: o.what, Value: v}
			l.Scheme, l.Default, l.Err = SchemeOf(v)
			out = append(out, l)
		}
	}
	return out
}

// SchemeOf is the scheme of a location as Flink's Path makes its URI: a
// value with "scheme:" before any '/' has that scheme; one without has
// none, and Flink applies fs.default-scheme (def). err is a scheme Java's
// URI refuses.
func SchemeOf(v string) (scheme string, def bool, err string) {
	colon := strings.IndexByte(v, ':')
	slash := strings.IndexByte(v, '/')
	if colon <= 0 || slash >= 0 && slash < colon {
		return "", true, ""
	}
	s := v[:colon]
	if !validScheme(s) {
		return "", false, "\"" + s + "\" is not a URI scheme (a letter, then letters, digits, '+', '-' or '.')"
	}
	return s, false, ""
}

// DefaultScheme is the scheme fs.default-scheme gives a location without
// one: "file" when unset.
func DefaultScheme(keys *Keys, entries []Entry) (string, Entry, bool) {
	e, ok := Get(keys, entries, "fs.default-scheme")
	if !ok || strings.TrimSpace(e.Value) == "" {
		return "file", e, false
	}
	u, err := url.Parse(strings.TrimSpace(e.Value))
	if err != nil || u.Scheme == "" {
		return "file", e, true
	}
	return u.Scheme, e, true
}

func validScheme(s string) bool {
	for i, r := range s {
		switch {
		case r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z':
		case i > 0 && (r >= '0' && r <= '9' || r == '+' || r == '-' || r == '.'):
		default:
			return false
		}
	}
	return s != ""
}
