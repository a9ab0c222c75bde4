package admission_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const plugins = testkit.FlinkHome + "/plugins"

// s3Plugin is a plugin JAR as flink-s3-fs-hadoop lays it out: two
// factories, each returning its scheme, one inheriting it.
func s3Plugin() []byte { return s3PluginOf("") }

// s3PluginOf is s3Plugin with the manifest flink-s3-fs-hadoop of a Flink
// release carries ("": none).
func s3PluginOf(release string) []byte {
	svc := map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"x.S3Factory", "x.S3AFactory", "x.Computed"}}
	manifest := ""
	if release != "" {
		manifest = testkit.Manifest("Implementation-Vendor-Id", "org.apache.flink", "Implementation-Title", "Flink : FileSystems : S3 FS Hadoop", "Implementation-Version", release)
	}
	return testkit.ClassJAR(manifest, []testkit.Class{
		{Name: "x/Base", Returns: map[string]string{"getScheme": "s3"}},
		{Name: "x/S3Factory", Super: "x/Base"},
		{Name: "x/S3AFactory", Returns: map[string]string{"getScheme": "ldc_w:s3a"}},
		{Name: "x/Computed", Returns: map[string]string{"getScheme": ""}},
	}, svc)
}

// reporterPlugin is a metrics plugin JAR: its factory listed in its
// service file, and a second entry whose class is not there.
func reporterPlugin() []byte {
	svc := map[string][]string{"org.apache.flink.metrics.reporter.MetricReporterFactory": {"r.PromFactory", "r.Gone"}}
	return testkit.ClassJAR("", []testkit.Class{{Name: "r/PromFactory"}}, svc)
}

