package spool

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestBudget(t *testing.T) {
	t.Parallel()
	t.Run("larger than the budget is refused at once, naming both", func(t *testing.T) {
		b := New(1<<30, "--spool-budget")
		_, err := b.Reserve(context.Background(), 1900<<20, "/opt/flink/lib/a.jar")
		require.ErrorIs(t, err, ErrBudget)
		assert.Contains(t, err.Error(), "/opt/flink/lib/a.jar needs 1.9Gi on disk while it is read, more than the whole budget of 1Gi (--spool-budget)")
		assert.Zero(t, b.Peak())
		assert.Equal(t, int64(1), b.Refused())
	})
	t.Run("a reservation waits for room, and is granted when it is given back", func(t *testing.T) {
		b := New(100, "x")
		r1, err := b.Reserve(context.Background(), 60, "first")
		require.NoError(t, err)
		got := make(chan error, 1)
		go func() {
			r2, err := b.Reserve(context.Background(), 60, "second")
			if err == nil {
				r2()
			}
			got <- err
		}()
		require.Eventually(t, func() bool { return b.Waiting() == 1 }, 5*time.Second, time.Millisecond)
		assert.Equal(t, int64(60), b.InUse())
		r1()
		r1() // harmless
		require.NoError(t, <-got)
		assert.Zero(t, b.InUse())
		assert.Equal(t, int64(60), b.Peak())
	})
	t.Run("the wait context ends the waiting and the note says what it waited for", func(t *testing.T) {
		b := New(100, "--spool-budget")
		r1, err := b.Reserve(context.Background(), 90, "first")
		require.NoError(t, err)
		defer r1()
		wait, stop := context.WithCancel(context.Background())
		var note string
		ctx := WithWait(context.Background(), wait, func(s string) { note = s })
		time.AfterFunc(50*time.Millisecond, stop)
		_, err = b.Reserve(ctx, 20, "/lib/b.jar")
		require.ErrorIs(t, err, ErrBudget)
		assert.True(t, errors.Is(err, ErrBudget))
		assert.Contains(t, err.Error(), "90 bytes of the budget of 100 bytes (--spool-budget) were in use")
		assert.Equal(t, "waiting for 20 bytes of the spool budget for /lib/b.jar (90 bytes of 100 bytes in use, --spool-budget)", note)
		assert.Zero(t, b.Waiting())
	})
	t.Run("a nil budget grants everything", func(t *testing.T) {
		var b *Budget
		r, err := b.Reserve(context.Background(), 1<<40, "x")
		require.NoError(t, err)
		r()
		assert.Zero(t, b.Total())
	})
}

func TestBytes(t *testing.T) {
	t.Parallel()
	for n, want := range map[int64]string{17: "17 bytes", 1 << 30: "1Gi", 1900 << 20: "1.9Gi", 40 << 20: "40Mi", 1536: "1.5Ki"} {
		assert.Equal(t, want, Bytes(n), "%d", n)
	}
}
