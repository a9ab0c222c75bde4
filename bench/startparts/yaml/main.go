// Command yaml is a bare exec that links go.yaml.in/yaml/v3: the price of its package
// inits (and its pages) on every start.
package main

import (
	"os"
	"syscall"

	_ "go.yaml.in/yaml/v3"
)

func main() {
	t := os.Getenv("STREAMFUSION_ORIGINAL_ENTRYPOINT")
	panic(syscall.Exec(t, []string{t}, os.Environ()))
}