// TestFileSystemRules fires each run-time rule on a case and not on the
// same case mended. Real Flink's verdicts on the real plugins are
// internal/realflink's TestFileSystemsAsFlinkResolvesThem; these cases are
// the rules' edges on JARs this test writes.
func TestFileSystemRules(t *testing.T) {
	t.Parallel()
	conf := func(m fstest.MapFS, body string) fstest.MapFS {
		return put(m, testkit.FlinkHome+"/conf/config.yaml", []byte(body))
	}
	base := func(body string) fstest.MapFS { return conf(withConf("2.2.1", nil), body) }
	for _, c := range []struct {
		name, rule string
		severity   string
		root       fstest.MapFS
		env        map[string]string
		mended     fstest.MapFS
		mendedEnv  map[string]string
	}{
		{name: "s3 checkpoints without a plugin", rule: "fs-scheme-unserved", severity: "error",
			root:   base("execution.checkpointing.dir: s3://b/cp\n"),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/p.jar", s3Plugin())},
		{name: "s3a from a factory whose scheme is an ldc_w", rule: "fs-scheme-unserved", severity: "error",
			root:   base("execution.checkpointing.savepoint-dir: s3p://b/sp\n"),
			mended: put(base("execution.checkpointing.savepoint-dir: s3a://b/sp\n"), plugins+"/s3/p.jar", s3Plugin())},
		{name: "a computed scheme makes it a warning", rule: "fs-scheme-unserved", severity: "warning",
			root:   put(base("execution.checkpointing.dir: gs://b/cp\n"), plugins+"/s3/p.jar", s3Plugin()),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/p.jar", s3Plugin())},
		{name: "the plugin straight in plugins/", rule: "fs-scheme-unserved", severity: "error",
			root:   put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/flink-s3-fs-hadoop-2.2.1.jar", s3Plugin()),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/flink-s3-fs-hadoop-2.2.1/flink-s3-fs-hadoop-2.2.1.jar", s3Plugin())},
		{name: "hdfs with Hadoop on the class path", rule: "fs-scheme-unserved", severity: "error",
			root: base("execution.checkpointing.dir: hdfs://nn/cp\n"), mended: base("execution.checkpointing.dir: hdfs://nn/cp\n"),
			mendedEnv: map[string]string{"HADOOP_CLASSPATH": "/opt/hadoop/share/*"}},
		{name: "s3 is not Hadoop's unless allowed", rule: "fs-scheme-unserved", severity: "error",
			root: base("execution.checkpointing.dir: s3://b/cp\n"), env: map[string]string{"HADOOP_CLASSPATH": "/h/*"},
			mended: base("fs.allowed-fallback-filesystems: s3;gs\nexecution.checkpointing.dir: s3://b/cp\n"), mendedEnv: map[string]string{"HADOOP_CLASSPATH": "/h/*"}},
		{name: "the default scheme", rule: "fs-scheme-unserved", severity: "error",
			root: base("fs.default-scheme: s3://b/\nexecution.checkpointing.dir: /cp\n"), mended: base("execution.checkpointing.dir: /cp\n")},
		{name: "a JAR straight in plugins/", rule: "plugins-loose-jar", severity: "warning",
			root:   put(withConf("2.2.1", nil), plugins+"/reporter.jar", testkit.JAR("")),
			mended: put(withConf("2.2.1", nil), plugins+"/reporter/reporter.jar", testkit.JAR(""))},
		{name: "an empty plugin folder", rule: "plugins-empty-folder", severity: "error",
			root:   put(withConf("2.2.1", nil), plugins+"/s3/README", nil),
			mended: put(withConf("2.2.1", nil), plugins+"/s3/p.jar", s3Plugin())},
		{name: "a plugin folder whose JAR is in a subfolder", rule: "plugins-empty-folder", severity: "error",
			root:   put(withConf("2.2.1", nil), plugins+"/s3/lib/p.jar", s3Plugin()),
			mended: put(withConf("2.2.1", nil), plugins+"/s3/p.jar", s3Plugin())},
		{name: "a JAR in a plugin's subfolder beside its own", rule: "plugins-loose-jar", severity: "warning",
			root:   put(put(withConf("2.2.1", nil), plugins+"/s3/p.jar", s3Plugin()), plugins+"/s3/lib/extra.jar", testkit.JAR("")),
			mended: put(put(withConf("2.2.1", nil), plugins+"/s3/p.jar", s3Plugin()), plugins+"/s3/extra.jar", testkit.JAR(""))},
		{name: "ENABLE_BUILT_IN_PLUGINS naming what opt/ lacks", rule: "plugins-enable-missing", severity: "error",
			root: withConf("2.2.1", nil), env: map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-hadoop-2.2.1.jar"},
			mended: put(withConf("2.2.1", nil), testkit.FlinkHome+"/opt/flink-s3-fs-hadoop-2.2.1.jar", s3Plugin()), mendedEnv: map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-hadoop-2.2.1.jar"}},
		{name: "ENABLE_BUILT_IN_PLUGINS serves the scheme", rule: "fs-scheme-unserved", severity: "error",
			root:   put(base("execution.checkpointing.dir: s3://b/cp\n"), testkit.FlinkHome+"/opt/flink-s3-fs-hadoop-2.2.1.jar", s3Plugin()),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), testkit.FlinkHome+"/opt/flink-s3-fs-hadoop-2.2.1.jar", s3Plugin()), mendedEnv: map[string]string{"ENABLE_BUILT_IN_PLUGINS": "flink-s3-fs-hadoop-2.2.1.jar"}},
		{name: "a reporter factory no plugin provides", rule: "reporter-unavailable", severity: "warning",
			root:   base("metrics.reporter.prom.factory.class: r.PromFactory\n"),
			mended: put(base("metrics.reporter.prom.factory.class: r.PromFactory\n"), plugins+"/metrics-prom/p.jar", reporterPlugin())},
		{name: "a reporter factory whose class is not there", rule: "reporter-unavailable", severity: "warning",
			root:   put(base("metrics.reporter.prom.factory.class: r.Gone\n"), plugins+"/metrics-prom/p.jar", reporterPlugin()),
			mended: put(base("metrics.reporters: jmx\nmetrics.reporter.prom.factory.class: r.Gone\n"), plugins+"/metrics-prom/p.jar", reporterPlugin())},
		{name: "a reporter named by its class only", rule: "reporter-unavailable", severity: "warning",
			root:   put(base("metrics.reporter.prom.class: r.Prom\n"), plugins+"/metrics-prom/p.jar", reporterPlugin()),
			mended: put(base("metrics.reporter.prom.class: r.Prom\nmetrics.reporter.prom.factory.class: r.PromFactory\n"), plugins+"/metrics-prom/p.jar", reporterPlugin())},
		{name: "the s3 plugin of 1.18.1 serving the checkpoints", rule: "plugins-release", severity: "error",
			root:   put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-1.18.1.jar", s3PluginOf("1.18.1")),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.2.1.jar", s3PluginOf("2.2.1"))},
		{name: "the s3 plugin of 1.18.1 that no location uses", rule: "plugins-release", severity: "warning",
			root:   put(base("execution.checkpointing.dir: file:///cp\n"), plugins+"/s3/flink-s3-fs-hadoop-1.18.1.jar", s3PluginOf("1.18.1")),
			mended: put(base("execution.checkpointing.dir: file:///cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.2.1.jar", s3PluginOf("2.2.1"))},
		{name: "the s3 plugin of another minor", rule: "plugins-release", severity: "warning",
			root:   put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.1.1.jar", s3PluginOf("2.1.1")),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.2.1.jar", s3PluginOf("2.2.1"))},
		{name: "the s3 plugin of another patch", rule: "plugins-release", severity: "warning",
			root:   put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.2.0.jar", s3PluginOf("2.2.0")),
			mended: put(base("execution.checkpointing.dir: s3://b/cp\n"), plugins+"/s3/flink-s3-fs-hadoop-2.2.1.jar", s3PluginOf("2.2.1"))},
		{name: "a trace reporter on 2.x", rule: "reporter-unavailable", severity: "warning",
			root: base("traces.reporter.otel.factory.class: x.OtelFactory\n"), mended: base("traces.reporter.otel.other: 1\n")},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := confSettings("jobmanager", c.env, "")
			s.Launch = host.LaunchImage
			d := decide(t, c.root, s)
			var hit bool
			for _, f := range d.Findings {
				if f.Rule != c.rule {
					continue
				}
				hit = true
				assert.Equal(t, c.severity, string(f.Severity), f.Message)
				for _, part := range []string{f.Message, f.Found, f.Required, f.Fix} {
					assert.NotEmpty(t, part, "%+v", f)
				}
				if c.name == "s3 checkpoints without a plugin" {
					assert.Contains(t, f.Fix, "org.apache.flink:flink-s3-fs-hadoop:2.2.1", "the fix names the plugin by coordinates")
				}
				if c.name == "ENABLE_BUILT_IN_PLUGINS serves the scheme" {
					assert.Contains(t, f.Fix, "ENABLE_BUILT_IN_PLUGINS=flink-s3-fs-hadoop-2.2.1.jar", "the fix is the value to set")
				}
				if strings.Contains(c.name, "straight in") && c.rule == "fs-scheme-unserved" {
					assert.Contains(t, f.Fix, "move ")
				}
			}
			assert.True(t, hit, "%s did not fire: %v", c.rule, rules(d.Findings))
			s = confSettings("jobmanager", c.mendedEnv, "")
			s.Launch = host.LaunchImage
			assert.NotContains(t, rules(decide(t, c.mended, s).Findings), c.rule)
		})
	}
}

