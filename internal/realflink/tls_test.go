//go:build realjars

package realflink

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oldTunable is the GLIBC_TUNABLES value images carried up to issue 29
// (docs/glibc-tunables.md): glibc takes the reserved static TLS out of every
// thread's stack, and the JVM's 136 KiB process reaper is left less than its
// own guard zones.
const oldTunable = "glibc.rtld.optional_static_tls=131072"

// tlsPrograms are the two Java programs of the finding: one starts a
// subprocess, the other runs the libc probe of a real Flink 1.18's RocksDB
// (org.rocksdb.util.Environment runs `ldd` in its static initializer).
var tlsPrograms = map[string]string{
	"Spawn.java": `public class Spawn {
    public static void main(String[] a) throws Exception {
        System.out.println("exit " + new ProcessBuilder("true").start().waitFor());
    }
}
`,
	"RocksProbe.java": `public class RocksProbe {
    public static void main(String[] a) {
        System.out.println("musl " + org.rocksdb.util.Environment.isMuslLibc());
    }
}
`,
}

// TestOldTunableKillsTheJVM is the crash of issue 29 on the real JDK: with
// the old GLIBC_TUNABLES every JVM that starts a subprocess dies of SIGSEGV,
// and so does Flink 1.18's RocksDB probe; without it both run. It holds the
// reason images set no GLIBC_TUNABLES and config-env warns about the value.
func TestOldTunableKillsTheJVM(t *testing.T) {
	java := realJava(t)
	javac, err := exec.LookPath("javac")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no javac on PATH: the test compiles its two Java programs")
		}
		t.Skip("no javac on PATH")
	}
	dist := filepath.Join(flinkHome(t, "1.18.1"), "lib", "flink-dist-1.18.1.jar")
	dir := t.TempDir()
	var srcs []string
	for name, src := range tlsPrograms {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(src), 0o644))
		srcs = append(srcs, p)
	}
	out, err := exec.Command(javac, append([]string{"-d", dir, "-cp", dist}, srcs...)...).CombinedOutput()
	require.NoError(t, err, "%s", out)
	cp := dir + string(os.PathListSeparator) + dist

	run := func(tunables *string, opts []string, main string) (string, error) {
		cmd := exec.Command(java, append(append(opts, "-cp", cp), main)...)
		cmd.Env = []string{"PATH=" + os.Getenv("PATH")}
		if tunables != nil {
			cmd.Env = append(cmd.Env, "GLIBC_TUNABLES="+*tunables)
		}
		cmd.Dir = dir // where an hs_err file would land
		cmd.WaitDelay = time.Second
		done := make(chan struct{})
		defer close(done)
		go func() { // a hang is an outcome too (docs/glibc-tunables.md), not a stuck test
			select {
			case <-done:
			case <-time.After(time.Minute):
				if cmd.Process != nil {
					_ = cmd.Process.Kill()
				}
			}
		}()
		b, err := cmd.CombinedOutput()
		return string(b), err
	}
	signalled := func(t *testing.T, err error) syscall.Signal {
		t.Helper()
		var ee *exec.ExitError
		require.True(t, errors.As(err, &ee), "the JVM was expected to die, got %v", err)
		ws := ee.Sys().(syscall.WaitStatus)
		require.True(t, ws.Signaled(), "the JVM exited %d instead of dying of a signal", ws.ExitStatus())
		return ws.Signal()
	}
	old := oldTunable
	for main, want := range map[string]string{"Spawn": "exit 0\n", "RocksProbe": "musl false\n"} {
		t.Run(main, func(t *testing.T) {
			got, err := run(nil, nil, main)
			require.NoError(t, err, "without GLIBC_TUNABLES: %s", got)
			assert.Equal(t, want, got)

			got, err = run(&old, nil, main)
			assert.Equal(t, syscall.SIGSEGV, signalled(t, err), "with %s: %s", old, got)
			assert.Empty(t, got, "the JVM dies before it can print anything")
			hs, _ := filepath.Glob(filepath.Join(dir, "hs_err_pid*.log"))
			assert.Empty(t, hs, "the signal handler has no stack to write an hs_err file on")

			// The reaper's stack and nothing else: given the TLS back, it runs.
			got, err = run(&old, []string{"-XX:+AdjustStackSizeForTLS"}, main)
			require.NoError(t, err, "with %s and -XX:+AdjustStackSizeForTLS: %s", old, got)
			assert.Equal(t, want, got)
		})
	}
}
