package admission

import (
	"embed"
	"slices"
	"strings"
)

// flinkdist/<line>.txt lists, per Flink line, the packages of the classes
// flink-dist carries outside org.apache.flink, unrelocated (Jackson and
// SnakeYAML in 2.0; Kryo, commons, lz4 in all), one internal name a line:
// generated from the real distributions by `make dist-packages`, checked
// against them by TestLinkageDistPackages (make test-linkage). A JAR built
// for one line may use them without shipping them; on a host of another
// line that does not carry them, what it uses of them has no class file.
//
//go:embed flinkdist/*.txt
var distTables embed.FS

// DistPackages returns the packages flink-dist of a Flink line (A.B)
// carries outside org.apache.flink; nil when the line has no table.
func DistPackages(line string) []string {
	data, err := distTables.ReadFile("flinkdist/" + line + ".txt")
	if err != nil {
		return nil
	}
	return strings.Fields(string(data))
}

// DistLines lists the lines that have a table, sorted.
func DistLines() []string {
	names, _ := distTables.ReadDir("flinkdist")
	var out []string
	for _, n := range names {
		out = append(out, strings.TrimSuffix(n.Name(), ".txt"))
	}
	slices.Sort(out)
	return out
}