// acmePlugin is a file system plugin for the scheme acme whose factory
// calls a class of com.acme.util, which the plugin does not bundle;
// manifest is its JAR's manifest.
func acmePlugin(manifest string) []byte {
	return testkit.ClassJAR(manifest, []testkit.Class{{Name: "com/acme/fs/AcmeFactory", Returns: map[string]string{"getScheme": "acme"},
		Calls: []testkit.Call{{Owner: "com/acme/util/Helper", Name: "make", Descriptor: "()V"}}}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"com.acme.fs.AcmeFactory"}})
}

// acmeDeepPlugin is acmePlugin whose factory reaches the library only
// through another class of its own (a path of another scheme, as an s3
// plugin's hdfs code names Hadoop's HDFS classes).
func acmeDeepPlugin() []byte {
	return testkit.ClassJAR("", []testkit.Class{
		{Name: "com/acme/fs/AcmeFactory", Returns: map[string]string{"getScheme": "acme"},
			Calls: []testkit.Call{{Owner: "com/acme/fs/HdfsPath", Name: "run", Descriptor: "()V"}}},
		{Name: "com/acme/fs/HdfsPath", Methods: []testkit.Member{{Name: "run", Descriptor: "()V"}},
			Calls: []testkit.Call{{Owner: "com/acme/util/Helper", Name: "make", Descriptor: "()V"}}}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"com.acme.fs.AcmeFactory"}})
}

func acmeUtil() []byte {
	return testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/util/Helper", Methods: []testkit.Member{{Name: "make", Descriptor: "()V"}}}}, nil)
}

