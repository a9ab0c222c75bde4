package main

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A signal stops the start whenever it arrives before the hand-off: during
// the check (the context's cause), as the check finishes (stop returns it),
// or after (still on the channel for pending).
func TestSignalsBeforeTheHandOff(t *testing.T) {
	t.Parallel()
	t.Run("during the check", func(t *testing.T) {
		caught := make(chan os.Signal, 1)
		ctx, stop := admissionContext(time.Hour, caught)
		caught <- syscall.SIGTERM
		<-ctx.Done()
		sig := stop()
		require.NotNil(t, sig)
		assert.Equal(t, syscall.SIGTERM, sig.Signal)
	})
	t.Run("after the check", func(t *testing.T) {
		s := &signals{caught: make(chan os.Signal, 1)}
		_, stop := admissionContext(time.Hour, s.caught)
		require.Nil(t, stop(), "no signal yet")
		assert.Nil(t, s.pending())
		s.caught <- syscall.SIGHUP
		sig := s.pending()
		require.NotNil(t, sig, "a signal after the check is still seen before the hand-off")
		assert.Equal(t, syscall.SIGHUP, sig.Signal)
	})
	t.Run("no signals, the deadline", func(t *testing.T) {
		ctx, stop := admissionContext(time.Millisecond, nil)
		<-ctx.Done()
		assert.Nil(t, stop())
		assert.ErrorIs(t, ctx.Err(), context.DeadlineExceeded)
	})
}
