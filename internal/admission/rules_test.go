package admission_test

import (
	"context"
	"maps"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const lib = "/" + testkit.LibDir

var defaults = host.Settings{
	LibDir:     lib,
	PluginsDir: "/" + testkit.FlinkHome + "/plugins",
	JavaHome:   "/" + testkit.JavaHome,
	OS:         "linux",
	Arch:       "x86_64",
}

// decide gathers facts from a test root and decides.
func decide(t *testing.T, fsys fstest.MapFS, s host.Settings) *admission.Decision {
	t.Helper()
	facts, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	return admission.Decide(facts)
}

func rules(fs []admission.Finding) []string {
	var ids []string
	for _, f := range fs {
		ids = append(ids, f.Rule)
	}
	return ids
}

type ruleCase struct {
	name string
	rule string // the rule that must fire
	root func() fstest.MapFS
	set  func(*host.Settings)
	// admit is the same setting mended: the rule must not fire there.
	admit func() fstest.MapFS
}

func good() fstest.MapFS { return testkit.Good("2.2.1").MapFS() }

func put(m fstest.MapFS, name string, data []byte) fstest.MapFS {
	m[name] = &fstest.MapFile{Data: data, Mode: 0o644}
	return m
}

// stockJAR is a Flink JAR whose manifest says what the real ones say.
func stockJAR(title, version string) []byte {
	return testkit.JAR(testkit.Manifest("Implementation-Title", "Flink : "+title, "Implementation-Version", version, "Implementation-Vendor-Id", "org.apache.flink"))
}

func libFile(name string) string { return testkit.LibDir + "/" + name }

func ext(name string, mod func(*testkit.Payload)) testkit.Payload {
	p := testkit.Extension(name, "2.2", "0.1.0")
	if mod != nil {
		mod(&p)
	}
	return p
}

func withLoader(mod func(*testkit.Payload)) fstest.MapFS {
	l := testkit.Loader("2.2", "0.1.0")
	mod(&l)
	return testkit.Good("2.2.1").Replace("streamfusion-loader", l).MapFS()
}

var cases = []ruleCase{
	{name: "lib missing", rule: "host-lib", root: good, set: func(s *host.Settings) { s.LibDir = "/opt/flink/nolib" }},
	{name: "an install that did not finish", rule: "install-interrupted", root: func() fstest.MapFS {
		return put(good(), libFile(host.InstallJournal), []byte("streamfusion-install-journal 1\n"))
	}},
	{name: "no planner", rule: "host-planner-missing", root: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.Planner = "none"
		return d.MapFS()
	}},
	{name: "both planners", rule: "host-planner-both", root: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.Planner = "both"
		return d.MapFS()
	}, admit: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.Planner = "scala"
		return d.MapFS()
	}},
	{name: "two planner loaders", rule: "host-planner-several", root: func() fstest.MapFS {
		m := good()
		return put(m, libFile("flink-table-planner-loader-2.2.0.jar"), m[libFile("flink-table-planner-loader-2.2.1.jar")].Data)
	}},
	{name: "planner without version", rule: "host-planner-unversioned", root: func() fstest.MapFS {
		return put(good(), libFile("flink-table-planner-loader-2.2.1.jar"), testkit.JAR(testkit.Manifest("Implementation-Title", "flink-table-planner-loader")))
	}},
	{name: "Flink 2.3.0", rule: "host-planner-abi", root: func() fstest.MapFS {
		return testkit.Dist{Flink: "2.3.0", Payloads: testkit.StreamFusion("2.2", "0.1.0")}.MapFS()
	}},
	{name: "Flink 1.18.0", rule: "host-planner-abi", root: func() fstest.MapFS {
		return testkit.Dist{Flink: "1.18.0", Payloads: testkit.StreamFusion("1.18", "0.1.0")}.MapFS()
	}},
	{name: "no flink-dist", rule: "host-dist-missing", root: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.NoDist = true
		return d.MapFS()
	}},
	{name: "two flink-dist", rule: "host-dist-duplicate", root: func() fstest.MapFS {
		m := good()
		return put(m, libFile("flink-dist-2.2.0.jar"), testkit.Good("2.2.0").Tree()[libFile("flink-dist-2.2.0.jar")])
	}},
	{name: "flink-dist without version", rule: "host-dist-unversioned", root: func() fstest.MapFS {
		return put(good(), libFile("flink-dist-2.2.1.jar"), testkit.JAR(testkit.Manifest("Implementation-Title", "flink-dist")))
	}},
	{name: "flink-dist of another release", rule: "host-dist-mixed", root: func() fstest.MapFS {
		return put(good(), libFile("flink-dist-2.2.1.jar"), testkit.Good("2.2.0").Tree()[libFile("flink-dist-2.2.0.jar")])
	}},
	{name: "no JDK", rule: "host-jdk-missing", root: good, set: func(s *host.Settings) { s.JavaHome, s.Path = "", "/usr/bin:/bin" }},
	{name: "JDK version unreadable", rule: "host-jdk-unparseable", root: func() fstest.MapFS {
		return put(good(), testkit.JavaHome+"/release", []byte("JAVA_VERSION=\"banana\"\n"))
	}},
	{name: "JDK 21", rule: "host-jdk-unsupported", root: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.JDK = "21.0.1+12-LTS"
		return d.MapFS()
	}, admit: func() fstest.MapFS {
		d := testkit.Good("2.2.1")
		d.JDK = "11.0.21+9"
		return d.MapFS()
	}},
	{name: "arm64 host, x86_64 natives", rule: "host-platform", root: func() fstest.MapFS {
		return put(good(), "lib/ld-linux-aarch64.so.1", []byte("loader"))
	}, set: func(s *host.Settings) { s.Arch = "arm64" }},
	{name: "musl host", rule: "host-libc", root: func() fstest.MapFS {
		m := good()
		delete(m, testkit.GlibcLD)
		return put(m, "lib/ld-musl-x86_64.so.1", []byte("musl"))
	}},
	{name: "no loader", rule: "loader-missing", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Without("streamfusion-loader").MapFS()
	}},
	{name: "renamed second loader", rule: "loader-duplicate", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").With(testkit.Placed{Name: "zz-loader-copy.jar", Payload: testkit.Loader("2.2", "0.1.0")}).MapFS()
	}},
	{name: "embedded core entry absent", rule: "loader-embedded-missing", root: func() fstest.MapFS {
		return withLoader(func(l *testkit.Payload) {
			l.Attrs = map[string]string{testkit.EmbeddedCoreAttr: "META-INF/streamfusion/other.jar"}
		})
	}},
	{name: "embedded core damaged", rule: "loader-embedded-unreadable", root: func() fstest.MapFS {
		return withLoader(func(l *testkit.Payload) {
			l.Embedded = nil
			l.Attrs = map[string]string{testkit.EmbeddedCoreAttr: testkit.DefaultEmbedPath}
			l.Entries = []testkit.Entry{{Name: testkit.DefaultEmbedPath, Data: []byte("PK\x03\x04 not really a jar")}}
		})
	}},
	{name: "embedded core of another release", rule: "loader-embedded-mismatch", root: func() fstest.MapFS {
		return withLoader(func(l *testkit.Payload) { c := testkit.Core("2.2", "0.0.9"); l.Embedded = &c })
	}},
	{name: "embedded core of another line, stored", rule: "loader-embedded-mismatch", root: func() fstest.MapFS {
		return withLoader(func(l *testkit.Payload) { c := testkit.Core("1.18", "0.1.0"); l.Embedded, l.EmbedStored = &c, true })
	}},
	{name: "no runtime core", rule: "core-missing", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Without("streamfusion-core").MapFS()
	}},
	{name: "two runtime cores", rule: "core-duplicate", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").With(testkit.Placed{Name: "core.jar", Payload: testkit.Core("2.2", "0.1.0")}).MapFS()
	}},
	{name: "runtime core of another release", rule: "core-mismatch", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-core", testkit.Core("2.2", "0.2.0")).MapFS()
	}},
	{name: "runtime core of another build", rule: "core-build-mismatch", root: func() fstest.MapFS {
		c := testkit.Core("2.2", "0.1.0")
		c.BuildID = "badc0ffe"
		return testkit.Good("2.2.1").Replace("streamfusion-core", c).MapFS()
	}},
	{name: "content without marker", rule: "payload-unversioned", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").With(testkit.Placed{Name: "my-udfs.jar", Payload: ext("avro", func(p *testkit.Payload) { p.NoMarker = true })}).MapFS()
	}},
	{name: "native library only", rule: "payload-unversioned", root: func() fstest.MapFS {
		return put(good(), libFile("natives.jar"), testkit.JAR(testkit.Manifest("A", "b"), testkit.Entry{Name: "linux/libstreamfusion_x.so", Data: []byte("so")}))
	}},
	{name: "malformed version", rule: "payload-malformed", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Version = "banana" })).MapFS()
	}},
	{name: "missing attribute", rule: "payload-malformed", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Attrs = map[string]string{"StreamFusion-Artifact": ""} })).MapFS()
	}},
	{name: "foreign group", rule: "payload-identity", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Artifact = "com.example:streamfusion-kafka" })).MapFS()
	}},
	{name: "1.18 artifactId on line 2.2", rule: "payload-identity", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Artifact = "tech.streamfusion:streamfusion-kafka-flink1.18" })).MapFS()
	}},
	{name: "renamed extension for 1.18", rule: "payload-line", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").With(testkit.Placed{Name: "kafka-connector.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")}).MapFS()
	}},
	{name: "extension of another release", rule: "payload-version", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", testkit.Extension("kafka", "2.2", "0.2.0")).MapFS()
	}},
	{name: "Java-Release above the JDK", rule: "payload-jdk", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.JavaRelease = "21" })).MapFS()
	}},
	{name: "Java-Runtime above the JDK", rule: "payload-jdk", root: func() fstest.MapFS {
		d := testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.JavaRuntime = "17" }))
		d.JDK = "11.0.21+9"
		return d.MapFS()
	}, admit: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.JavaRuntime = "17" })).MapFS()
	}},
	{name: "renamed copy of an extension", rule: "payload-duplicate-module", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").With(testkit.Placed{Name: "kafka.jar", Payload: testkit.Extension("kafka", "2.2", "0.1.0")}).MapFS()
	}},
	{name: "job JAR with StreamFusion inside", rule: "layout-usrlib", root: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/usrlib/job.jar", testkit.JAR(testkit.Manifest("Main-Class", "Job"),
			testkit.Entry{Name: "tech/streamfusion/core/Api.class", Data: []byte("x")}))
	}, admit: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/usrlib/job.jar", testkit.JAR(testkit.Manifest("Main-Class", "Job")))
	}},
	{name: "payload bundles slf4j", rule: "layout-logging", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) {
			p.Entries = []testkit.Entry{{Name: "org/slf4j/Logger.class", Data: []byte("x")}}
		})).MapFS()
	}},
	{name: "paimon after stock paimon", rule: "layout-paimon-order", root: func() fstest.MapFS {
		m := testkit.Good("2.2.1").With(testkit.Placed{Name: "streamfusion-paimon-0.1.0.jar", Payload: testkit.Extension("paimon", "2.2", "0.1.0")}).MapFS()
		return put(m, libFile("paimon-flink-2.2-1.3.0.jar"), testkit.JAR(testkit.Manifest("Implementation-Title", "paimon-flink")))
	}, admit: func() fstest.MapFS {
		m := testkit.Good("2.2.1").With(testkit.Placed{Name: "00-streamfusion-paimon-0.1.0.jar", Payload: testkit.Extension("paimon", "2.2", "0.1.0")}).MapFS()
		return put(m, libFile("paimon-flink-2.2-1.3.0.jar"), testkit.JAR(testkit.Manifest("Implementation-Title", "paimon-flink")))
	}},
	{name: "connector of line 1.18", rule: "stock-line", root: func() fstest.MapFS {
		return put(good(), libFile("flink-connector-kafka-3.2.0-1.18.jar"), stockJAR("Connectors : Kafka", "3.2.0-1.18"))
	}, admit: func() fstest.MapFS {
		return put(good(), libFile("flink-connector-kafka-3.2.0-1.18.jar"), stockJAR("Connectors : Kafka", "5.0.0-2.2"))
	}},
	{name: "format of Flink 1.18.1", rule: "stock-release", root: func() fstest.MapFS {
		return put(good(), libFile("flink-avro-1.18.1.jar"), stockJAR("Formats : Avro", "1.18.1"))
	}, admit: func() fstest.MapFS {
		return put(good(), libFile("flink-avro-2.2.1.jar"), stockJAR("Formats : Avro", "2.2.1"))
	}},
	{name: "connector twice", rule: "stock-duplicate", root: func() fstest.MapFS {
		m := put(good(), libFile("flink-connector-kafka-5.0.0-2.2.jar"), stockJAR("Connectors : Kafka", "5.0.0-2.2"))
		return put(m, libFile("kafka.jar"), stockJAR("Connectors : Kafka", "5.0.0-2.2"))
	}, admit: func() fstest.MapFS {
		return put(good(), libFile("kafka.jar"), stockJAR("Connectors : Kafka", "5.0.0-2.2"))
	}},
	{name: "not a ZIP", rule: "layout-unreadable-jar", root: func() fstest.MapFS {
		return put(good(), libFile("broken.jar"), []byte("<html>404 Not Found</html>"))
	}},
	{name: "Flink 1.18.1", rule: "line-experimental", root: func() fstest.MapFS { return testkit.Good("1.18.1").MapFS() }},
	{name: "required module absent", rule: "requires-missing", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Requires = "streamfusion-avro" })).MapFS()
	}, admit: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Requires = "streamfusion-json" })).MapFS()
	}},
	{name: "stock connector absent", rule: "stock-requires-missing", root: func() fstest.MapFS {
		return testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Stock = "flink-connector-kafka" })).MapFS()
	}, admit: func() fstest.MapFS {
		m := testkit.Good("2.2.1").Replace("streamfusion-kafka", ext("kafka", func(p *testkit.Payload) { p.Stock = "flink-connector-kafka" })).MapFS()
		return put(m, libFile("flink-connector-kafka-5.0.0-2.2.jar"), testkit.JAR(testkit.Manifest("Implementation-Version", "5.0.0-2.2")))
	}},
	{name: "2.x conf with only flink-conf.yaml", rule: "config-file-line", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"flink-conf.yaml": "parallelism.default: 1\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }},
	{name: "deprecated key against its new key", rule: "config-key-conflict", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "state.backend.type: rocksdb\nstate.backend: hashmap\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }},
	{name: "a key Flink does not know", rule: "config-unknown-key", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "taskmanager.numberOfTaskSlot: 1\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }},
	{name: "TaskManager without the Arrow options", rule: "config-taskmanager-flags", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "parallelism.default: 1\n"})
	}, set: func(s *host.Settings) { *s = confSettings("taskmanager", imageEnv, "") }},
	{name: "the old GLIBC_TUNABLES", rule: "config-env", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "parallelism.default: 1\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", oldEnv, "") }},
	{name: "s3 checkpoints without a plugin", rule: "fs-scheme-unserved", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "execution.checkpointing.dir: s3://bucket/cp\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }},
	{name: "a JAR straight in plugins", rule: "plugins-loose-jar", root: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/plugins/reporter.jar", testkit.JAR(""))
	}},
	{name: "an empty plugin folder", rule: "plugins-empty-folder", root: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/plugins/s3/README.txt", nil)
	}},
	{name: "ENABLE_BUILT_IN_PLUGINS naming what opt lacks", rule: "plugins-enable-missing", root: good, set: func(s *host.Settings) {
		*s = confSettings("jobmanager", map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-hadoop-2.2.1.jar"}, "")
		s.Launch = host.LaunchImage
	}},
	{name: "the SLF4J 2 API ahead of flink-dist without a provider", rule: "logging-binding-lost", root: func() fstest.MapFS {
		return put(good(), libFile("a-connector.jar"), testkit.JAR("", testkit.Entry{Name: "org/slf4j/LoggerFactory.class", Data: []byte("2")}, testkit.Entry{Name: "org/slf4j/spi/SLF4JServiceProvider.class", Data: []byte("2")}))
	}, admit: func() fstest.MapFS {
		m := put(good(), libFile("a-connector.jar"), testkit.JAR("", testkit.Entry{Name: "org/slf4j/LoggerFactory.class", Data: []byte("2")}, testkit.Entry{Name: "org/slf4j/spi/SLF4JServiceProvider.class", Data: []byte("2")}))
		return put(m, libFile("log4j-slf4j2-impl-2.24.3.jar"), testkit.JAR("", testkit.Entry{Name: "META-INF/services/org.slf4j.spi.SLF4JServiceProvider", Data: []byte("org.apache.logging.slf4j.SLF4JServiceProvider\n")}))
	}},
	{name: "a plugin of another release", rule: "plugins-release", root: func() fstest.MapFS {
		m := withConf("2.2.1", map[string]string{"config.yaml": "execution.checkpointing.dir: s3://b/cp\n"})
		return put(m, plugins+"/s3/flink-s3-fs-hadoop-1.18.1.jar", s3PluginOf("1.18.1"))
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }, admit: func() fstest.MapFS {
		m := withConf("2.2.1", map[string]string{"config.yaml": "execution.checkpointing.dir: s3://b/cp\n"})
		return put(m, plugins+"/s3/flink-s3-fs-hadoop-2.2.1.jar", s3PluginOf("2.2.1"))
	}},
	{name: "log4j-to-slf4j in lib", rule: "logging-bridge-loop", root: func() fstest.MapFS {
		return put(good(), libFile("log4j-to-slf4j-2.24.3.jar"), log4jToSLF4J(true))
	}, admit: func() fstest.MapFS {
		return put(good(), libFile("log4j-to-slf4j-2.24.3.jar"), log4jToSLF4J(false)) // its provider class without the service file
	}},
	{name: "a Prometheus reporter without its plugin", rule: "reporter-unavailable", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": "metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }},
	{name: "a Prometheus port as a YAML int", rule: "reporter-option-ignored", root: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": promConf + "metrics.reporter.prom.port: 9251\n"})
	}, set: func(s *host.Settings) { *s = confSettings("jobmanager", imageEnv, "") }, admit: func() fstest.MapFS {
		return withConf("2.2.1", map[string]string{"config.yaml": promConf + "metrics.reporter.prom.port: \"9251\"\n"})
	}},
	{name: "payload in plugins", rule: "plugins-payload", root: func() fstest.MapFS {
		return put(good(), testkit.FlinkHome+"/plugins/sf/streamfusion-kafka.jar", testkit.Extension("kafka", "2.2", "0.1.0").Bytes())
	}},
}