// TestPluginLinkageInItsOwnLoader: a plugin's code is resolved in the
// class loader Flink's PluginLoader gives it, its own JARs and lib only
// for the plugin parent-first patterns: a class lib has that no pattern
// covers does not load (an error when a configured location needs the
// plugin, a warning otherwise); the same class in the plugin's folder, or
// a pattern covering it, mends it; the host's own plugins are not judged.
// Real Flink's verdict on the same layout is internal/realflink's
// TestFileSystemsAsFlinkResolvesThem.
func TestPluginLinkageInItsOwnLoader(t *testing.T) {
	t.Parallel()
	const uses = "execution.checkpointing.dir: acme://b/cp\n"
	layout := func(conf string, files map[string][]byte) fstest.MapFS {
		m := put(withConf("2.2.1", nil), testkit.FlinkHome+"/conf/config.yaml", []byte(conf))
		put(m, testkit.LibDir+"/acme-util-1.0.jar", acmeUtil())
		for name, data := range files {
			put(m, plugins+"/"+name, data)
		}
		return m
	}
	own := testkit.Manifest("Implementation-Vendor-Id", "org.apache.flink", "Implementation-Title", "Flink : FileSystems : Acme", "Implementation-Version", "2.2.1")
	for _, c := range []struct {
		name     string
		root     fstest.MapFS
		severity string // of the linkage-class finding; "" none
	}{
		{"a class of lib the plugin needs", layout(uses, map[string][]byte{"acme/acme-fs-1.0.jar": acmePlugin("")}), "error"},
		{"the same, no location uses the plugin", layout("execution.checkpointing.dir: file:///cp\n", map[string][]byte{"acme/acme-fs-1.0.jar": acmePlugin("")}), "warning"},
		{"the library in the plugin's folder", layout(uses, map[string][]byte{"acme/acme-fs-1.0.jar": acmePlugin(""), "acme/acme-util-1.0.jar": acmeUtil()}), ""},
		{"a plugin parent-first pattern covering it", layout(uses+"plugin.classloader.parent-first-patterns.additional: com.acme.util\n", map[string][]byte{"acme/acme-fs-1.0.jar": acmePlugin("")}), ""},
		{"the host's own plugin", layout(uses, map[string][]byte{"acme/flink-acme-fs-2.2.1.jar": acmePlugin(own)}), ""},
		{"deeper code of the plugin naming it: another path, not judged", layout(uses, map[string][]byte{"acme/acme-fs-1.0.jar": acmeDeepPlugin()}), ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := confSettings("jobmanager", nil, "")
			s.Deep = true
			d := decide(t, c.root, s)
			var got []string
			for _, f := range d.Findings {
				if !strings.HasPrefix(f.Rule, "linkage-") {
					continue
				}
				got = append(got, string(f.Severity)+" "+f.Rule+" "+f.Path)
				assert.Contains(t, f.Message, "in its plugin's class loader")
				assert.Contains(t, f.Found, "lib has it (/"+testkit.LibDir+"/acme-util-1.0.jar)")
				assert.Contains(t, f.Fix, "/"+plugins+"/acme/ beside acme-fs-1.0.jar")
				assert.Contains(t, f.Fix, "plugin.classloader.parent-first-patterns.additional")
			}
			if c.severity == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, []string{c.severity + " linkage-class /" + plugins + "/acme/acme-fs-1.0.jar"}, got)
		})
	}
}

// A plugin whose factory calls a method the host's Flink API does not
// have: an error when a configured location needs the plugin (Flink fails
// when it opens it), a warning when nothing uses it (Flink loads the
// factory and fails only on use).
func TestPluginLinkageFlinkAPI(t *testing.T) {
	t.Parallel()
	dist := testkit.ClassJAR(testkit.Manifest("Implementation-Title", "flink-dist", "Implementation-Version", "2.2.1"),
		[]testkit.Class{{Name: "org/apache/flink/core/fs/Api", Methods: []testkit.Member{{Name: "present", Descriptor: "()V"}}}}, nil,
		testkit.Entry{Name: ".flink-runtime.version.properties", Data: []byte("project.version=2.2.1\nscala.binary.version=2.12\n")})
	plugin := testkit.ClassJAR("", []testkit.Class{{Name: "com/acme/fs/AcmeFactory", Returns: map[string]string{"getScheme": "acme"},
		Calls: []testkit.Call{{Owner: "org/apache/flink/core/fs/Api", Name: "gone", Descriptor: "()V"}}}},
		map[string][]string{"org.apache.flink.core.fs.FileSystemFactory": {"com.acme.fs.AcmeFactory"}})
	for conf, want := range map[string]string{
		"execution.checkpointing.dir: acme://b/cp\n": "error",
		"execution.checkpointing.dir: file:///cp\n":  "warning",
	} {
		m := put(withConf("2.2.1", nil), testkit.FlinkHome+"/conf/config.yaml", []byte(conf))
		put(m, testkit.LibDir+"/flink-dist-2.2.1.jar", dist)
		put(m, plugins+"/acme/acme-fs-1.0.jar", plugin)
		s := confSettings("jobmanager", nil, "")
		s.Deep = true
		var got []string
		for _, f := range decide(t, m, s).Findings {
			if strings.HasPrefix(f.Rule, "linkage-") {
				got = append(got, string(f.Severity)+" "+f.Rule+" "+f.Symbol.Owner+"."+f.Symbol.Name)
			}
		}
		assert.Equal(t, []string{want + " linkage-method org/apache/flink/core/fs/Api.gone"}, got, conf)
	}
}
