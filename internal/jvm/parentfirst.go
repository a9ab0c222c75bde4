package jvm

import (
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/classfile"
)

// Parent-first options of flink-dist's CoreOptions: the user class
// loader's and the plugins' (PluginLoader's), by key and field.
var (
	UserParentFirst   = ParentFirstOption{Key: "classloader.parent-first-patterns.default", Field: "ALWAYS_PARENT_FIRST_LOADER_PATTERNS"}
	PluginParentFirst = ParentFirstOption{Key: "plugin.classloader.parent-first-patterns.default", Field: "PLUGIN_ALWAYS_PARENT_FIRST_LOADER_PATTERNS"}
)

// ParentFirstOption is a default parent-first option of CoreOptions: its
// key and the static field its ConfigOption is stored into.
type ParentFirstOption struct{ Key, Field string }

// DefaultParentFirst returns the default of a parent-first option (opt)
// as the static initializer of flink-dist's CoreOptions builds it: the
// string constants loaded between the option's key and the store into its
// field, with the strings of any array field the initializer stored
// earlier and reads in between (the logging patterns). Only strings that
// look like package prefixes count (the description's prose does not).
func DefaultParentFirst(c *classfile.Class, opt ParentFirstOption) ([]string, bool) {
	key := opt.Key
	stored := map[string][]string{} // field -> strings loaded since the previous store
	var pending []string
	var patterns []string
	in := false
	for _, insn := range c.Init {
		switch {
		case insn.String != "":
			if insn.String == key {
				in, patterns = true, nil
				continue
			}
			if in {
				if isPattern(insn.String) {
					patterns = append(patterns, insn.String)
				}
			} else {
				pending = append(pending, insn.String)
			}
		case insn.Op == 0xb2 && in && insn.Owner == c.Name: // getstatic of an earlier array
			patterns = append(patterns, stored[insn.Name]...)
		case insn.Op == 0xb3: // putstatic
			if in && insn.Name == opt.Field {
				return patterns, len(patterns) > 0
			}
			if !in {
				var keep []string
				for _, s := range pending {
					if isPattern(s) {
						keep = append(keep, s)
					}
				}
				stored[insn.Name] = keep
				pending = nil
			}
		}
	}
	return nil, false
}

// isPattern: a Java package prefix, dots and identifier characters only,
// as the parent-first patterns are written.
func isPattern(s string) bool {
	if s == "" || strings.Contains(s, "-") {
		return false
	}
	dot := false
	for _, r := range s {
		switch {
		case r == '.':
			dot = true
		case r == '_' || r == '$' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9':
		default:
			return false
		}
	}
	return dot
}