// deep asks for the class indexes the shadowing and linkage rules read.
func deep(s *host.Settings) { s.Deep = true }

// job is a job JAR in usrlib whose Main-Class is com/acme/Main.
func job(classes ...testkit.Class) fstest.MapFS {
	jar := testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.Main"), classes, nil)
	return put(good(), testkit.FlinkHome+"/usrlib/job.jar", jar)
}

var deepCases = []ruleCase{
	{name: "a lib JAR hides a class of flink-dist", rule: "classpath-shadowed", set: deep, root: func() fstest.MapFS {
		return put(good(), libFile("a-fat.jar"), testkit.JAR("", testkit.Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: []byte("another build")}))
	}},
	{name: "a job uses a class that is not there", rule: "linkage-class", set: deep, root: func() fstest.MapFS {
		return job(testkit.Class{Name: "com/acme/Main", News: []string{"com/acme/Gone"}})
	}},
	{name: "a job calls a method that is not there", rule: "linkage-method", set: deep, root: func() fstest.MapFS {
		return job(testkit.Class{Name: "com/acme/Main", Calls: []testkit.Call{{Owner: "com/acme/Util", Name: "gone", Descriptor: "()V"}}}, testkit.Class{Name: "com/acme/Util"})
	}},
	{name: "a job reads a field that is not there", rule: "linkage-field", set: deep, root: func() fstest.MapFS {
		return job(testkit.Class{Name: "com/acme/Main", Calls: []testkit.Call{{Field: true, Owner: "com/acme/Util", Name: "gone", Descriptor: "I"}}}, testkit.Class{Name: "com/acme/Util"})
	}},
	{name: "a job compiled for Java 21", rule: "bytecode-version", set: deep, root: func() fstest.MapFS {
		return job(testkit.Class{Name: "com/acme/Main", Major: 65})
	}},
	{name: "a lib JAR's Factory service file names a class that is not there", rule: "table-factory-broken", set: deep, root: func() fstest.MapFS {
		return put(good(), libFile("a-uber.jar"), testkit.ClassJAR("", nil, map[string][]string{"org.apache.flink.table.factories.Factory": {"com.acme.GoneFactory"}}))
	}},
	{name: "two factories answer one identifier", rule: "table-factory-duplicate", set: deep, root: func() fstest.MapFS {
		factory := func(name string) testkit.Class {
			return testkit.Class{Name: name, Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": "acme"}}
		}
		m := put(good(), libFile("acme-1.jar"), testkit.ClassJAR("", []testkit.Class{factory("com/acme/v1/AcmeFactory")}, map[string][]string{"org.apache.flink.table.factories.Factory": {"com.acme.v1.AcmeFactory"}}))
		return put(m, libFile("acme-2.jar"), testkit.ClassJAR("", []testkit.Class{factory("org/acme/v2/AcmeFactory")}, map[string][]string{"org.apache.flink.table.factories.Factory": {"org.acme.v2.AcmeFactory"}}))
	}},
	{name: "a factory its JAR's service file does not list", rule: "table-factory-unlisted", set: deep, root: func() fstest.MapFS {
		return put(good(), libFile("acme-uber.jar"), unlistedFactoryJAR(true))
	}},
}

