package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strings"
)

// Hygiene refuses to release a tree that is not the commit: changes or
// files git does not ignore, a go.mod that replaces a module, a go.work in
// effect. Each would put into the artifacts what no commit holds.
func Hygiene(ctx context.Context, src, goCmd string) error {
	if goCmd == "" {
		goCmd = "go"
	}
	status, err := run(ctx, src, nil, "git", "status", "--porcelain")
	if err != nil {
		return fmt.Errorf("git status: %w", err)
	}
	if s := strings.TrimSpace(status); s != "" {
		return fmt.Errorf("the tree has changes; commit or remove them first:\n%s", s)
	}
	mod, err := run(ctx, src, nil, goCmd, "mod", "edit", "-json")
	if err != nil {
		return err
	}
	var gomod struct {
		Replace []struct {
			Old, New struct{ Path, Version string }
		}
	}
	if err := json.Unmarshal([]byte(mod), &gomod); err != nil {
		return fmt.Errorf("go mod edit -json: %w", err)
	}
	for _, r := range gomod.Replace {
		return fmt.Errorf("go.mod replaces %s with %s: a release is built from the modules go.sum names", r.Old.Path, r.New.Path)
	}
	work, err := run(ctx, src, nil, goCmd, "env", "GOWORK")
	if err != nil {
		return err
	}
	if w := strings.TrimSpace(work); w != "" && w != "off" {
		return fmt.Errorf("go.work %s is in effect: release with GOWORK=off", w)
	}
	return nil
}

// Commit is the tree's commit and its committer time (seconds).
func Commit(ctx context.Context, src string) (string, string, error) {
	out, err := run(ctx, src, nil, "git", "log", "-1", "--format=%H %ct")
	if err != nil {
		return "", "", err
	}
	f := strings.Fields(out)
	if len(f) != 2 {
		return "", "", fmt.Errorf("git log: %q", out)
	}
	return f[0], f[1], nil
}

func run(ctx context.Context, dir string, env []string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir, cmd.Env = dir, env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return string(out), nil
}
