package flinkconf_test

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const file = "/opt/flink/conf/config.yaml"

// doubling is a bomb within Flink's 50 aliases: 25 levels, each of two
// aliases to the level below (format: a level's collection, given the name
// below twice), over bottom; 2^25 values once expanded.
func doubling(bottom, format string) string {
	var b strings.Builder
	b.WriteString("l0: &l0 " + bottom + "\n")
	for i := 1; i <= 25; i++ {
		fmt.Fprintf(&b, "l%d: &l%d "+format+"\n", i, i, i-1, i-1)
	}
	return b.String()
}

// hostile are config files an image or a request may carry, each refused
// with the error that says why, having done bounded work (allocated below
// maxAlloc: the bound, not the machine's memory, stops it).
var hostile = []struct {
	name string
	data string
	want error
}{
	{"the mapping alias bomb (9 levels of 9)", testkit.AliasBomb(), flinkconf.ErrFlink},
	{"a doubling bomb within 50 aliases", doubling("[x]", "[*l%d, *l%d]"), flinkconf.ErrLimit},
	{"a long scalar aliased a thousand times", "s: &s " + strings.Repeat("x", 500<<10) + "\nl: [" + strings.Repeat("*s, ", 999) + "*s]\n", flinkconf.ErrLimit},
	{"a long scalar aliased across many keys", "s: &s " + strings.Repeat("x", 500<<10) + "\n" + manyKeysOf(50, "[*s, *s]"), flinkconf.ErrLimit},
	// 2^25 mappings that hold no key: nothing is rendered and no
	// entry made, only the nodes visited count.
	{"a doubling bomb of empty mappings", doubling("{}", "{a: *l%d, b: *l%d}"), flinkconf.ErrLimit},
	{"a sequence that holds itself", "a: &a [x, *a]\n", flinkconf.ErrLimit},
	{"a mapping that holds itself", "a: &a {b: *a}\n", flinkconf.ErrLimit},
	{"nesting deeper than the limit", strings.Repeat("[", 100) + strings.Repeat("]", 100), flinkconf.ErrFlink}, // not a mapping
	{"nested mappings deeper than the limit", deepMappings(100), flinkconf.ErrLimit},
	{"nested lists deeper than the limit", "a: " + strings.Repeat("[", 100) + strings.Repeat("]", 100) + "\n", flinkconf.ErrLimit},
	{"more keys than the limit", manyKeys(flinkconf.MaxEntries + 1), flinkconf.ErrLimit},
	{"larger than the limit", "a: " + strings.Repeat("x", flinkconf.MaxBytes) + "\n", flinkconf.ErrTooLarge},
	{"a long key aliased below many mappings", "x: &x " + strings.Repeat("k", 500<<10) + "\n" + manyKeysOf(2000, "{*x: 1}"), flinkconf.ErrLimit},
	{"a long key above many keys", "? " + strings.Repeat("k", 500<<10) + "\n: {" + strings.Repeat("a: 1, ", 0) + manyInline(2000) + "}\n", flinkconf.ErrLimit},
	{"an unknown alias", "a: *nope\n", flinkconf.ErrFlink},
	{"merge keys past 50 aliases", "b: &b {x: 1}\n" + manyMerges(51), flinkconf.ErrFlink},
}

func deepMappings(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	b.WriteString(strings.Repeat(" ", n) + "v: 1\n")
	return b.String()
}

func manyKeys(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: %d\n", i, i)
	}
	return b.String()
}

func manyKeysOf(n int, value string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "k%d: %s\n", i, value)
	}
	return b.String()
}

// manyInline is n keys of a flow mapping.
func manyInline(n int) string {
	var b strings.Builder
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		fmt.Fprintf(&b, "k%d: %d", i, i)
	}
	return b.String()
}

func manyMerges(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "m%d:\n  <<: *b\n", i)
	}
	return b.String()
}

const maxAlloc = 64 << 20

func TestReadYAMLRefusesHostileFiles(t *testing.T) {
	for _, c := range hostile {
		t.Run(c.name, func(t *testing.T) {
			var before, after runtime.MemStats
			runtime.ReadMemStats(&before)
			entries, err := flinkconf.ReadYAML([]byte(c.data), file)
			runtime.ReadMemStats(&after)
			require.ErrorIs(t, err, c.want)
			assert.Contains(t, err.Error(), file, "the error names the file")
			assert.Empty(t, entries)
			assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(maxAlloc), "allocated while refusing it")
		})
	}
}

// Aliases Flink's loader takes are read as Flink reads them: up to 50 to
// collections, any number to scalars, aliases inside aliased collections
// counted once where they are written (TestConfigAsFlinkLoadsIt holds the
// values to Flink's).
func TestReadYAMLReadsAliasesFlinkLoads(t *testing.T) {
	var fifty strings.Builder
	fifty.WriteString("b: &b [1, 2]\n")
	for i := range flinkconf.MaxAliases {
		fmt.Fprintf(&fifty, "r%d: *b\n", i)
	}
	for _, c := range []struct {
		name, data string
		want       map[string]string
	}{
		{"50 aliases to collections", fifty.String(), map[string]string{"b": "[1, 2]", "r0": "[1, 2]", "r49": "[1, 2]"}},
		{"aliases inside aliased collections", "a: &a {x: [1]}\nb: &b {y: *a}\nc: &c {z: *b}\nd: [*c, *c, *c]\n",
			map[string]string{"c.z.y.x": "[1]", "d": "[{z: {y: {x: [1]}}}, {z: {y: {x: [1]}}}, {z: {y: {x: [1]}}}]"}},
		{"50 aliases to a list of 1,000 (each node counted once against the budget)", "l: &l [" + strings.Repeat("x, ", 999) + "x]\n" + manyKeysOf(50, "*l"),
			map[string]string{"k49": "[" + strings.Repeat("x, ", 999) + "x]"}},
		{"scalar aliases are free", "s: &s v\nl: [" + strings.Repeat("*s, ", 200) + "*s]\n", map[string]string{"s": "v"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			entries, err := flinkconf.ReadYAML([]byte(c.data), file)
			require.NoError(t, err)
			got := map[string]string{}
			for _, e := range entries {
				got[e.Key] = e.Value
			}
			for k, v := range c.want {
				assert.Equal(t, v, got[k], k)
			}
		})
	}
}

