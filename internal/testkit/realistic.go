package testkit

import (
	"debug/elf"
	"fmt"
	"os"
	"path/filepath"
)

// Realistic writes a lib directory shaped like a production StreamFusion
// image's, for benchmarks: a flink-dist-like JAR of ~45,000 entries, the
// planner loader with a nested planner of ~20,000 entries, the StreamFusion
// loader whose deflated embedded core carries ~24 MB of native libraries,
// the runtime core, six extensions with native libraries and Flink's other
// lib JARs: about 160 MB in 24 JARs at scale 1. scale multiplies the entry
// counts and divides the entry sizes by the same factor (the native
// libraries stay), so the central directories grow and the files do not.
func Realistic(lib string, scale int) error {
	if err := os.MkdirAll(lib, 0o755); err != nil {
		return err
	}
	v := "2.2.1"
	write := func(name string, data []byte) error { return os.WriteFile(filepath.Join(lib, name), data, 0o644) }
	fm := func(title string) string { return flinkManifest(title, v) }

	dist := BigJAR(45_000*scale, 2_400/scale, fm("flink-dist"),
		Entry{Name: ".flink-runtime.version.properties", Data: []byte("project.version=" + v + "\nscala.binary.version=2.12\n")})
	if err := write("flink-dist-"+v+".jar", dist); err != nil {
		return err
	}
	planner := BigJAR(20_000*scale, 1_800/scale, fm("flink-table-planner"))
	if err := write("flink-table-planner-loader-"+v+".jar", JAR(fm("flink-table-planner-loader"),
		Entry{Name: "org/apache/flink/table/planner/loader/PlannerModule.class", Data: classBytes("loader")},
		Entry{Name: "flink-table-planner.jar", Data: planner})); err != nil {
		return err
	}
	for _, j := range []struct {
		name    string
		entries int
		size    int
	}{
		{"flink-table-runtime", 3_500, 1_000}, {"flink-table-api-java-uber", 4_000, 1_000}, {"flink-cep", 800, 1_000},
		{"flink-connector-files", 600, 1_000}, {"flink-csv", 150, 1_000}, {"flink-json", 150, 1_000},
		{"flink-sql-parquet", 2_000, 1_000}, {"flink-connector-kafka", 250, 1_000}, {"flink-connector-base", 300, 1_000},
	} {
		if err := write(j.name+"-"+v+".jar", BigJAR(j.entries*scale, j.size/scale, fm(j.name))); err != nil {
			return err
		}
	}
	for _, j := range []struct {
		name    string
		entries int
	}{{"log4j-1.2-api-2.24.3", 300}, {"log4j-api-2.24.3", 300}, {"log4j-core-2.24.3", 1_500}, {"log4j-slf4j-impl-2.24.3", 40}, {"kafka-clients-3.9.1", 2_000}} {
		if err := write(j.name+".jar", BigJAR(j.entries*scale, 1_000/scale, Manifest("Implementation-Version", "x"))); err != nil {
			return err
		}
	}
	return RealisticPayloads(lib)
}

// RealisticPayloads writes the StreamFusion part of Realistic's lib (line
// 2.2): the loader whose deflated embedded core carries ~24 MB of native
// libraries, the runtime core, and six extensions with native libraries. With
// a real Flink distribution's lib it makes the benchmark's real layout.
func RealisticPayloads(lib string) error {
	write := func(name string, data []byte) error { return os.WriteFile(filepath.Join(lib, name), data, 0o644) }
	line, sf := "2.2", "0.1.0"
	loader := Loader(line, sf)
	core := *loader.Embedded
	core.Entries = []Entry{{Name: "META-INF/native/linux-x86_64/libstreamfusion_core_full.so", Data: ELFHeader(elf.EM_X86_64, noise(24<<20))}}
	loader.Embedded = &core
	if err := write(loader.FileName(), loader.Bytes()); err != nil {
		return err
	}
	rt := Core(line, sf)
	rt.Entries = []Entry{{Name: "tech/streamfusion/core/runtime/Classes.bin", Data: noise(2 << 20)}}
	if err := write(rt.FileName(), rt.Bytes()); err != nil {
		return err
	}
	for _, m := range []string{"kafka", "json", "csv", "avro", "parquet", "paimon"} {
		e := Extension(m, line, sf)
		e.Entries = []Entry{{Name: fmt.Sprintf("META-INF/native/linux-x86_64/libstreamfusion_%s_ops.so", m), Data: ELFHeader(elf.EM_X86_64, noise(1<<20))}}
		if err := write(e.FileName(), e.Bytes()); err != nil {
			return err
		}
	}
	return nil
}
