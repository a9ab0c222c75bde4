package install

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Lock is an flock(2) on the lib directory itself, held while an install
// plans and applies (and while Recover runs). Nothing is written for it:
// the lock belongs to the open descriptor, and the kernel drops it when
// the last descriptor of that open file closes, which happens when the
// process exits however it exits (SIGKILL included). A lock whose holder
// died is therefore free; there is no stale lock file to clean up.
//
// flock is advisory: it keeps installs apart, not other writers of lib.
// On NFS, Linux emulates flock with a POSIX lock, which an exclusive lock
// on a directory opened read-only cannot take: the install then fails
// with the error rather than running unlocked.
type Lock struct {
	f *os.File
}

// Unlock releases the lock.
func (l *Lock) Unlock() error { return l.f.Close() }

// Holder is the process holding a lock, as the kernel lists it in
// /proc/locks.
type Holder struct {
	PID     int       // 0: not visible from here (another PID namespace)
	Command string    // the process's name (comm); "" when unknown
	Started time.Time // zero when unknown
}

func (h *Holder) String() string {
	if h == nil || h.PID == 0 {
		return "a process not visible from here (another PID namespace, or /proc not mounted)"
	}
	s := "pid " + strconv.Itoa(h.PID)
	if h.Command != "" {
		s += " (" + h.Command + ")"
	}
	if !h.Started.IsZero() {
		s += ", started " + h.Started.UTC().Format(time.RFC3339)
	}
	return s
}

// LockedError is a lock not obtained within the time allowed.
type LockedError struct {
	Lib    string
	Waited time.Duration
	Holder *Holder
}

func (e *LockedError) Error() string {
	return fmt.Sprintf("%s is locked by another install: %s; gave up after %s (--lock-timeout)", e.Lib, e.Holder, e.Waited)
}

// pollEvery is how often a waiting LockLib tries again: flock(2) itself
// cannot wait with a deadline.
const pollEvery = 50 * time.Millisecond

// LockLib takes the lock on lib: exclusive for an install or a recovery,
// shared for a dry run (which writes nothing but must not read a lib half
// changed). It waits up to timeout for a holder to finish, calling
// waiting once with the holder when it has to wait, and returns a
// *LockedError naming the holder when the time runs out.
func LockLib(ctx context.Context, lib string, shared bool, timeout time.Duration, waiting func(*Holder)) (*Lock, error) {
	f, err := os.Open(lib) //nolint:gosec // G703: lib is the directory the user installs into; read-only is all flock needs
	if err != nil {
		return nil, fmt.Errorf("lock %s: %w", lib, err)
	}
	how := syscall.LOCK_EX
	if shared {
		how = syscall.LOCK_SH
	}
	start := time.Now()
	told, retries := false, 0
	for {
		err := syscall.Flock(int(f.Fd()), how|syscall.LOCK_NB)
		if err == nil {
			return &Lock{f: f}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: flock: %w", lib, err)
		}
		waited := time.Since(start)
		if waited >= timeout {
			h := holderOf(f)
			if h == nil && retries < 3 {
				// Not listed: the holder let go between the flock and the
				// look at /proc/locks. The lock may be free: try it again
				// rather than name nobody (a few times, for a /proc that
				// cannot be read).
				retries++
				continue
			}
			f.Close()
			return nil, &LockedError{Lib: lib, Waited: waited.Round(time.Millisecond), Holder: h}
		}
		if !told && waiting != nil {
			waiting(holderOf(f))
			told = true
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", lib, ctx.Err())
		case <-time.After(min(pollEvery, timeout-waited)):
		}
	}
}

// holderOf finds the process holding an flock on f's inode in
// /proc/locks ("1: FLOCK  ADVISORY  WRITE 4242 fd:01:1835 0 EOF"; lines
// with "->" are waiters). nil when it is not listed (released meanwhile,
// or /proc unreadable).
func holderOf(f *os.File) *Holder {
	var st syscall.Stat_t
	if err := syscall.Fstat(int(f.Fd()), &st); err != nil {
		return nil
	}
	dev := uint64(st.Dev) //nolint:unconvert // int on some platforms
	major := (dev>>8)&0xfff | (dev>>32)&^uint64(0xfff)
	minor := dev&0xff | (dev>>12)&^uint64(0xff)
	want := fmt.Sprintf("%02x:%02x:%d", major, minor, st.Ino)
	locks, err := os.Open("/proc/locks")
	if err != nil {
		return nil
	}
	defer locks.Close()
	sc := bufio.NewScanner(locks)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) < 6 || fields[1] != "FLOCK" || fields[5] != want {
			continue
		}
		pid, err := strconv.Atoi(fields[4])
		if err != nil || pid <= 0 {
			return &Holder{}
		}
		h := &Holder{PID: pid}
		h.Command, h.Started = procStart(pid)
		return h
	}
	return nil
}

// procStart reads a process's name and start time from /proc: field 22 of
// /proc/PID/stat is its start in clock ticks after boot (USER_HZ, 100 on
// Linux), /proc/stat's btime the boot time.
func procStart(pid int) (string, time.Time) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", time.Time{}
	}
	s := string(b)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return "", time.Time{}
	}
	comm := s[open+1 : closing]
	rest := strings.Fields(s[closing+1:]) // from field 3 on
	if len(rest) < 20 {
		return comm, time.Time{}
	}
	ticks, err := strconv.ParseInt(rest[19], 10, 64)
	if err != nil {
		return comm, time.Time{}
	}
	st, err := os.ReadFile("/proc/stat")
	if err != nil {
		return comm, time.Time{}
	}
	for _, l := range strings.Split(string(st), "\n") {
		if v, ok := strings.CutPrefix(l, "btime "); ok {
			boot, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
			if err != nil {
				break
			}
			const userHZ = 100
			return comm, time.Unix(boot, 0).Add(time.Duration(ticks) * time.Second / userHZ)
		}
	}
	return comm, time.Time{}
}
