// Command collate is a bare exec that links golang.org/x/text/collate: the price of its package
// inits (and its pages) on every start.
package main

import (
	_ "golang.org/x/text/collate"

	"github.com/streamfusion/image-entrypoint/bench/startparts/handoff"
)

func main() { handoff.Exec() }
