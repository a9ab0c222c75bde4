// Package handoff is the one thing every start-part command does after its
// part: exec STREAMFUSION_ORIGINAL_ENTRYPOINT, as the entrypoint does.
package handoff

import (
	"os"
	"syscall"
)

// Exec replaces the process with STREAMFUSION_ORIGINAL_ENTRYPOINT.
func Exec() {
	t := os.Getenv("STREAMFUSION_ORIGINAL_ENTRYPOINT")
	panic(syscall.Exec(t, []string{t}, os.Environ()))
}
