// Command zerolog is a bare exec that links github.com/rs/zerolog: the price of its package
// inits (and its pages) on every start.
package main

import (
	_ "github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/bench/startparts/handoff"
)

func main() { handoff.Exec() }
