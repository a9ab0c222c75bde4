//go:build realjars

package realflink

import (
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
)

// trickyNames are lib entries whose order differs between locales and
// between a naive sort and Flink's: case, punctuation, digits, dashes
// against underscores, UTF-8, spaces, nested directories, a directory and
// a link to a directory that both end in .jar. No ':' (it separates
// classpath entries, so such a JAR cannot be on a Java classpath at all).
//
// Math, modifier and other symbols (+ ~ = ^ ` | < ©) are in: glibc ignores
// them at the first level as it does punctuation, which host.OrderFor
// models. Known divergence, left out on purpose: names that tie but for
// which punctuation mark or symbol stands at one place are broken
// differently for some marks (a corpus of every ASCII mark between the same
// letters shows it); '-', '_', '.', ' ', '@', '#', '%', '!' as used below
// agree.
var trickyNames = []string{
	"A.jar", "a.jar", "B-extra.jar", "b_extra.jar", "b-extra.jar", "bextra.jar",
	"streamfusion-csv.jar", "streamfusioncore.jar", "streamfusion_kafka.jar", "streamfusion-paimon.jar",
	"paimon-flink-1.20-1.2.0.jar", "paimon-flink-2.2-1.3.0.jar",
	"10-ten.jar", "9-nine.jar", "0009.jar", "_leading-underscore.jar", "-leading-dash.jar", ".hidden.jar",
	"flink-connector-kafka-5.0.0-2.2.jar", "flink-connector-kafka_5.jar", "flinkz.jar", "Flink-Upper.jar",
	"zürich.jar", "zurich.jar", "Zurich.jar", "élan.jar", "elan.jar", "Ωmega.jar", "日本.jar",
	"with space.jar", "with@at.jar", "with#hash.jar", "with%percent.jar", "with!bang.jar", "dot..double.jar",
	"with+plus.jar", "with~tilde.jar", "with=equals.jar", "with^caret.jar", "with`grave.jar", "with|bar.jar", "with<less.jar",
	"with©copy.jar", "c++-runtime.jar", "c-runtime.jar", "~tilde-first.jar", "+plus-first.jar",
	"nested/inner.jar", "nested/Deeper/x.jar", "nested-sibling.jar", "nested_sibling.jar", "nested/deeper/y.jar",
	"dir.jar/inside.jar",
}

// flinkClasspath runs constructFlinkClassPath from the real bin/config.sh
// of a release with bash, under LC_ALL=locale, over lib, and returns the
// entries. The function is taken from the file as shipped (the lines from
// its definition to its closing brace) and run unchanged: sourcing all of
// config.sh would also start BashJavaUtils, which adds nothing here.
func flinkClasspath(t *testing.T, version, locale, lib string) []string {
	t.Helper()
	configSh := filepath.Join(flinkHome(t, version), "bin", "config.sh")
	script := `eval "$(sed -n '/^constructFlinkClassPath() {/,/^}/p' "$1")"
type constructFlinkClassPath >/dev/null || exit 3
FLINK_LIB_DIR="$2" constructFlinkClassPath`
	cmd := exec.Command("bash", "-c", script, "bash", configSh, lib)
	cmd.Env = []string{"LC_ALL=" + locale, "PATH=" + os.Getenv("PATH")}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "bin/config.sh of %s: %s", version, stderr.String())
	return strings.Split(strings.TrimSuffix(string(out), "\n"), ":")
}

func TestClasspathOrderMatchesFlinkConfigSh(t *testing.T) {
	for _, version := range []string{"2.2.0", "1.18.1"} {
		root := t.TempDir()
		lib := filepath.Join(root, "lib")
		for name, p := range realLib(t, version) {
			require.NoError(t, os.MkdirAll(lib, 0o755))
			require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
		}
		for _, n := range trickyNames {
			p := filepath.Join(lib, n)
			require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
			require.NoError(t, os.WriteFile(p, nil, 0o644))
		}
		require.NoError(t, os.Mkdir(filepath.Join(lib, "empty-dir.jar"), 0o755))
		require.NoError(t, os.Symlink(filepath.Join(lib, "nested"), filepath.Join(lib, "link-to-dir.jar")))

		byLocale := map[string][]string{}
		for _, locale := range []string{"C", "C.UTF-8", "en_US.UTF-8"} {
			t.Run(version+"/"+locale, func(t *testing.T) {
				requireLocale(t, locale)
				want := flinkClasspath(t, version, locale, lib)
				byLocale[locale] = want
				require.Len(t, want, len(realLib(t, version))+len(trickyNames)+1, "every JAR, the link to a directory included, no directory")

				names, err := host.List(os.DirFS("/"), lib)
				require.NoError(t, err)
				order, desc := host.OrderFor(os.DirFS("/"), locale)
				got := host.Classpath(names, order)
				for i := range got {
					got[i] = "/" + got[i]
				}
				t.Logf("%s: %d entries, ours ordered by %s; last: %s", locale, len(want), desc, want[len(want)-1])
				for i := range max(len(want), len(got)) {
					var w, g string
					if i < len(want) {
						w = want[i]
					}
					if i < len(got) {
						g = got[i]
					}
					assert.Equal(t, w, g, "entry %d under %s", i, locale)
				}
			})
		}
		if len(byLocale) == 3 {
			assert.Equal(t, byLocale["C"], byLocale["C.UTF-8"], "C.UTF-8 collates by code point, as C does")
			assert.NotEqual(t, byLocale["C"], byLocale["en_US.UTF-8"], "the names tell the locales apart")
		}
	}
}

// requireLocale fails in CI (and skips elsewhere) when locale is not
// installed: sort would fall back to C silently and the comparison would
// prove nothing about it.
func requireLocale(t *testing.T, locale string) {
	t.Helper()
	if locale == "C" || locale == "POSIX" {
		return
	}
	out, err := exec.Command("locale", "-a").Output()
	require.NoError(t, err)
	norm := func(s string) string { return strings.ToLower(strings.ReplaceAll(s, "-", "")) }
	if slices.ContainsFunc(strings.Fields(string(out)), func(l string) bool { return norm(l) == norm(locale) }) {
		return
	}
	msg := "locale " + locale + " is not installed (.ci/run generates en_US.UTF-8)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
}
