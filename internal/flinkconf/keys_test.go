package flinkconf

import "testing"

// BenchmarkKeyTables is what a start pays for the host release's option
// table: indexing its lines, and a score of lookups of options' own keys.
func BenchmarkKeyTables(b *testing.B) {
	data, err := keyTables.ReadFile("flinkkeys/2.2.1.txt")
	if err != nil {
		b.Fatal(err)
	}
	keys := []string{"env.java.opts.all", "jobmanager.bind-host", "jobmanager.rpc.address", "jobmanager.rpc.port",
		"jobmanager.memory.process.size", "jobmanager.execution.failover-strategy", "taskmanager.bind-host", "taskmanager.host",
		"taskmanager.numberOfTaskSlots", "taskmanager.memory.process.size", "parallelism.default", "rest.address",
		"rest.bind-address", "blob.server.port", "state.backend.type", "execution.checkpointing.interval"}
	b.ReportAllocs()
	for b.Loop() {
		k := ParseKeys("2.2.1", string(data))
		for _, key := range keys {
			if !k.Known(key) {
				b.Fatal(key)
			}
		}
	}
}
