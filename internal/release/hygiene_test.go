package release

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestHygiene: a release is refused for a tree with changes or files git
// does not ignore, a go.mod that replaces a module, a go.work in effect; a
// committed tree (ignored files beside it) is released. Real git and the
// real go command decide.
func TestHygiene(t *testing.T) {
	ctx := context.Background()
	repo := func(t *testing.T) string {
		dir := t.TempDir()
		write(t, dir, "go.mod", "module example.test/m\n\ngo 1.26\n")
		write(t, dir, ".gitignore", "/release/\n*.gen.go\n*.test\n*~\n")
		git(t, dir, "init", "-q")
		git(t, dir, "add", "-A")
		git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-qm", "m")
		return dir
	}
	t.Setenv("GOWORK", "")
	t.Run("a committed tree", func(t *testing.T) {
		dir := repo(t)
		write(t, dir, "release/bin/x", "built before")
		write(t, dir, "internal/x/x.test", "a test binary")
		require.NoError(t, Hygiene(ctx, dir, ""))
	})
	for _, tc := range []struct {
		name string
		edit func(dir string)
		want string
	}{
		{"a changed file", func(dir string) { write(t, dir, ".gitignore", "") }, "the tree has changes"},
		{"a new file", func(dir string) { write(t, dir, "main.go", "package main\n") }, "the tree has changes"},
		{"an ignored Go file", func(dir string) { write(t, dir, "internal/x/x.gen.go", "package x\n") }, "internal/x/x.gen.go"},
		{"an ignored file in the chart's folder", func(dir string) { write(t, dir, Chart+"/values.yaml~", "old") }, Chart + "/values.yaml~"},
		{"a replaced module", func(dir string) {
			write(t, dir, "go.mod", "module example.test/m\n\ngo 1.26\n\nreplace example.test/x => ../x\n")
			git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-qam", "replace")
		}, "go.mod replaces example.test/x with ../x"},
		{"a go.work", func(dir string) {
			write(t, dir, "go.work", "go 1.26\n\nuse .\n")
			git(t, dir, "add", "go.work")
			git(t, dir, "-c", "user.name=t", "-c", "user.email=t@example.test", "commit", "-qm", "work")
		}, "go.work"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := repo(t)
			tc.edit(dir)
			err := Hygiene(ctx, dir, "")
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
		})
	}
}

func write(t *testing.T, dir, name, data string) {
	t.Helper()
	p := filepath.Join(dir, filepath.FromSlash(name))
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
}

func git(t *testing.T, dir string, args ...string) {
	t.Helper()
	cmd := osexec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
}
