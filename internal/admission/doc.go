// Package admission decides whether a Flink process may start: host facts
// and the identities of the JARs on the classpath in, a decision with every
// finding out.
//
// It holds the support matrix (the Flink releases whose planner ABI
// StreamFusion is built for), the payload identity rules of the contract
// and the rule table. Each rule has a stable ID, a severity and a doc line,
// and every finding names the subject path, the value found, the value
// required and the fix. All rules run; findings are never cut short at the
// first.
//
// It also holds the config rules, judged on the configuration host gathers
// with each release's table of options (internal/flinkconf's, which reads
// the configuration and holds the tables).
//
// It does no I/O: it reads nothing from disk or the environment, so the
// entrypoint, `streamfusion check` and the image tooling decide the same
// way on the same facts.
package admission
