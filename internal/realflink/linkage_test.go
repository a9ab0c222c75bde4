//go:build realjars

package realflink

import (
	"archive/zip"
	"context"
	"encoding/binary"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// deepLayout is a real distribution's lib with real JARs beside it
// (artifact-version names of the JAR cache), and job JARs in usrlib.
func deepLayout(t *testing.T, flink string, extra []string, usrlib map[string][]byte) string {
	t.Helper()
	root := t.TempDir()
	lib := filepath.Join(root, "opt/flink/lib")
	require.NoError(t, os.MkdirAll(lib, 0o755))
	for name, p := range realLib(t, flink) {
		require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
	}
	for _, e := range extra {
		// artifact-version: the version starts at the first dash before a digit.
		i := 0
		for i < len(e)-1 && (e[i] != '-' || e[i+1] < '0' || e[i+1] > '9') {
			i++
		}
		require.NoError(t, os.Symlink(jarPath(t, e[:i], e[i+1:]), filepath.Join(lib, e+".jar")))
	}
	if len(usrlib) > 0 {
		dir := filepath.Join(root, "opt/flink/usrlib")
		require.NoError(t, os.MkdirAll(dir, 0o755))
		for name, data := range usrlib {
			require.NoError(t, os.WriteFile(filepath.Join(dir, name), data, 0o644))
		}
	}
	jdk := filepath.Join(root, testkit.JavaHome)
	require.NoError(t, os.MkdirAll(jdk, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(jdk, "release"), []byte("JAVA_VERSION=\"17.0.15\"\n"), 0o644))
	return root
}

// deepDecide gathers the deep facts as the CLI's check does, and returns
// the shadowing, linkage and bytecode-version findings.
func deepDecide(t *testing.T, root string) ([]admission.Finding, *admission.Facts) {
	t.Helper()
	facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
		LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64", Deep: true,
	}, nil)
	require.NoError(t, err)
	defer facts.Deep.Close()
	var out []admission.Finding
	for _, f := range admission.Decide(facts).Findings {
		if f.Symbol != nil {
			out = append(out, f)
		}
	}
	return out, facts
}

func symbolText(f admission.Finding) string {
	s := f.Symbol
	return f.Rule + " " + string(f.Severity) + " " + s.From + " -> " + s.Owner + "." + s.Name + s.Descriptor
}

func texts(fs []admission.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, symbolText(f))
	}
	return out
}

// The parent-first patterns come from the real flink-dist's CoreOptions,
// and a real lib alone links.
func TestLinkageRealLibsAlone(t *testing.T) {
	want := "java.;scala.;org.apache.flink.;com.esotericsoftware.kryo;org.apache.hadoop.;javax.annotation.;org.xml;javax.xml;org.apache.xerces;org.w3c;org.rocksdb.;org.slf4j;org.apache.log4j;org.apache.logging;org.apache.commons.logging;ch.qos.logback"
	for _, v := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		t.Run(v, func(t *testing.T) {
			got, facts := deepDecide(t, deepLayout(t, v, nil, nil))
			assert.Empty(t, texts(got))
			assert.Equal(t, want, strings.Join(facts.Deep.ParentFirst, ";"))
			assert.Contains(t, facts.Deep.ParentFirstFrom, "org.apache.flink.configuration.CoreOptions in ")
		})
	}
}

// Each connector on its own release, with the client library its POM
// names and the one that client's POM names at run time (zstd-jni: Kafka's
// own compression classes implement its interfaces, so without it they
// cannot load, on any release): nothing to report.
func TestLinkageConsistentSets(t *testing.T) {
	for _, c := range []struct {
		flink string
		jars  []string
	}{
		{"1.18.1", []string{"flink-connector-kafka-3.2.0-1.18", "kafka-clients-3.4.0", "zstd-jni-1.5.2-1"}},
		{"2.2.0", []string{"flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0", "zstd-jni-1.5.6-10"}},
		{"2.2.1", []string{"flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0", "zstd-jni-1.5.6-10"}},
		{"2.2.0", []string{"flink-sql-connector-kafka-5.0.0-2.2"}},
		{"1.18.1", []string{"flink-connector-jdbc-3.2.0-1.18"}},
		{"1.18.1", []string{"iceberg-flink-runtime-1.18-1.5.2"}},
	} {
		t.Run(c.flink+"+"+strings.Join(c.jars, "+"), func(t *testing.T) {
			got, _ := deepDecide(t, deepLayout(t, c.flink, c.jars, nil))
			assert.Empty(t, texts(got))
		})
	}
}

func hasSymbol(t *testing.T, got []admission.Finding, rule, owner, name, desc string) admission.Finding {
	t.Helper()
	for _, f := range got {
		if f.Rule == rule && f.Symbol.Owner == owner && f.Symbol.Name == name && f.Symbol.Descriptor == desc {
			return f
		}
	}
	t.Errorf("no %s %s.%s%s among\n%s", rule, owner, name, desc, strings.Join(texts(got), "\n"))
	return admission.Finding{}
}

