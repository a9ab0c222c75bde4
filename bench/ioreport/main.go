// Command ioreport prints the bytes the process has read so far (rchar of
// /proc/self/io). Exec'd at the end of a run, it reports what the program
// before it in the same process read: the counters survive exec.
package main

import (
	"fmt"
	"os"
	"strings"
)

func main() {
	data, err := os.ReadFile("/proc/self/io")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "rchar: "); ok {
			fmt.Println(v)
		}
	}
}
