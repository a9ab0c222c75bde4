package flinkconf

import "strings"

// Part is a piece of the JVM's command line and where it came from.
type Part struct {
	Options string
	Source  string
}

// TaskManagerJVM is the TaskManager's JVM options as bin/config.sh and
// taskmanager.sh merge them: FLINK_ENV_JAVA_OPTS when set, else
// env.java.default-opts.all and env.java.opts.all (else the deprecated
// env.java.opts) of the config file; FLINK_ENV_JAVA_OPTS_TM when set, else
// env.java.default-opts.taskmanager and env.java.opts.taskmanager; the
// JVM's own JAVA_TOOL_OPTIONS and JDK_JAVA_OPTIONS and the scripts'
// JVM_ARGS before them. The scripts read the file, not argv's -D: entries
// are the file's (and what the image merged into it).
func TaskManagerJVM(entries []Entry, getenv func(string) (string, bool)) []Part {
	value := func(key string) (Part, bool) {
		for i := len(entries) - 1; i >= 0; i-- {
			if entries[i].Key == key && strings.TrimSpace(entries[i].Value) != "" {
				return Part{Options: entries[i].Value, Source: key + " in " + entries[i].Source}, true
			}
		}
		return Part{}, false
	}
	env := func(k string) (Part, bool) {
		if getenv == nil {
			return Part{}, false
		}
		v, ok := getenv(k)
		return Part{Options: v, Source: k}, ok && v != ""
	}
	var parts []Part
	for _, k := range []string{"JAVA_TOOL_OPTIONS", "JDK_JAVA_OPTIONS", "JVM_ARGS"} {
		if p, ok := env(k); ok {
			parts = append(parts, p)
		}
	}
	if p, ok := env("FLINK_ENV_JAVA_OPTS"); ok {
		parts = append(parts, p)
	} else {
		if p, ok := value("env.java.default-opts.all"); ok {
			parts = append(parts, p)
		}
		if p, ok := value("env.java.opts.all"); ok {
			parts = append(parts, p)
		} else if p, ok := value("env.java.opts"); ok {
			parts = append(parts, p)
		}
	}
	if p, ok := env("FLINK_ENV_JAVA_OPTS_TM"); ok {
		parts = append(parts, p)
	} else {
		for _, k := range []string{"env.java.default-opts.taskmanager", "env.java.opts.taskmanager"} {
			if p, ok := value(k); ok {
				parts = append(parts, p)
			}
		}
	}
	for i := range parts { // the scripts strip one pair of surrounding quotes
		parts[i].Options = strings.TrimSuffix(strings.TrimPrefix(parts[i].Options, `"`), `"`)
	}
	return parts
}
