// Package startparts holds tiny commands that each add one part of the
// entrypoint's start to a bare exec, so that bench/compare can price the
// part alone (issue 19's start-path budget, docs/performance.md): the
// package inits of one library, or signal handling as the entrypoint sets
// it up. Each execs STREAMFUSION_ORIGINAL_ENTRYPOINT, as the entrypoint
// does, so `go run ./bench/compare -parts bin/startparts-notify,...`
// prices them over a bare exec beside the entrypoint and the minimal
// reader (`make bench-start-parts`).
package startparts
