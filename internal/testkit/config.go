package testkit

import (
	"fmt"
	"strings"
)

// AliasBomb is a config.yaml of 1.5 KB whose levels of mappings hold nine
// aliases each to the level below: 9^9 mappings once expanded, 81 aliases
// to collections (Flink's loader allows 50). Its keys name env.java.home
// and the additional parent-first patterns, which every reader of the file
// looks for.
func AliasBomb() string {
	var b strings.Builder
	b.WriteString("a0: &a0 {k: v, home: x, additional: y}\n")
	for i := 1; i <= 9; i++ {
		fmt.Fprintf(&b, "a%d: &a%d {", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "k%d: *a%d", j, i-1)
		}
		b.WriteString("}\n")
	}
	b.WriteString("env.java.home: /usr\nclassloader.parent-first-patterns.additional: x\n")
	return b.String()
}
