package flinkconf

import (
	"embed"
	"errors"
	"io"
	"slices"
	"strings"
	"sync"
)

// Option is one of a release's configuration options.
type Option struct {
	Key        string
	Map        bool     // a Map option: Flink also reads KEY.SUBKEY entries
	Deprecated []string // deprecated keys, read when Key is not set, in order
	Fallback   []string // fallback keys, read when Key is not set
}

// Keys is one release's table of options, made from its flink-dist and lib
// by scripts/config-tables (make config-tables; TestConfigTablesMatchTheDistributions in make test-real holds them to the distributions): sorted lines
// "KEY [m] [d:KEY]... [f:KEY]...". A key is looked up in the sorted text
// (a start whose keys are all options' own parses nothing more); the index
// of deprecated and fallback keys and of Map options is built on the first
// key that is not an option's own.
type Keys struct {
	Release string
	text    string
	lines   []int // start offsets of the lines, in key order

	once  sync.Once
	alias map[string][]string // a deprecated or fallback key to the options reading it
	maps  []string            // the Map options' keys with a dot, for KEY.SUBKEY
}

//go:embed flinkkeys/*.txt
var keyTables embed.FS

// lazyKeys is a release's table, parsed on first use: a start parses its
// own release's table only, and the others only to name a removed key.
type lazyKeys struct {
	once sync.Once
	keys *Keys
}

var tables = func() map[string]*lazyKeys {
	m := map[string]*lazyKeys{}
	names, _ := keyTables.ReadDir("flinkkeys")
	for _, n := range names {
		m[strings.TrimSuffix(n.Name(), ".txt")] = &lazyKeys{}
	}
	return m
}()

// Releases lists the releases that have a table, sorted.
func Releases() []string {
	var out []string
	for r := range tables {
		out = append(out, r)
	}
	slices.Sort(out)
	return out
}

// KeysOf returns a release's table; nil when it has none.
func KeysOf(release string) *Keys {
	l := tables[release]
	if l == nil {
		return nil
	}
	l.once.Do(func() {
		text, err := embeddedText("flinkkeys/" + release + ".txt")
		if err != nil {
			panic(err) // embedded: cannot happen
		}
		l.keys = ParseKeys(release, text)
	})
	return l.keys
}

// embeddedText is an embedded file as a string, copied once (ReadFile and
// a conversion would copy it twice: 2 x 48 KB for a start).
func embeddedText(name string) (string, error) {
	f, err := keyTables.Open(name)
	if err != nil {
		return "", err
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.Grow(int(info.Size()))
	buf := make([]byte, 4096)
	for {
		n, err := f.Read(buf)
		b.Write(buf[:n])
		if errors.Is(err, io.EOF) {
			return b.String(), nil
		}
		if err != nil {
			return "", err
		}
	}
}

// ParseKeys takes a table's text (sorted by key, as scripts/config-tables
// writes it).
func ParseKeys(release, text string) *Keys {
	k := &Keys{Release: release, text: text, lines: make([]int, 0, strings.Count(text, "\n")+1)}
	for i := 0; i < len(text); {
		k.lines = append(k.lines, i)
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		i += j + 1
	}
	return k
}

func (k *Keys) line(i int) string {
	end := len(k.text)
	if i+1 < len(k.lines) {
		end = k.lines[i+1]
	}
	return strings.TrimRight(k.text[k.lines[i]:end], "\n")
}

func parseOption(line string) *Option {
	fields := strings.Fields(line)
	if len(fields) == 0 {
		return nil
	}
	o := &Option{Key: fields[0]}
	for _, f := range fields[1:] {
		switch {
		case f == "m":
			o.Map = true
		case strings.HasPrefix(f, "d:"):
			o.Deprecated = append(o.Deprecated, f[2:])
		case strings.HasPrefix(f, "f:"):
			o.Fallback = append(o.Fallback, f[2:])
		}
	}
	return o
}

// Option returns the option whose own key is key; nil when none is.
func (k *Keys) Option(key string) *Option {
	i, found := slices.BinarySearchFunc(k.lines, key, func(start int, key string) int {
		end := start
		for end < len(k.text) && k.text[end] != ' ' && k.text[end] != '\n' {
			end++
		}
		return strings.Compare(k.text[start:end], key)
	})
	if !found {
		return nil
	}
	return parseOption(k.line(i))
}

// Each calls f with every option, in key order.
func (k *Keys) Each(f func(*Option)) {
	for i := range k.lines {
		if o := parseOption(k.line(i)); o != nil {
			f(o)
		}
	}
}

func (k *Keys) index() {
	k.once.Do(func() {
		k.alias = map[string][]string{}
		k.Each(func(o *Option) {
			for _, a := range slices.Concat(o.Deprecated, o.Fallback) {
				k.alias[a] = append(k.alias[a], o.Key)
			}
			if o.Map {
				k.maps = append(k.maps, o.Key+".")
			}
		})
	})
}

// ReadBy are the options that read key as a deprecated or fallback key.
func (k *Keys) ReadBy(key string) []string {
	k.index()
	return k.alias[key]
}

// Known reports whether Flink reads key: an option's key, a deprecated or
// fallback key, or an entry of a Map option (KEY.SUBKEY).
func (k *Keys) Known(key string) bool {
	if k.Option(key) != nil {
		return true
	}
	k.index()
	if len(k.alias[key]) > 0 {
		return true
	}
	for _, m := range k.maps {
		if strings.HasPrefix(key, m) {
			return true
		}
	}
	return false
}

// Nearest returns the option key a typo was most likely meant as: within
// an edit distance of 2 (1 for short keys), "" when none is.
func (k *Keys) Nearest(key string) string {
	limit := 2
	if len(key) < 12 {
		limit = 1
	}
	best, bestD := "", limit+1
	for i := range k.lines {
		cand, _, _ := strings.Cut(k.line(i), " ")
		if d := len(cand) - len(key); d > limit || -d > limit {
			continue
		}
		if d := editDistance(key, cand, limit); d < bestD || d == bestD && cand < best {
			best, bestD = cand, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

// editDistance is the optimal string alignment distance (a swap of two
// neighbours counts once), or limit+1 once it exceeds limit.
func editDistance(a, b string, limit int) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		rowMin := cur[0]
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
			rowMin = min(rowMin, cur[j])
		}
		if rowMin > limit {
			return limit + 1
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return min(prev[len(b)], limit+1)
}
