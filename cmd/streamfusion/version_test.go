package main

import (
	"encoding/json"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// version prints what the binary was built from: the version stamped by
// -ldflags, the commit git names HEAD (the toolchain's VCS stamp, git the
// oracle), the Go release; with main.commit stamped (make build's way,
// for toolchains set to -buildvcs=false) that one.
func TestVersionSaysTheBuild(t *testing.T) {
	head, err := osexec.Command("git", "rev-parse", "HEAD").Output()
	if err != nil {
		require.Empty(t, os.Getenv("CI"), "git rev-parse HEAD: %v (CI runs in a clone)", err)
		t.Skip("not a git checkout")
	}
	want := strings.TrimSpace(string(head))
	bin := filepath.Join(t.TempDir(), "streamfusion")
	out, err := osexec.Command("go", "build", "-buildvcs=true", "-ldflags", "-X main.version=0.0.0-test", "-o", bin, ".").CombinedOutput()
	require.NoError(t, err, "%s", out)
	out, err = osexec.Command(bin, "version", "--json").Output()
	require.NoError(t, err)
	var b build
	require.NoError(t, json.Unmarshal(out, &b), "%s", out)
	assert.Equal(t, "0.0.0-test", b.Version)
	assert.Equal(t, want, b.Commit)
	assert.Equal(t, runtime.Version(), b.Go)
	text, err := osexec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.Contains(t, string(text), "streamfusion 0.0.0-test (commit "+want)

	// make build stamps main.commit, which wins over the VCS stamp.
	defer func(c string) { commit = c }(commit)
	commit = "abc123-modified"
	assert.Equal(t, "abc123-modified", buildOf().Commit)
}
