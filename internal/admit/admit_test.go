package admit

import (
	"context"
	"errors"
	"io/fs"
	"math"
	"os"
	"runtime/debug"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// root writes d below a temporary directory and returns it as the file
// system Check reads, with the settings of an official image.
func root(t *testing.T, d testkit.Dist) (fs.FS, host.Settings) {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, d.Write(dir))
	return os.DirFS(dir), host.Settings{LibDir: "/" + testkit.LibDir, JavaHome: "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64"}
}

func TestCheckDecides(t *testing.T) {
	t.Parallel()
	good := testkit.Good("2.2.1")
	bad := good.Replace("streamfusion-kafka", testkit.Extension("kafka", "1.18", "0.1.0"))
	for _, tc := range []struct {
		name     string
		dist     testkit.Dist
		admitted bool
	}{
		{"a good image is admitted", good, true},
		{"an extension of the other line is refused", bad, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			fsys, s := root(t, tc.dist)
			v, err := Check(context.Background(), Request{Root: fsys, Settings: s})
			require.NoError(t, err, "a refusal is a verdict, not an error")
			assert.Equal(t, tc.admitted, v.Decision.Admitted())
			assert.Equal(t, "2.2.1", v.Decision.Flink)
			assert.NotEmpty(t, v.Facts.Classpath)
			if tc.admitted {
				assert.NoError(t, v.Err())
			} else {
				assert.ErrorIs(t, v.Err(), ErrRefused)
			}
		})
	}
}

func TestCallersRulesComeFirst(t *testing.T) {
	t.Parallel()
	fsys, s := root(t, testkit.Good("2.2.1").Replace("streamfusion-kafka", testkit.Extension("kafka", "1.18", "0.1.0")))
	var seen *admission.Decision
	own := func(f *admission.Facts, d *admission.Decision) []admission.Finding {
		require.NotNil(t, f)
		seen = d
		return []admission.Finding{{Rule: "own-rule", Severity: admission.Error, Message: "the caller's own"}}
	}
	v, err := Check(context.Background(), Request{Root: fsys, Settings: s, Rules: []Rule{own}})
	require.NoError(t, err)
	require.Same(t, v.Decision, seen, "a rule sees the entrypoint's decision")
	require.GreaterOrEqual(t, len(v.Decision.Findings), 2)
	assert.Equal(t, "own-rule", v.Decision.Findings[0].Rule)
	assert.Equal(t, "payload-line", v.Decision.Findings[1].Rule, "the entrypoint's findings follow")
}

// hung is a file system whose named file never opens until release is
// closed: a stand-in for a read blocked on a hung network file system,
// which cannot be made on demand here.
type hung struct {
	fs.FS
	name    string
	once    sync.Once
	opened  chan struct{}
	release chan struct{}
}

func (h *hung) Open(name string) (fs.File, error) {
	if name == h.name {
		h.once.Do(func() { close(h.opened) })
		<-h.release
	}
	return h.FS.Open(name)
}

func blocked(t *testing.T) (*hung, host.Settings) {
	t.Helper()
	fsys, s := root(t, testkit.Good("2.2.1"))
	h := &hung{FS: fsys, name: testkit.LibDir + "/flink-dist-2.2.1.jar", opened: make(chan struct{}), release: make(chan struct{})}
	t.Cleanup(func() { close(h.release) })
	return h, s
}

func TestCheckReturnsAtTheDeadlineWhileAReadHangs(t *testing.T) {
	t.Parallel()
	h, s := blocked(t)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	v, err := Check(ctx, Request{Root: h, Settings: s, Progress: &host.Progress{}})
	assert.Nil(t, v)
	var late *TimeoutError
	require.ErrorAs(t, err, &late)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
	// The hung file is named; another reader may be inside another file
	// at that moment (host reads with two workers).
	assert.Contains(t, late.Reading, "/"+testkit.LibDir+"/flink-dist-2.2.1.jar", "the timeout names the file being read")
}

func TestCheckReturnsTheInterruptingSignal(t *testing.T) {
	t.Parallel()
	h, s := blocked(t)
	ctx, interrupt := context.WithCancelCause(context.Background())
	go func() {
		<-h.opened
		interrupt(&Interrupted{Signal: syscall.SIGTERM})
	}()
	v, err := Check(ctx, Request{Root: h, Settings: s})
	assert.Nil(t, v)
	var sig *Interrupted
	require.ErrorAs(t, err, &sig)
	assert.Equal(t, syscall.SIGTERM, sig.Signal)
}

func TestCheckCanceledIsNoVerdict(t *testing.T) {
	t.Parallel()
	fsys, s := root(t, testkit.Good("2.2.1"))
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	v, err := Check(ctx, Request{Root: fsys, Settings: s})
	assert.Nil(t, v)
	require.ErrorIs(t, err, context.Canceled)
	var late *TimeoutError
	assert.False(t, errors.As(err, &late), "a cancel is not a timeout")
}

// unfired is a context past its deadline whose timer has not run yet: Err
// is nil and Done open, as for a process stopped (SIGSTOP) past its
// deadline that finishes its check on resuming before the runtime runs the
// context's timer. A stand-in: a real context cannot be held in that state.
type unfired struct{ context.Context }

func (unfired) Deadline() (time.Time, bool) { return time.Now().Add(-time.Second), true }

func TestCheckFinishedPastItsDeadlineIsNoVerdict(t *testing.T) {
	t.Parallel()
	fsys, s := root(t, testkit.Good("2.2.1"))
	v, err := Check(unfired{context.Background()}, Request{Root: fsys, Settings: s, Progress: &host.Progress{}})
	assert.Nil(t, v, "a check that ends past the deadline is no verdict")
	var late *TimeoutError
	require.ErrorAs(t, err, &late)
	assert.ErrorIs(t, err, context.DeadlineExceeded)
}

// A deep check leaves the process's soft memory limit as it found it:
// the program sets it (LimitDeepMemory), as a server keeping images'
// lib across checks (the webhook) must not get a one-check program's.
// Not parallel: it reads and restores the process's limit.
func TestCheckLeavesTheMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(math.MaxInt64)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	fsys, deep := root(t, testkit.Good("2.2.1"))
	baked := deep
	deep.Deep, baked.Baked = true, true
	for _, s := range []host.Settings{deep, baked} {
		v, err := Check(context.Background(), Request{Root: fsys, Settings: s})
		require.NoError(t, err)
		require.True(t, v.Decision.Admitted(), "%+v", v.Decision.Findings)
		assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "deep %v, baked %v", s.Deep, s.Baked)
	}
	LimitDeepMemory()
	assert.Equal(t, int64(DeepMemoryLimit), debug.SetMemoryLimit(-1), "a one-check program's limit")
	debug.SetMemoryLimit(1 << 40)
	LimitDeepMemory()
	assert.Equal(t, int64(1<<40), debug.SetMemoryLimit(-1), "a limit already set stays")
}
