package install

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMain runs the test binary as a lock holder when asked (os/exec's
// helper-process pattern): it takes the lock on the directory named by
// STREAMFUSION_TEST_HOLD_LOCK, says "locked" and waits to be killed.
func TestMain(m *testing.M) {
	if dir := os.Getenv("STREAMFUSION_TEST_HOLD_LOCK"); dir != "" {
		if _, err := LockLib(context.Background(), dir, false, 0, nil); err != nil {
			os.Stderr.WriteString(err.Error() + "\n")
			os.Exit(1)
		}
		os.Stdout.WriteString("locked\n")
		select {}
	}
	os.Exit(m.Run())
}

// holdLock starts a process holding the lock on dir.
func holdLock(t *testing.T, dir string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0])
	cmd.Env = append(os.Environ(), "STREAMFUSION_TEST_HOLD_LOCK="+dir)
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	require.Equal(t, "locked\n", line)
	return cmd
}

// A second locker waits, then gives up naming the holder's pid, name and
// start time as the kernel has them; once the holder is killed (SIGKILL:
// nothing of it runs to release anything) the lock is free at once.
func TestLockNamesItsHolderAndDiesWithIt(t *testing.T) {
	lib := t.TempDir()
	started := time.Now()
	holder := holdLock(t, lib)
	running := time.Now()

	var told *Holder
	_, err := LockLib(context.Background(), lib, false, 300*time.Millisecond, func(h *Holder) { told = h })
	var locked *LockedError
	require.ErrorAs(t, err, &locked)
	require.NotNil(t, locked.Holder)
	assert.Equal(t, holder.Process.Pid, locked.Holder.PID)
	assert.Equal(t, told, locked.Holder, "the waiting message names the same holder")
	assert.NotEmpty(t, locked.Holder.Command)
	// /proc/stat's boot time is whole seconds: allow that much either way.
	assert.WithinRange(t, locked.Holder.Started, started.Add(-2*time.Second), running.Add(2*time.Second))
	assert.GreaterOrEqual(t, locked.Waited, 300*time.Millisecond)
	assert.Contains(t, err.Error(), "pid "+strconv.Itoa(holder.Process.Pid))
	assert.Contains(t, err.Error(), "started "+locked.Holder.Started.UTC().Format(time.RFC3339))

	// A shared lock (a dry run) waits for an exclusive holder too.
	_, err = LockLib(context.Background(), lib, true, 0, nil)
	require.ErrorAs(t, err, &locked)

	require.NoError(t, holder.Process.Signal(syscall.SIGKILL))
	_ = holder.Wait()
	l, err := LockLib(context.Background(), lib, false, 0, nil)
	require.NoError(t, err, "the dead holder's lock is free: the kernel dropped it with the process")
	require.NoError(t, l.Unlock())
}

// Two shared locks (dry runs) hold together; an exclusive one waits for
// them; a cancelled wait stops waiting.
func TestSharedLocks(t *testing.T) {
	lib := t.TempDir()
	a, err := LockLib(context.Background(), lib, true, 0, nil)
	require.NoError(t, err)
	b, err := LockLib(context.Background(), lib, true, 0, nil)
	require.NoError(t, err)
	_, err = LockLib(context.Background(), lib, false, 0, nil)
	var locked *LockedError
	require.ErrorAs(t, err, &locked)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = LockLib(ctx, lib, false, time.Hour, nil)
	require.ErrorIs(t, err, context.Canceled)
	require.NoError(t, a.Unlock())
	require.NoError(t, b.Unlock())
	c, err := LockLib(context.Background(), lib, false, 0, nil)
	require.NoError(t, err)
	require.NoError(t, c.Unlock())
	_, err = LockLib(context.Background(), lib+"/missing", false, 0, nil)
	require.True(t, errors.Is(err, os.ErrNotExist), "%v", err)
}
