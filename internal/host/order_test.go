package host

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"slices"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func corpus(t *testing.T) []string {
	t.Helper()
	data, err := os.ReadFile("testdata/classpath-names.txt")
	require.NoError(t, err)
	var names []string
	for _, n := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		names = append(names, path.Join("opt/flink/lib", n))
	}
	require.GreaterOrEqual(t, len(names), 100)
	return names
}

// gnuSort is the peer: GNU sort -z under a locale, as bin/config.sh runs it.
func gnuSort(t *testing.T, locale string, names []string) []string {
	t.Helper()
	cmd := exec.Command("sort", "-z")
	cmd.Env = []string{"LC_ALL=" + locale, "PATH=" + os.Getenv("PATH")}
	cmd.Stdin = strings.NewReader(strings.Join(names, "\x00") + "\x00")
	out, err := cmd.Output()
	require.NoError(t, err, "GNU sort")
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
}

func requireLocale(t *testing.T, name string) {
	t.Helper()
	out, err := exec.Command("locale", "-a").Output()
	if err == nil && slices.Contains(strings.Fields(string(out)), name) {
		return
	}
	msg := "locale " + name + " is not installed: apt-get install locales, add it to /etc/locale.gen, run locale-gen (.ci/run does)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}

func TestOrderMatchesGNUSort(t *testing.T) {
	t.Parallel()
	names := corpus(t)
	shuffled := slices.Clone(names)
	slices.Reverse(shuffled)

	for _, locale := range []string{"C", "POSIX"} {
		t.Run(locale, func(t *testing.T) {
			order, _ := OrderFor(nil, locale)
			got := slices.Clone(shuffled)
			order(got)
			assert.Equal(t, gnuSort(t, locale, names), got)
		})
	}

	requireLocale(t, "en_US.utf8")
	want := gnuSort(t, "en_US.UTF-8", names)
	require.NotEqual(t, gnuSort(t, "C", names), want, "the corpus tells the two orders apart")
	order, desc := OrderFor(nil, "en_US.UTF-8")
	got := slices.Clone(shuffled)
	order(got)
	assert.Equal(t, want, got, desc)

	// The example of the design notes: punctuation is ignored at first.
	pair := []string{"lib/streamfusion-csv.jar", "lib/streamfusioncore.jar"}
	order(pair)
	assert.Equal(t, []string{"lib/streamfusioncore.jar", "lib/streamfusion-csv.jar"}, pair)
}

func TestOrderFallsBackToBytes(t *testing.T) {
	t.Parallel()
	for _, locale := range []string{"", "C", "POSIX", "C.UTF-8", "C.utf8"} {
		t.Run(fmt.Sprintf("%q", locale), func(t *testing.T) {
			t.Parallel()
			_, desc := OrderFor(nil, locale)
			assert.Contains(t, desc, "byte order")
		})
	}
	// Not installed in the image: setlocale fails and sort uses C.
	_, desc := OrderFor(fstest.MapFS{}, "en_US.UTF-8")
	assert.Contains(t, desc, "not installed")
	_, desc = OrderFor(fstest.MapFS{"usr/lib/locale/locale-archive": {Data: []byte("x")}}, "en_US.UTF-8")
	assert.Equal(t, "en_US.UTF-8 collation", desc)
	_, desc = OrderFor(fstest.MapFS{"usr/lib/locale/en_US.utf8/LC_COLLATE": {Data: []byte("x")}}, "en_US.UTF-8")
	assert.Equal(t, "en_US.UTF-8 collation", desc)
}

func BenchmarkCollateOrder(b *testing.B) {
	data, _ := os.ReadFile("testdata/classpath-names.txt")
	names := strings.Split(strings.TrimSpace(string(data)), "\n")
	order, _ := OrderFor(nil, "en_US.UTF-8")
	for b.Loop() {
		order(slices.Clone(names))
	}
}
