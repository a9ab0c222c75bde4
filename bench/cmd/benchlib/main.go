// Command benchlib writes the realistic benchmark lib (testkit.Realistic)
// into a directory.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func main() {
	scale := flag.Int("scale", 1, "multiply the entry counts")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: benchlib [-scale N] DIR")
		os.Exit(64)
	}
	if err := testkit.Realistic(flag.Arg(0), *scale); err != nil {
		fmt.Fprintln(os.Stderr, "benchlib:", err)
		os.Exit(1)
	}
}