func init() { cases = append(cases, deepCases...) }

// sqlWith is sqlCase's lib with the job's SQL given.
func sqlWith(sql string) fstest.MapFS {
	m := sqlCase("acme")
	return put(m, testkit.FlinkHome+"/usrlib/job.sql", []byte(sql))
}

// TestTableFactoryMissingMergesAndYields: one finding per identifier of a
// file, naming its tables; a warning where the SQL adds JARs, a template
// not judged.
func TestTableFactoryMissingMergesAndYields(t *testing.T) {
	t.Parallel()
	s := defaults
	s.Deep, s.Args = true, []string{"/opt/flink/usrlib/job.sql"}
	missing := func(sql string) []admission.Finding {
		var out []admission.Finding
		for _, f := range decide(t, sqlWith(sql), s).Findings {
			if f.Rule == "table-factory-missing" {
				out = append(out, f)
			}
		}
		return out
	}
	got := missing("CREATE TABLE a (x INT) WITH ('connector' = 'kafka');\nCREATE TABLE b (x INT) WITH ('connector' = 'kafka');\nCREATE TABLE c (x INT) WITH ('connector' = 'acme', 'format' = 'avro');")
	require.Len(t, got, 2)
	assert.Contains(t, got[0].Message, "the connector 'kafka' of table a and 1 more has no factory")
	assert.Contains(t, got[1].Message, "the format 'avro' of table c has no factory")
	assert.Equal(t, admission.Error, got[0].Severity)

	got = missing("ADD JAR '/opt/jars/kafka.jar';\nCREATE TABLE a (x INT) WITH ('connector' = 'kafka');")
	require.Len(t, got, 1)
	assert.Equal(t, admission.Warning, got[0].Severity)
	assert.Contains(t, got[0].Message, "unless a JAR the SQL adds (line 1) answers it")

	assert.Empty(t, missing("CREATE TABLE a (x INT) WITH ('connector' = '${SOURCE}');"), "a template is not judged")
}