// The breaks the JVM harness found (issue 19), each found.
func TestLinkageBreaks(t *testing.T) {
	const (
		fetcher = "org/apache/flink/connector/base/source/reader/fetcher/SingleThreadFetcherManager"
		reader  = "org/apache/flink/connector/base/source/reader/SingleThreadMultiplexSourceReaderBase"
		queue   = "Lorg/apache/flink/connector/base/source/reader/synchronization/FutureCompletingBlockingQueue;"
	)
	t.Run("kafka 3.2.0-1.18 on 2.2.0", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-connector-kafka-3.2.0-1.18", "kafka-clients-3.4.0"}, nil))
		f := hasSymbol(t, got, "linkage-method", fetcher, "<init>", "("+queue+"Ljava/util/function/Supplier;Lorg/apache/flink/configuration/Configuration;Ljava/util/function/Consumer;)V")
		assert.Contains(t, f.Message, "SingleThreadFetcherManager.<init>(FutureCompletingBlockingQueue, Supplier, Configuration, Consumer)")
		assert.Equal(t, "org/apache/flink/connector/kafka/source/reader/fetcher/KafkaSourceFetcherManager", f.Symbol.From)
		assert.Equal(t, "method", f.Symbol.Kind)
		assert.True(t, strings.HasSuffix(f.Symbol.JAR, "/flink-connector-kafka-3.2.0-1.18.jar"), f.Symbol.JAR)
		// No payload requires it, but its code needs what the host's own
		// Flink lacks: built for another release, an error (issue 28).
		assert.Equal(t, admission.Error, f.Severity, "a JAR built for another Flink release")
		assert.Contains(t, f.Found, "flink-connector-kafka-3.2.0-1.18.jar is built for Flink 1.18 (Implementation-Version 3.2.0-1.18 in its manifest), not the host's 2.2")
		hasSymbol(t, got, "linkage-method", "org/apache/flink/table/types/utils/DataTypeUtils", "stripRowPrefix", "(Lorg/apache/flink/table/types/DataType;Ljava/lang/String;)Lorg/apache/flink/table/types/DataType;")
		hasSymbol(t, got, "linkage-method", "org/apache/flink/api/common/typeinfo/TypeInformation", "createSerializer", "(Lorg/apache/flink/api/common/ExecutionConfig;)Lorg/apache/flink/api/common/typeutils/TypeSerializer;")
		hasSymbol(t, got, "linkage-method", "org/apache/flink/configuration/Configuration", "setString", "(Lorg/apache/flink/configuration/ConfigOption;Ljava/lang/String;)V")
		// A class that does not link is the edge to the class with no class
		// file, as the JVM's NoClassDefFoundError names it.
		const sink2 = "org/apache/flink/api/connector/sink2/"
		for from, missing := range map[string]string{
			"org/apache/flink/connector/kafka/sink/KafkaSink":                      sink2 + "Sink$InitContext",
			"org/apache/flink/streaming/connectors/kafka/table/ReducingUpsertSink": sink2 + "Sink$InitContext",
			"org/apache/flink/connector/kafka/sink/TwoPhaseCommittingStatefulSink": sink2 + "TwoPhaseCommittingSink",
		} {
			if f := hasSymbol(t, got, "linkage-class", missing, "", ""); f.Symbol != nil {
				assert.True(t, slices.ContainsFunc(got, func(g admission.Finding) bool {
					return g.Rule == "linkage-class" && g.Symbol.From == from && g.Symbol.Owner == missing
				}), "no linkage-class %s -> %s", from, missing)
			}
		}
		for _, f := range got {
			if f.Symbol.Owner == reader && f.Symbol.Name == "<init>" {
				return
			}
		}
		t.Errorf("no SingleThreadMultiplexSourceReaderBase constructor among %v", texts(got))
	})
	t.Run("kafka 4.0.0-2.0 on 2.2.0", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-connector-kafka-4.0.0-2.0", "kafka-clients-3.9.0"}, nil))
		hasSymbol(t, got, "linkage-method", "org/apache/flink/table/types/utils/DataTypeUtils", "stripRowPrefix", "(Lorg/apache/flink/table/types/DataType;Ljava/lang/String;)Lorg/apache/flink/table/types/DataType;")
	})
	t.Run("kafka 5.0.0-2.2 on 1.18.1", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "1.18.1", []string{"flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0"}, nil))
		hasSymbol(t, got, "linkage-field", "org/apache/flink/table/factories/FactoryUtil", "SOURCE_PARALLELISM", "Lorg/apache/flink/configuration/ConfigOption;")
	})
	t.Run("thin kafka 5.0.0-2.2 without kafka-clients", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-connector-kafka-5.0.0-2.2"}, nil))
		kafka := 0
		for _, f := range got {
			if strings.HasPrefix(f.Symbol.Owner, "org/apache/kafka/") || strings.Contains(f.Found, "org.apache.kafka.") {
				kafka++
			}
		}
		assert.Positive(t, kafka, "the missing client library is found: %v", texts(got))
	})
	t.Run("avro 1.18.1 on 2.2.0", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-avro-1.18.1", "avro-1.11.3"}, nil))
		hasSymbol(t, got, "linkage-class", "org/apache/flink/table/types/logical/TypeInformationRawType", "", "")
	})
	t.Run("jdbc 3.2.0-1.18 on 2.2.0", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-connector-jdbc-3.2.0-1.18"}, nil))
		hasSymbol(t, got, "linkage-class", "org/apache/flink/streaming/api/functions/sink/RichSinkFunction", "", "")
		hasSymbol(t, got, "linkage-method", "org/apache/flink/table/catalog/CatalogTable", "of", "(Lorg/apache/flink/table/api/Schema;Ljava/lang/String;Ljava/util/List;Ljava/util/Map;)Lorg/apache/flink/table/catalog/CatalogTable;")
	})
	t.Run("json 1.18.1 beside 2.2.0's", func(t *testing.T) {
		got, _ := deepDecide(t, deepLayout(t, "2.2.0", []string{"flink-json-1.18.1"}, nil))
		require.NotEmpty(t, got)
		for _, f := range got {
			assert.Equal(t, "classpath-shadowed", f.Rule, symbolText(f))
			assert.Equal(t, "shadow", f.Symbol.Kind)
		}
	})
}

