// Command zerolog is a bare exec that links github.com/rs/zerolog: the price of its package
// inits (and its pages) on every start.
package main

import (
	"os"
	"syscall"

	_ "github.com/rs/zerolog"
)

func main() {
	t := os.Getenv("STREAMFUSION_ORIGINAL_ENTRYPOINT")
	panic(syscall.Exec(t, []string{t}, os.Environ()))
}
