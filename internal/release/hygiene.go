package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"path"
	"strings"
)

// Hygiene refuses to release a tree that is not the commit: changes or
// files git does not ignore, ignored files the build or the chart would
// take in, a go.mod that replaces a module, a go.work in effect. Each would put into the artifacts what no commit holds.
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
	// Files git ignores do not show above, but the go command compiles an
	// ignored Go file beside the others, and the chart would be packaged
	// with whatever lies in its folder.
	ignored, err := run(ctx, src, nil, "git", "ls-files", "--others", "--ignored", "--exclude-standard", "-z", "--", "cmd", "internal", Chart)
	if err != nil {
		return fmt.Errorf("git ls-files: %w", err)
	}
	var stray []string
	for _, p := range strings.Split(ignored, "\x00") {
		if p != "" && (strings.HasPrefix(p, Chart+"/") || goSource[path.Ext(p)]) {
			stray = append(stray, p)
		}
	}
	if len(stray) > 0 {
		return fmt.Errorf("files git ignores would go into the release (Go sources the go command compiles, files of the chart's folder); remove them first:\n%s", strings.Join(stray, "\n"))
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

// goSource are the extensions of the files the go command builds with.
var goSource = map[string]bool{".go": true, ".s": true, ".S": true, ".c": true, ".h": true, ".cc": true, ".cpp": true, ".cxx": true, ".hh": true, ".hpp": true, ".m": true, ".f": true, ".F": true, ".for": true, ".f90": true, ".sx": true, ".swig": true, ".swigcxx": true, ".syso": true}

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