// sqlCase is a lib with the acme connector (its factory listed) and a
// job's SQL in usrlib naming connector id, which the process's arguments
// name.
func sqlCase(id string) fstest.MapFS {
	// A factory that links on the test kit's lib (no Flink supertype):
	// what the rule reads is its listing and its identifier.
	acme := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/AcmeFactory", Returns: map[string]string{"factoryIdentifier": "acme"}}},
		map[string][]string{"org.apache.flink.table.factories.Factory": {"com.acme.AcmeFactory"}})
	m := put(good(), libFile("acme.jar"), acme)
	return put(m, testkit.FlinkHome+"/usrlib/job.sql", []byte("CREATE TABLE t (a INT) WITH ('connector' = '"+id+"');\nINSERT INTO t SELECT 1;\n"))
}

func init() {
	cases = append(cases, ruleCase{name: "a job's SQL naming a connector not on the class path", rule: "table-factory-missing",
		root: func() fstest.MapFS { return sqlCase("kafka") }, admit: func() fstest.MapFS { return sqlCase("acme") },
		set: func(s *host.Settings) { s.Deep, s.Args = true, []string{"/opt/flink/usrlib/job.sql"} }})
}

// unlistedFactoryJAR is an uber JAR whose service file is a bundled
// format's, in place of its own connector factory's (unlisted: true) or
// beside it (unlisted: false).
func unlistedFactoryJAR(unlisted bool) []byte {
	services := []string{"com.acme.json.AcmeJsonFormatFactory"}
	if !unlisted {
		services = append(services, "com.acme.AcmeTableFactory")
	}
	return testkit.ClassJAR("", []testkit.Class{
		{Name: "com/acme/AcmeTableFactory", Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": "acme"}},
		// A class the fake lib links (a real format factory's interfaces
		// are Flink's, which this lib does not hold).
		{Name: "com/acme/json/AcmeJsonFormatFactory"},
	}, map[string][]string{"org.apache.flink.table.factories.Factory": services})
}

// TestTableFactoryUnlistedOnlyWhereDiscoveryMissesIt: a factory is
// reported only when ServiceLoader would not find it and nothing else
// answers its identifier for its kind.
func TestTableFactoryUnlistedOnlyWhereDiscoveryMissesIt(t *testing.T) {
	t.Parallel()
	iface := testkit.ClassJAR("", []testkit.Class{
		{Name: "com/acme/AcmeFactory", Interface: true, Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": "acme"}},
	}, nil)
	abstract := testkit.ClassJAR("", []testkit.Class{
		{Name: "com/acme/AbstractAcmeFactory", Abstract: true, Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": "acme"}},
	}, nil)
	other := testkit.ClassJAR("", []testkit.Class{
		{Name: "org/acme/AcmeTableFactory", Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": "acme"}},
	}, map[string][]string{"org.apache.flink.table.factories.Factory": {"org.acme.AcmeTableFactory"}})
	computed := testkit.ClassJAR("", []testkit.Class{
		{Name: "com/acme/AcmeTableFactory", Interfaces: []string{"org/apache/flink/table/factories/DynamicTableSourceFactory"}, Returns: map[string]string{"factoryIdentifier": ""}},
	}, nil)
	notAFactory := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/ThreadFactory", Interfaces: []string{"java/util/concurrent/ThreadFactory"}}}, nil)
	for _, c := range []struct {
		name string
		jars map[string][]byte
		want bool
	}{
		{"its own service file lists it", map[string][]byte{"acme.jar": unlistedFactoryJAR(false)}, false},
		{"another service file replaced its own", map[string][]byte{"acme.jar": unlistedFactoryJAR(true)}, true},
		{"an interface", map[string][]byte{"acme.jar": iface}, false},
		{"an abstract class", map[string][]byte{"acme.jar": abstract}, false},
		{"another JAR's listed factory answers its identifier", map[string][]byte{"acme.jar": unlistedFactoryJAR(true), "org-acme.jar": other}, false},
		{"a computed identifier", map[string][]byte{"acme.jar": computed}, false},
		{"a class named *Factory that is no table factory", map[string][]byte{"acme.jar": notAFactory}, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			m := good()
			for name, data := range c.jars {
				m = put(m, libFile(name), data)
			}
			s := defaults
			s.Deep = true
			d := decide(t, m, s)
			var got []admission.Finding
			for _, f := range d.Findings {
				if f.Rule == "table-factory-unlisted" {
					got = append(got, f)
				}
			}
			if !c.want {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Contains(t, got[0].Message, "'acme'")
			assert.Contains(t, got[0].Found, "com.acme.AcmeTableFactory ('acme', org.apache.flink.table.factories.DynamicTableSourceFactory)")
			assert.True(t, d.Admitted(), "a warning")
		})
	}
}

func TestEveryRuleRefusesAndAdmits(t *testing.T) {
	t.Parallel()
	covered := map[string]bool{}
	for _, c := range cases {
		covered[c.rule] = true
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := defaults
			if c.set != nil {
				c.set(&s)
			}
			d := decide(t, c.root(), s)
			require.Contains(t, rules(d.Findings), c.rule, "findings: %v", d.Findings)
			for _, f := range d.Findings {
				if f.Rule == c.rule {
					assert.NotEmpty(t, f.Path, "every finding names its subject")
					assert.NotEmpty(t, f.Found)
					assert.NotEmpty(t, f.Required)
					assert.NotEmpty(t, f.Fix)
				}
			}
			severity := map[string]admission.Severity{}
			for _, r := range admission.Catalogue() {
				severity[r.ID] = r.Severity
			}
			assert.Equal(t, severity[c.rule] == admission.Warning, d.Admitted(), "warnings admit, errors refuse: %v", d.Findings)

			// The mended setting: no finding of this rule.
			admit := good
			if c.admit != nil {
				admit = c.admit
			}
			mended := defaults
			if c.set != nil {
				c.set(&mended)
			}
			if c.set != nil && !mended.Deep {
				mended = defaults // the mended setting is the default one, unless the case only asks for the deep facts
			}
			d = decide(t, admit(), mended)
			assert.NotContains(t, rules(d.Findings), c.rule)
			assert.True(t, d.Admitted(), "mended setting admitted: %v", d.Findings)
		})
	}
	for _, r := range admission.Catalogue() {
		assert.True(t, covered[r.ID], "rule %s has no refusing case", r.ID)
	}
}

func TestGoodHostsAdmitWithoutFindings(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"2.2.0", "2.2.1"} {
		t.Run(v, func(t *testing.T) {
			t.Parallel()
			d := decide(t, testkit.Good(v).MapFS(), defaults)
			assert.Empty(t, d.Findings)
			assert.Equal(t, "2.2", d.Line)
			assert.Equal(t, admission.Supported, d.Support)
			assert.Equal(t, v, d.Flink)
			assert.Len(t, d.Payloads, 4)
		})
	}
}

func TestExperimentalLineAdmitsWithAWarning(t *testing.T) {
	t.Parallel()
	d := decide(t, testkit.Good("1.18.1").MapFS(), defaults)
	assert.True(t, d.Admitted())
	assert.Equal(t, []string{"line-experimental"}, rules(d.Findings))
	assert.Equal(t, admission.Experimental, d.Support)
}

func TestRenamedExtensionMessageNamesBothLines(t *testing.T) {
	t.Parallel()
	d := decide(t, testkit.Good("2.2.1").With(testkit.Placed{Name: "kafka-connector.jar", Payload: testkit.Extension("avro", "1.18", "0.1.0")}).MapFS(), defaults)
	require.False(t, d.Admitted())
	errs := d.Errors()
	require.Len(t, errs, 1, "%v", errs)
	text := errs[0].Text()
	for _, want := range []string{lib + "/kafka-connector.jar", "line 1.18", "line 2.2", "Flink 2.2.1", "streamfusion-avro-flink1.18", "0.1.0"} {
		assert.Contains(t, text, want)
	}
}

func TestAllFindingsAreCollected(t *testing.T) {
	t.Parallel()
	d := testkit.Good("2.2.1").
		Replace("streamfusion-kafka", testkit.Extension("kafka", "1.18", "0.1.0")).
		Replace("streamfusion-json", testkit.Extension("json", "2.2", "0.2.0"))
	d.JDK = "21.0.1"
	got := rules(decide(t, d.MapFS(), defaults).Errors())
	assert.Contains(t, got, "payload-line")
	assert.Contains(t, got, "payload-version")
	assert.Contains(t, got, "host-jdk-unsupported")
}

func TestStrictTurnsWarningsIntoErrors(t *testing.T) {
	t.Parallel()
	s := defaults
	s.Strict = true
	d := decide(t, testkit.Good("1.18.1").MapFS(), s)
	require.False(t, d.Admitted())
	require.Len(t, d.Errors(), 1)
	assert.Equal(t, "line-experimental", d.Errors()[0].Rule)
	assert.True(t, d.Errors()[0].Strict)
}

func TestPlannerScalaDetectedLikeLoader(t *testing.T) {
	t.Parallel()
	dist := testkit.Good("2.2.1")
	dist.Planner = "scala"
	d := decide(t, dist.MapFS(), defaults)
	assert.Empty(t, d.Findings)
	assert.Equal(t, "2.2.1", d.Flink)
}

func TestRulesHaveUniqueIDsAndDocs(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, r := range admission.Catalogue() {
		assert.False(t, seen[r.ID], "duplicate %s", r.ID)
		seen[r.ID] = true
		t.Run(r.ID, func(t *testing.T) {
			assert.NotEmpty(t, r.Doc)
			assert.True(t, strings.HasSuffix(r.Doc, "."))
		})
	}
}

// The verdict on a loader does not depend on whether its core is stored
// or deflated: a core with native libraries for another platform and no
// StreamFusion-Native-Platforms (the rules cannot see a deflated core's
// entries, so they do not look at a stored one's either).
func TestEmbeddedCoreVerdictIgnoresPacking(t *testing.T) {
	t.Parallel()
	var decisions []*admission.Decision
	for _, stored := range []bool{true, false} {
		loader := testkit.Loader("2.2", "0.1.0")
		core := *loader.Embedded
		core.Native, core.Platforms = nil, ""
		core.Entries = []testkit.Entry{{Name: "META-INF/native/linux-aarch64/libstreamfusion_core.so", Data: []byte("\x7fELF")}}
		loader.Embedded, loader.EmbedStored = &core, stored
		d := decide(t, testkit.Good("2.2.1").Replace("streamfusion-loader", loader).MapFS(), defaults)
		decisions = append(decisions, d)
	}
	assert.Equal(t, rules(decisions[0].Findings), rules(decisions[1].Findings), "stored and deflated cores judged alike")
	assert.Equal(t, decisions[0].Admitted(), decisions[1].Admitted())
}

const promConf = "metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n"

// TestReporterOptionIgnoredOnlyWhereTheReporterMissesIt: only a Flink 2
// config.yaml's typed value of a Flink reporter's own option, as Flink
// keeps it last, is reported.
func TestReporterOptionIgnoredOnlyWhereTheReporterMissesIt(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, release, file, conf string
		args                      []string
		want                      []string // the options reported
	}{
		{"an int, a bool and a float", "2.2.1", "config.yaml", promConf + "metrics.reporter.prom.port: 9251\nmetrics.reporter.prom.filterLabelValueCharacters: false\nmetrics.reporter.prom.x: 1.5\n", nil, []string{"filterLabelValueCharacters", "port", "x"}},
		{"nested YAML", "2.2.1", "config.yaml", "metrics:\n  reporter:\n    prom:\n      factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n      port: 9251\n", nil, []string{"port"}},
		{"a port range", "2.2.1", "config.yaml", promConf + "metrics.reporter.prom.port: 9250-9260\n", nil, nil},
		{"options Flink reads itself", "2.2.1", "config.yaml", promConf + "metrics.reporter.prom.interval: 60\nmetrics.reporter.prom.scope.delimiter: 1\n", nil, nil},
		{"a -D that sets it again as a string", "2.2.1", "config.yaml", promConf + "metrics.reporter.prom.port: 9251\n", []string{"-Dmetrics.reporter.prom.port=9252"}, nil},
		{"a reporter of no factory of Flink's", "2.2.1", "config.yaml", "metrics.reporter.acme.factory.class: com.acme.Factory\nmetrics.reporter.acme.port: 9251\n", nil, nil},
		{"a reporter metrics.reporters leaves out", "2.2.1", "config.yaml", "metrics.reporters: other\n" + promConf + "metrics.reporter.prom.port: 9251\n", nil, nil},
		{"Flink 1.18", "1.18.1", "flink-conf.yaml", promConf + "metrics.reporter.prom.port: 9251\n", nil, nil},
		{"Flink 1.18, in quotes", "1.18.1", "flink-conf.yaml", promConf + "metrics.reporter.prom.port: \"9251\"\nmetrics.reporter.prom.host: 'h'\nmetrics.reporter.prom.interval: \"60 s\"\n", nil, []string{"host", "port"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := decide(t, withConf(c.release, map[string]string{c.file: c.conf}), confSettings("jobmanager", imageEnv, "", c.args...))
			var got []string
			for _, f := range d.Findings {
				if f.Rule == "reporter-option-ignored" {
					_, opt, _ := strings.Cut(f.Message, "its option ")
					opt, _, _ = strings.Cut(opt, " ")
					opt = strings.TrimSuffix(opt, ":")
					got = append(got, opt)
					if c.release == "1.18.1" {
						assert.NotContains(t, f.Fix, `"`, "the fix drops the quotes")
					} else {
						assert.Contains(t, f.Fix, `: "`, "the fix quotes the value")
					}
				}
			}
			assert.Equal(t, c.want, got)
		})
	}
}

