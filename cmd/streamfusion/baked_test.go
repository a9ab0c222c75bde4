package main

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// install and check --write-verdict leave lib's deep verdict beside it,
// and a start applies it (the entrypoint's gathering on the same files).
func TestInstallAndCheckWriteTheDeepVerdict(t *testing.T) {
	home, env := flinkHome(t, testkit.Dist{Flink: "2.2.1"})
	verdict := filepath.Join(home, "lib", host.VerdictFile)
	started := func(t *testing.T) string { return startLinkage(t, home, env) }

	code, _, stderr := cli(t, env, append([]string{"install", "--flink-home", home, "--flink-line", "2.2"}, jarArgs(t, "2.2", nil)...)...)
	require.Equal(t, 0, code, stderr)
	require.FileExists(t, verdict)
	assert.Contains(t, started(t), "the baked deep verdict applies")

	require.NoError(t, os.Remove(verdict))
	assert.Contains(t, started(t), "lib holds no baked deep verdict")
	code, out, stderr := cli(t, env, "check", "--write-verdict", "--flink-home", home)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	require.FileExists(t, verdict)
	assert.Contains(t, started(t), "the baked deep verdict applies")
}

// startLinkage is what a start on home says of the deep check: the
// entrypoint's gathering on the same files.
func startLinkage(t *testing.T, home string, env map[string]string) string {
	t.Helper()
	s := host.Settings{LibDir: filepath.Join(home, "lib"), JavaHome: env["JAVA_HOME"], OS: "linux", Arch: "x86_64", Baked: true}
	f, err := host.Gather(context.Background(), os.DirFS("/"), s, nil)
	require.NoError(t, err)
	return f.Linkage
}

// check on a Flink home whose config.yaml is the 1.5 KB mapping alias
// bomb (9^9 mappings once expanded) refuses it at once, naming the file;
// it ran a minute at gigabytes before the reader counted aliases.
func TestCheckRefusesAConfigAliasBomb(t *testing.T) {
	home, env := flinkHome(t, testkit.Good("2.2.1"))
	conf := filepath.Join(home, "conf", "config.yaml")
	require.NoError(t, os.WriteFile(conf, []byte(testkit.AliasBomb()), 0o644))
	code, out, stderr := cli(t, env, "check", "--flink-home", home)
	assert.Equal(t, 78, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "[config-file-line] "+conf)
	assert.Contains(t, out, "81 aliases to collections")
}