// shadedJob is a job JAR that bundles the classes and service files of
// real JARs (what the maven-shade-plugin writes without relocations), with
// a Main-Class; patch rewrites a class's bytes.
func shadedJob(t *testing.T, mainClass string, patch func(name string, data []byte) []byte, jars ...string) []byte {
	t.Helper()
	var buf strings.Builder
	w := zip.NewWriter(&buf)
	m, err := w.Create("META-INF/MANIFEST.MF")
	require.NoError(t, err)
	_, err = io.WriteString(m, "Manifest-Version: 1.0\r\nMain-Class: "+mainClass+"\r\n\r\n")
	require.NoError(t, err)
	seen := map[string]bool{}
	for _, j := range jars {
		r, err := zip.OpenReader(j)
		require.NoError(t, err)
		for _, f := range r.File {
			if seen[f.Name] || strings.HasSuffix(f.Name, "/") || strings.EqualFold(f.Name, "META-INF/MANIFEST.MF") {
				continue
			}
			seen[f.Name] = true
			rc, err := f.Open()
			require.NoError(t, err)
			data, err := io.ReadAll(rc)
			require.NoError(t, err)
			rc.Close()
			if patch != nil {
				data = patch(f.Name, data)
			}
			out, err := w.Create(f.Name)
			require.NoError(t, err)
			_, err = out.Write(data)
			require.NoError(t, err)
		}
		r.Close()
	}
	require.NoError(t, w.Close())
	return []byte(buf.String())
}

// A job JAR that shades a connector of another line: its findings are
// errors (usrlib), found through the child-first loader; a class compiled
// for a newer Java than the host's is found too.
func TestLinkageShadedJobJAR(t *testing.T) {
	const main = "org.apache.flink.connector.kafka.source.reader.fetcher.KafkaSourceFetcherManager"
	job := shadedJob(t, main, nil, jarPath(t, "flink-connector-kafka", "3.2.0-1.18"), jarPath(t, "kafka-clients", "3.4.0"))
	got, _ := deepDecide(t, deepLayout(t, "2.2.0", nil, map[string][]byte{"job.jar": job}))
	f := hasSymbol(t, got, "linkage-method", "org/apache/flink/connector/base/source/reader/fetcher/SingleThreadFetcherManager", "<init>",
		"(Lorg/apache/flink/connector/base/source/reader/synchronization/FutureCompletingBlockingQueue;Ljava/util/function/Supplier;Lorg/apache/flink/configuration/Configuration;Ljava/util/function/Consumer;)V")
	assert.Equal(t, admission.Error, f.Severity, "a job JAR's break refuses")
	assert.True(t, strings.HasSuffix(f.Path, "/usrlib/job.jar"), f.Path)

	// The same job compiled for Java 21 (class file major 65).
	java21 := func(name string, data []byte) []byte {
		if strings.HasSuffix(name, ".class") && len(data) > 8 {
			data = append([]byte(nil), data...)
			binary.BigEndian.PutUint16(data[6:], 65)
		}
		return data
	}
	job = shadedJob(t, main, java21, jarPath(t, "flink-connector-kafka", "3.2.0-1.18"), jarPath(t, "kafka-clients", "3.4.0"))
	got, _ = deepDecide(t, deepLayout(t, "2.2.0", nil, map[string][]byte{"job.jar": job}))
	versions := 0
	for _, f := range got {
		if f.Rule == "bytecode-version" {
			versions++
			assert.Contains(t, f.Found, "Java 21")
			assert.Equal(t, admission.Error, f.Severity)
			assert.Equal(t, f.Symbol.From, f.Symbol.Owner)
		}
	}
	assert.Equal(t, 1, versions, "one finding for the JAR: %v", texts(got))
}
