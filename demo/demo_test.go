package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestDemoFirstScreenIsACleanAdmit runs `make demo` as a newcomer does
// (the demo and the entrypoint built from this tree, a plain environment):
// its first step shows what a good deployment looks like, an admit without a
// single warning, and its second the refusal with exit status 78.
func TestDemoFirstScreenIsACleanAdmit(t *testing.T) {
	dir := t.TempDir()
	bins := map[string]string{"demo": ".", "entrypoint": "../cmd/entrypoint"}
	for name, pkg := range bins {
		out, err := exec.Command("go", "build", "-o", filepath.Join(dir, name), pkg).CombinedOutput()
		require.NoError(t, err, "%s", out)
	}
	cmd := exec.Command(filepath.Join(dir, "demo"), "-entrypoint", filepath.Join(dir, "entrypoint"), "-root", filepath.Join(dir, "root"))
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)

	first, second, ok := strings.Cut(string(out), "\n2. ")
	require.True(t, ok, "the demo has a second step:\n%s", out)
	assert.Contains(t, first, "streamfusion: INFO admitted jobmanager")
	assert.Contains(t, first, "[example original entrypoint] started")
	for _, noise := range []string{"WARN", "ERROR", "[config-"} {
		assert.NotContains(t, first, noise, "the first screen is a clean admit")
	}
	assert.Contains(t, second, "ERROR [payload-line]")
	assert.Contains(t, second, "exit status 78")
}
