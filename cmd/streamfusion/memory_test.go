package main

import (
	"math"
	"os"
	"runtime/debug"
	"testing"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admit"
)

// A server's soft memory limit is its container's share, not a one-check
// program's; none without a container limit, and GOMEMLIMIT is the
// user's. The container's limit is given (the library reads cgroups).
// Not parallel: it sets the process's limit and environment.
func TestServerMemoryLimit(t *testing.T) {
	before := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetMemoryLimit(before) })
	for _, k := range []string{"GOMEMLIMIT", "AUTOMEMLIMIT"} {
		t.Setenv(k, "") // restored after
		require.NoError(t, os.Unsetenv(k))
	}
	debug.SetMemoryLimit(admit.DeepMemoryLimit) // as an earlier deep check once left it
	assert.Equal(t, int64(9*(1<<30)/10), serverMemoryLimit(zerolog.Nop(), memlimit.Limit(1<<30)))
	assert.Equal(t, int64(9*(1<<30)/10), debug.SetMemoryLimit(-1), "90 % of a 1 GiB container")
	assert.Equal(t, int64(math.MaxInt64), serverMemoryLimit(zerolog.Nop(), func() (uint64, error) { return 0, memlimit.ErrNoLimit }))
	assert.Equal(t, int64(math.MaxInt64), debug.SetMemoryLimit(-1), "no container limit, no soft limit")
	t.Setenv("GOMEMLIMIT", "300MiB")
	debug.SetMemoryLimit(300 << 20)
	serverMemoryLimit(zerolog.Nop(), memlimit.Limit(1<<30))
	assert.Equal(t, int64(300<<20), debug.SetMemoryLimit(-1), "GOMEMLIMIT is the user's")
}
