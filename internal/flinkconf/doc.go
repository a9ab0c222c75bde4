// Package flinkconf is the one reader of Flink's configuration: config.yaml
// as Flink 2.x loads it (ReadYAML: snakeyaml-engine's YAML 1.2 core schema,
// flattened into dotted keys, values rendered as Configuration.toMap renders
// them), flink-conf.yaml as Flink 1.18 reads it line by line (ReadLegacy:
// it is not YAML), the -D dynamic properties of a process's arguments
// (Dynamic), and the flat env.java.home line of Flink's scripts' sed
// (ScriptJavaHome); each supported release's table of options (Keys:
// flinkkeys/, embedded, made from the real distributions by `make
// config-tables`) and the TaskManager's JVM options as Flink's scripts
// merge them (TaskManagerJVM). Every caller that needs a key of a config file reads it
// here: the JDK lookup, the user class loader's parent-first patterns, the
// config rules.
//
// Everything it reads comes from an image or a request, so it is bounded
// (Limits): the bytes of a file, its nesting, its keys, the aliases to
// collections (Flink's own loader refuses more than 50, and so does
// ReadYAML, as ErrFlink) and the values aliases expand to, counted as one
// budget of nodes visited and bytes rendered (ErrLimit). Aliases are never
// expanded past that budget, so a file of a few hundred bytes that would
// expand to billions of values is refused in microseconds.
//
// YAML is parsed by go.yaml.in/yaml/v3 (the maintained continuation of
// gopkg.in/yaml.v3) into nodes; flattening them into Flink's keys and
// rendering scalars as Flink's Configuration shows them are ours, as no
// library does what Flink does. Where the files come from (which file a
// release reads, FLINK_PROPERTIES, envsubst) is internal/host's.
package flinkconf
