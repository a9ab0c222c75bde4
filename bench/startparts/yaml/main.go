// Command yaml is a bare exec that links go.yaml.in/yaml/v3: the price of its package
// inits (and its pages) on every start.
package main

import (
	_ "go.yaml.in/yaml/v3"

	"github.com/streamfusion/image-entrypoint/bench/startparts/handoff"
)

func main() { handoff.Exec() }
