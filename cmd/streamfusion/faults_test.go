package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/install"
)

// faultOps, in the test binary only (TestMain runs it as the CLI when
// STREAMFUSION_TEST_CLI=1), are the real file operations with the tests'
// fault hooks, set by environment variables only the test binary reads:
//
//   - STREAMFUSION_FAULT_KILL_AFTER=N stops the process with SIGKILL right
//     after its N-th file operation (counted across Recover and Apply);
//   - STREAMFUSION_FAULT_SNAPSHOTS=DIR with STREAMFUSION_FAULT_LIB=LIB copies
//     LIB to DIR/NNN after each operation that ends in an fsync (the
//     state a power cut can leave at that point);
//   - STREAMFUSION_FAULT_TRACE=1 traces every operation on stderr as
//     "fault-step N: OP PATH".
//
// Without them it is the real thing.
func faultOps() install.FileOps {
	f := &faulty{snapshots: os.Getenv("STREAMFUSION_FAULT_SNAPSHOTS"), lib: os.Getenv("STREAMFUSION_FAULT_LIB"),
		trace: os.Getenv("STREAMFUSION_FAULT_TRACE") == "1"}
	if v := os.Getenv("STREAMFUSION_FAULT_KILL_AFTER"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil {
			panic("STREAMFUSION_FAULT_KILL_AFTER: " + err.Error())
		}
		f.killAfter = n
	}
	return f
}

type faulty struct {
	install.OS
	n, killAfter   int
	snapshots, lib string
	trace          bool
}

func (f *faulty) after(op, name string, err error, synced bool) error {
	f.n++
	if f.trace {
		fmt.Fprintf(os.Stderr, "fault-step %d: %s %s\n", f.n, op, name)
	}
	if synced && err == nil && f.snapshots != "" {
		if e := copyTree(f.lib, filepath.Join(f.snapshots, fmt.Sprintf("%03d", f.n))); e != nil {
			panic("snapshot: " + e.Error())
		}
	}
	if f.n == f.killAfter {
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // the signal is on its way
	}
	return err
}

func (f *faulty) Mkdir(name string) error {
	return f.after("mkdir", name, f.OS.Mkdir(name), false)
}

func (f *faulty) WriteFile(name string, data []byte) error {
	return f.after("write+fsync", name, f.OS.WriteFile(name, data), true)
}

func (f *faulty) Append(name string, data []byte) error {
	return f.after("append+fsync", name, f.OS.Append(name, data), true)
}

func (f *faulty) Rename(from, to string) error {
	return f.after("rename", from+" -> "+to, f.OS.Rename(from, to), false)
}

func (f *faulty) Remove(name string) error {
	return f.after("remove", name, f.OS.Remove(name), false)
}

func (f *faulty) RemoveAll(name string) error {
	return f.after("remove-all", name, f.OS.RemoveAll(name), false)
}

func (f *faulty) SyncDir(dir string) error {
	return f.after("fsync-dir", dir, f.OS.SyncDir(dir), true)
}

// copyTree copies the regular files and directories below src to dst.
func copyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		to := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		in, err := os.Open(p)
		if err != nil {
			return err
		}
		defer in.Close()
		out, err := os.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, info.Mode().Perm())
		if err != nil {
			return err
		}
		_, err = io.Copy(out, in)
		return errors.Join(err, out.Close())
	})
}

// cliBin is the test binary, which TestMain runs as the CLI when
// STREAMFUSION_TEST_CLI=1 (runBin sets it); the fault hooks act only when
// their variables are set.
func cliBin() string { return os.Args[0] }

type result struct {
	code   int
	signal syscall.Signal
	stdout string
	stderr string
}

// runBin runs a binary with exactly env (and extra) as its environment.
func runBin(t *testing.T, bin string, env map[string]string, extra []string, args ...string) result {
	t.Helper()
	cmd := osexec.Command(bin, args...)
	for k, v := range env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.Env = append(cmd.Env, extra...)
	if bin == os.Args[0] {
		cmd.Env = append(cmd.Env, "STREAMFUSION_TEST_CLI=1")
	}
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	r := result{stdout: stdout.String(), stderr: stderr.String()}
	var exit *osexec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit):
		ws := exit.Sys().(syscall.WaitStatus)
		if ws.Signaled() {
			r.signal = ws.Signal()
		}
		r.code = exit.ExitCode()
	default:
		require.NoError(t, err)
	}
	return r
}

type started struct {
	cmd            *osexec.Cmd
	pid            int
	stdout, stderr bytes.Buffer
}

func startBin(t *testing.T, bin string, env map[string]string, args ...string) *started {
	t.Helper()
	s := &started{cmd: osexec.Command(bin, args...)}
	for k, v := range env {
		s.cmd.Env = append(s.cmd.Env, k+"="+v)
	}
	s.cmd.Env = append(s.cmd.Env, "STREAMFUSION_TEST_CLI=1")
	s.cmd.Stdout, s.cmd.Stderr = &s.stdout, &s.stderr
	require.NoError(t, s.cmd.Start())
	s.pid = s.cmd.Process.Pid
	return s
}

func (s *started) wait(t *testing.T) result {
	t.Helper()
	err := s.cmd.Wait()
	var exit *osexec.ExitError
	if err != nil && !errors.As(err, &exit) {
		require.NoError(t, err)
	}
	return result{code: s.cmd.ProcessState.ExitCode(), stdout: s.stdout.String(), stderr: s.stderr.String()}
}
