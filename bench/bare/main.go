// Command bare only execs its argument: the cost of a Go process start and
// an exec, the floor under any entrypoint.
package main

import (
	"os"
	"syscall"
)

func main() {
	err := syscall.Exec(os.Args[1], os.Args[1:], os.Environ())
	panic(err)
}