// Integers are shown as Java prints the number snakeyaml-engine reads, in
// time linear in their digits: a 1 MiB integer took seconds through
// big.Int, once more for each alias to it.
func TestReadYAMLIntegers(t *testing.T) {
	long := strings.Repeat("9", 900<<10)
	for in, want := range map[string]string{
		"007": "7", "+5": "5", "-0": "0", "-012": "-12", "0": "0", "0x1F": "31", "0o17": "15",
		long:                                     long,
		"0x" + strings.Repeat("f", 300):          "0x" + strings.Repeat("f", 300), // beyond maxRadixDigits: as written
		"12345678901234567890123456789":          "12345678901234567890123456789",
		"-0000000000000000000000000000000000001": "-1",
	} {
		entries, err := flinkconf.ReadYAML([]byte("a: "+in+"\n"), file)
		require.NoError(t, err, in)
		require.Len(t, entries, 1)
		assert.Equal(t, want, entries[0].Value, in[:min(len(in), 40)])
	}
}

func TestReadYAMLListItems(t *testing.T) {
	entries, err := flinkconf.ReadYAML([]byte("a: [x, 'y: z', {k: v}]\nb: x;y\n"), file)
	require.NoError(t, err)
	require.Len(t, entries, 2)
	assert.Equal(t, []string{"x", "y: z", "{k: v}"}, entries[0].Items)
	assert.Equal(t, "[x, 'y: z', {k: v}]", entries[0].Value)
	assert.Nil(t, entries[1].Items)
}

// A scalar that is not a string keeps its YAML type; a quoted or tagged
// one, a list and the other sources have none.
func TestReadYAMLScalarTypes(t *testing.T) {
	entries, err := flinkconf.ReadYAML([]byte("i: 9251\nq: '9251'\nr: 9250-9260\nb: false\nf: 1.5\nt: !!str 7\nl: [1, 2]\nm:\n  n: 0x1F\n"), file)
	require.NoError(t, err)
	got := map[string]string{}
	for _, e := range entries {
		got[e.Key] = e.Type
	}
	assert.Equal(t, map[string]string{"i": "int", "q": "", "r": "", "b": "bool", "f": "float", "t": "", "l": "", "m.n": "int"}, got)
	for _, e := range append(flinkconf.ReadLegacy("i: 9251\n", func(int) string { return "" }), flinkconf.Dynamic([]string{"-Di=9251"})...) {
		assert.Empty(t, e.Type, e.Key)
	}
}

func TestReadLegacyAndDynamic(t *testing.T) {
	src := func(i int) string { return fmt.Sprint("line ", i+1) }
	got := flinkconf.ReadLegacy("a: 1 # c\r\nb:2\n  c :  x: y  \n- e: f\nk: \n", src)
	assert.Equal(t, []flinkconf.Entry{{Key: "a", Value: "1", Source: "line 1"}, {Key: "c", Value: "x: y", Source: "line 3"}, {Key: "- e", Value: "f", Source: "line 4"}}, got)
	d := flinkconf.Dynamic([]string{"-Da=2", "-D", "b=c=d", "-De", "x", "-D"})
	assert.Equal(t, []flinkconf.Entry{{Key: "a", Value: "2", Source: "argv (-D)"}, {Key: "b", Value: "c=d", Source: "argv (-D)"}, {Key: "e", Value: "true", Source: "argv (-D)"}}, d)
}

// FuzzReadYAML: any bytes give entries or an error, never a panic, and
// what comes out stays within the budget whatever the aliases.
func FuzzReadYAML(f *testing.F) {
	for _, c := range hostile {
		if len(c.data) < 4096 {
			f.Add([]byte(c.data))
		}
	}
	f.Add([]byte("a:\n  b: 0x10\n  c: [x, 'y: z']\na.d: 1e7\n"))
	f.Add([]byte("a: &a [x, x]\nb: [*a, *a]\nc: {d: *a}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		entries, err := flinkconf.ReadYAML(data, file)
		if err != nil {
			if len(entries) > 0 {
				t.Fatalf("entries with an error: %v", err)
			}
			return
		}
		if len(entries) > flinkconf.MaxEntries {
			t.Fatalf("%d entries", len(entries))
		}
		total := 0
		for _, e := range entries {
			total += len(e.Value)
			for _, it := range e.Items {
				total += len(it)
			}
		}
		if total > flinkconf.MaxRendered+flinkconf.MaxBytes {
			t.Fatalf("%d bytes rendered", total)
		}
	})
}
