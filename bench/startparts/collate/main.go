// Command collate is a bare exec that links golang.org/x/text/collate: the price of its package
// inits (and its pages) on every start.
package main

import (
	"os"
	"syscall"

	_ "golang.org/x/text/collate"
)

func main() {
	t := os.Getenv("STREAMFUSION_ORIGINAL_ENTRYPOINT")
	panic(syscall.Exec(t, []string{t}, os.Environ()))
}
