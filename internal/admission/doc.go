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
// It also holds each supported release's table of configuration options
// (flinkkeys/, embedded; generated from the real distributions by `make
// config-tables`) and the config rules judged on the configuration host
// gathers.
//
// It does no I/O: it reads nothing from disk or the environment, so the
// entrypoint, `streamfusion check` and the image tooling decide the same
// way on the same facts.
package admission