// log4jToSLF4J is log4j-to-slf4j's JAR: the Log4j API's SLF4J provider,
// with its service file when listed.
func log4jToSLF4J(listed bool) []byte {
	entries := []testkit.Entry{{Name: "org/apache/logging/slf4j/SLF4JProvider.class", Data: []byte("provider")}}
	if listed {
		entries = append(entries, testkit.Entry{Name: "META-INF/services/org.apache.logging.log4j.spi.Provider", Data: []byte("org.apache.logging.slf4j.SLF4JProvider\n")})
	}
	return testkit.JAR("", entries...)
}

// TestLoggingBridgeLoopNeedsBothDirections: log4j-to-slf4j is refused only
// while the binding SLF4J takes is Log4j's.
func TestLoggingBridgeLoopNeedsBothDirections(t *testing.T) {
	t.Parallel()
	m := put(good(), libFile("log4j-to-slf4j-2.24.3.jar"), log4jToSLF4J(true))
	d := decide(t, m, defaults)
	require.Contains(t, rules(d.Findings), "logging-bridge-loop")
	// SLF4J 1.7 bound to Logback 1.2 (its StaticLoggerBinder first).
	logback := put(maps.Clone(m), libFile("a-logback-classic-1.2.13.jar"), testkit.JAR("", testkit.Entry{Name: "org/slf4j/impl/StaticLoggerBinder.class", Data: []byte("logback")}))
	assert.NotContains(t, rules(decide(t, logback, defaults).Findings), "logging-bridge-loop")
	// The SLF4J 2 API winning, with a provider of another backend first.
	slf4j2 := put(maps.Clone(m), libFile("a-slf4j-2.jar"), testkit.JAR("", testkit.Entry{Name: "org/slf4j/LoggerFactory.class", Data: []byte("2")},
		testkit.Entry{Name: "org/slf4j/spi/SLF4JServiceProvider.class", Data: []byte("2")},
		testkit.Entry{Name: "META-INF/services/org.slf4j.spi.SLF4JServiceProvider", Data: []byte("org.slf4j.simple.SimpleServiceProvider\n")}))
	assert.NotContains(t, rules(decide(t, slf4j2, defaults).Findings), "logging-bridge-loop")
	for name := range m {
		if strings.Contains(name, "/log4j-slf4j-impl-") {
			delete(m, name) // no SLF4J binding at all
		}
	}
	d = decide(t, m, defaults)
	assert.NotContains(t, rules(d.Findings), "logging-bridge-loop")
}

// TestTableFactoryMissingSeverity: an error for the SQL the process is
// given, a warning for a file of usrlib nothing names.
func TestTableFactoryMissingSeverity(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name string
		args []string
		want admission.Severity
	}{
		{"named by the arguments", []string{"/opt/flink/usrlib/job.sql"}, admission.Error},
		{"named by nothing", nil, admission.Warning},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := defaults
			s.Deep, s.Args = true, c.args
			d := decide(t, sqlCase("kafka"), s)
			var got []admission.Finding
			for _, f := range d.Findings {
				if f.Rule == "table-factory-missing" {
					got = append(got, f)
				}
			}
			require.Len(t, got, 1)
			assert.Equal(t, c.want, got[0].Severity)
			assert.Contains(t, got[0].Message, "the connector 'kafka' of table t has no factory on the class path")
			assert.Contains(t, got[0].Found, "'connector' = 'kafka' (/opt/flink/usrlib/job.sql, line 1); the identifiers the class path answers: acme")
			assert.Contains(t, got[0].Fix, "flink-sql-connector-kafka")
		})
	}
}
