package main

import (
	"math"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/jobjar"
)

// serverMemoryRatio is the share of its container's memory limit a
// server (webhook, audit) takes as its soft memory limit: the rest is
// for what the collector does not count (stacks, the runtime's own).
const serverMemoryRatio = 0.9

// serverMemoryLimit sets the soft memory limit of a command that keeps
// images' lib and verdicts across many checks (webhook, audit) from its
// container's memory limit (from: memlimit.FromCgroup, v1 or v2), unless
// GOMEMLIMIT or AUTOMEMLIMIT=off says otherwise; none without a container
// limit. It returns the limit set.
//
// Not admit.DeepMemoryLimit, a one-check program's: a server's kept lib
// and one new job JAR's classes pass its 200 MiB, and the collector would
// then run without pause (a 45 MB JAR's review took 1.8 s against 1.0 s;
// docs/performance.md). The library reads cgroups as the kernel lays them
// out, which is what it is maintained for.
func serverMemoryLimit(log zerolog.Logger, from memlimit.Provider) int64 {
	limit, err := memlimit.Set(memlimit.WithRatio(serverMemoryRatio), memlimit.WithProvider(from))
	switch {
	case err != nil:
		log.Info().Err(err).Msg("no soft memory limit from the container's: the collector's default")
	case limit == math.MaxInt64:
		log.Info().Msg("no container memory limit: no soft memory limit")
	default:
		log.Info().Str("limit", jobjar.Size(limit)).Msg("soft memory limit")
	}
	return limit
}
