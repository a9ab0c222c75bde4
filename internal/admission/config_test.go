package admission_test

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

const confDir = "/" + testkit.FlinkHome + "/conf"

// withConf is a good host of a release with the case's config files, and
// only those, in conf/.
func withConf(release string, files map[string]string) fstest.MapFS {
	m := testkit.Good(release).MapFS()
	for name := range m {
		if strings.HasPrefix(name, testkit.FlinkHome+"/conf/") {
			delete(m, name) // the case's files only
		}
	}
	for name, data := range files {
		put(m, testkit.FlinkHome+"/conf/"+name, []byte(data))
	}
	return m
}

// imageEnv is a baked image's environment: no GLIBC_TUNABLES
// (docs/glibc-tunables.md).
var imageEnv = map[string]string{}

// oldEnv is the environment images carried up to issue 29; the JVM dies of
// SIGSEGV at its first subprocess with it.
var oldEnv = map[string]string{"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=131072", "ROCKSDB_MUSL_LIBC": "false"}

func confSettings(role string, env map[string]string, props string, args ...string) host.Settings {
	s := defaults
	s.ConfDir, s.Role, s.Args, s.FlinkProperties = confDir, role, args, props
	s.Launch = host.LaunchBare
	if props != "" {
		s.Launch = host.LaunchImage
	}
	s.Getenv = func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	return s
}

const arrow = "env.java.opts.taskmanager: -Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false\n"

// TestConfigRules fires each config rule on a setting and not on the same
// setting mended; every finding names both sides and the fix.
func TestConfigRules(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name       string
		rule       string
		release    string
		files      map[string]string
		s          host.Settings
		mended     map[string]string // the files mended; nil: the same files
		mendedS    *host.Settings
		want       []string // in the finding's text
		notWanted  []string
		noFindings bool // the mended setting has no config finding at all
	}{
		{name: "2.x with only flink-conf.yaml", rule: "config-file-line", release: "2.2.1",
			files: map[string]string{"flink-conf.yaml": "parallelism.default: 1\n"}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "parallelism.default: 1\n", "flink-conf.yaml": "parallelism.default: 1\n"},
			want:   []string{"Flink 2.2.1 reads only config.yaml", "found flink-conf.yaml without config.yaml"}},
		{name: "1.18 with only config.yaml", rule: "config-file-line", release: "1.18.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"flink-conf.yaml": "parallelism.default: 1\n"},
			want:   []string{"Flink 1.18.1 reads only flink-conf.yaml", "write the configuration as flink-conf.yaml"}},
		{name: "a duplicate key in config.yaml", rule: "config-file-line", release: "2.2.0",
			files: map[string]string{"config.yaml": "parallelism.default: 1\nparallelism.default: 2\n"}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "parallelism.default: 2\n"},
			want:   []string{"Flink cannot load its config file", "duplicate key parallelism.default"}},
		{name: "more than 50 aliases to collections in config.yaml", rule: "config-file-line", release: "2.2.1",
			files: map[string]string{"config.yaml": "l: &l [1]\n" + aliasLines(51)}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "l: &l [1]\n" + aliasLines(50)},
			want:   []string{"Flink cannot load its config file", "51 aliases to collections, where Flink's YAML loader allows 50"}},
		{name: "aliases in config.yaml that expand beyond the reader's budget", rule: "config-file-line", release: "2.2.1",
			files: map[string]string{"config.yaml": "m0: &m0 {}\n" + doublingLines(25)}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "m0: &m0 {}\n" + doublingLines(5)},
			want:   []string{"beyond what the entrypoint reads", "expand to more than 100000 values", "without aliases that repeat whole mappings or lists"}},
		{name: "a config.yaml larger than the reader reads is a warning, not judged", rule: "config-file-line", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: " + strings.Repeat("1", 1<<20) + "\n"}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			want:   []string{"larger than the entrypoint reads, so its settings are not judged"}},
		{name: "state.backend.type and state.backend differ", rule: "config-key-conflict", release: "2.2.0",
			files:  map[string]string{"config.yaml": "state.backend.type: rocksdb\nstate:\n  backend: hashmap\n"},
			s:      confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "state.backend.type: rocksdb\n"},
			want: []string{"state.backend.type and its deprecated key state.backend are both set", "Flink uses state.backend.type",
				"state.backend.type: rocksdb (/opt/flink/conf/config.yaml, line 1)", "state.backend: hashmap (/opt/flink/conf/config.yaml, line 3)"}},
		{name: "argv against the file", rule: "config-key-conflict", release: "2.2.0",
			files: map[string]string{"config.yaml": "state.checkpoints.dir: s3://a\n"},
			s:     confSettings("taskmanager", imageEnv, "", "-Dexecution.checkpointing.dir=s3://b"),
			want:  []string{"execution.checkpointing.dir: s3://b (argv (-D))", "state.checkpoints.dir: s3://a (/opt/flink/conf/config.yaml, line 1)"}},
		{name: "the same value twice is no conflict", rule: "", release: "2.2.0",
			files: map[string]string{"config.yaml": "state.backend.type: rocksdb\nstate.backend: rocksdb\n" + arrow},
			s:     confSettings("taskmanager", imageEnv, ""), noFindings: true},
		{name: "a typo", rule: "config-unknown-key", release: "2.2.1",
			files: map[string]string{"config.yaml": "taskmanager:\n  numberOfTaskSlot: 2\n"}, s: confSettings("jobmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "taskmanager:\n  numberOfTaskSlots: 2\n"},
			want:   []string{"Flink 2.2.1 does not know taskmanager.numberOfTaskSlot", "rename taskmanager.numberOfTaskSlot to taskmanager.numberOfTaskSlots"}},
		{name: "a typo in FLINK_PROPERTIES", rule: "config-unknown-key", release: "1.18.1",
			files: map[string]string{"flink-conf.yaml": "parallelism.default: 1\n"}, s: confSettings("jobmanager", imageEnv, "paralelism.default: 2"),
			want: []string{"paralelism.default: 2 (FLINK_PROPERTIES)", "parallelism.default"}},
		{name: "a key 2.2 removed", rule: "config-unknown-key", release: "2.2.0",
			files: map[string]string{"config.yaml": "table.exec.topn-cache-size: 100\njobmanager.heap.size: 1g\n"}, s: confSettings("jobmanager", imageEnv, ""),
			want: []string{"table.exec.topn-cache-size is a key of Flink 1.18.1 that Flink 2.2.0 no longer reads", "fix: set table.exec.rank.topn-cache-size instead of table.exec.topn-cache-size",
				"jobmanager.heap.size is a key of Flink 1.18.1", "Flink 2.2.0 has no replacement for it; fix: remove jobmanager.heap.size"}},
		{name: "open prefixes and user keys are quiet", rule: "", release: "2.2.0",
			files: map[string]string{"config.yaml": "metrics.reporter.prom.factory.class: org.example.Factory\nmetrics.reporter.prom.port: 9249\n" +
				"s3.access-key: x\nfs.s3a.endpoint: y\nkubernetes.operator.reconcile.interval: 1 min\nmy.company.setting: z\n" +
				"kubernetes.jobmanager.annotations.team: a\nquery.server.port: 6125\n" + arrow},
			s: confSettings("taskmanager", imageEnv, ""), noFindings: true},
		{name: "a TaskManager without the Arrow options", rule: "config-taskmanager-flags", release: "2.2.1",
			files:  map[string]string{"config.yaml": "env.java.opts.all: -Dx=y\nenv.java.opts.taskmanager: -Darrow.enable_unsafe_memory_access=true\n"},
			s:      confSettings("kubernetes-taskmanager", imageEnv, ""),
			mended: map[string]string{"config.yaml": "env.java.opts.all: -Dx=y\n" + arrow},
			want: []string{"found JVM options without -Darrow.enable_null_check_for_get=false: -Dx=y (env.java.opts.all in /opt/flink/conf/config.yaml, line 1)",
				"env.java.opts.taskmanager: -Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"},
			notWanted: []string{"without -Darrow.enable_unsafe_memory_access"}},
		{name: "a later option turns a flag off", rule: "config-taskmanager-flags", release: "2.2.1",
			files: map[string]string{"config.yaml": "env.java.default-opts.taskmanager: -Darrow.enable_null_check_for_get=false\n" +
				"env.java.opts.taskmanager: -Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=true\n"},
			s:    confSettings("taskmanager", imageEnv, ""),
			want: []string{"without -Darrow.enable_null_check_for_get=false"}},
		{name: "FLINK_ENV_JAVA_OPTS replaces env.java.opts.all", rule: "", release: "2.2.1",
			files: map[string]string{"config.yaml": "env.java.opts.all: -Dx=y\n"},
			s: confSettings("taskmanager", map[string]string{
				"FLINK_ENV_JAVA_OPTS": "-Darrow.enable_unsafe_memory_access=true -Darrow.enable_null_check_for_get=false"}, ""),
			noFindings: true},
		{name: "a JobManager needs no Arrow options", rule: "", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"}, s: confSettings("jobmanager", imageEnv, ""), noFindings: true},
		{name: "the old GLIBC_TUNABLES", rule: "config-env", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			s:     confSettings("jobmanager", oldEnv, ""),
			want: []string{"GLIBC_TUNABLES: the environment reserves 131072 bytes of optional static TLS", "SIGSEGV, without an hs_err file",
				"found GLIBC_TUNABLES=glibc.rtld.optional_static_tls=131072, required no glibc.rtld.optional_static_tls, or at most 24576",
				"fix: remove glibc.rtld.optional_static_tls from GLIBC_TUNABLES"}},
		{name: "the first value measured to hang", rule: "config-env", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			s:     confSettings("jobmanager", map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.rtld.optional_static_tls=0x8000"}, ""),
			want:  []string{"reserves 32768 bytes", "found GLIBC_TUNABLES=glibc.malloc.arena_max=2:glibc.rtld.optional_static_tls=0x8000"}},
		{name: "the last setting wins", rule: "config-env", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			s:     confSettings("jobmanager", map[string]string{"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=512:glibc.rtld.optional_static_tls=65536"}, ""),
			want:  []string{"reserves 65536 bytes"}},
		{name: "the largest value measured to run is quiet", rule: "", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			s:     confSettings("jobmanager", map[string]string{"GLIBC_TUNABLES": "glibc.rtld.optional_static_tls=131072:glibc.rtld.optional_static_tls=24576"}, ""), noFindings: true},
		{name: "other tunables are quiet", rule: "", release: "2.2.1",
			files: map[string]string{"config.yaml": "parallelism.default: 1\n"},
			s:     confSettings("jobmanager", map[string]string{"GLIBC_TUNABLES": "glibc.malloc.arena_max=2:glibc.rtld.optional_static_tls=lots", "ROCKSDB_MUSL_LIBC": "true"}, ""), noFindings: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			d := decide(t, withConf(c.release, c.files), c.s)
			var texts []string
			for _, f := range d.Findings {
				if strings.HasPrefix(f.Rule, "config-") {
					texts = append(texts, f.Rule+": "+f.Text())
				}
			}
			all := strings.Join(texts, "\n")
			if c.rule == "" {
				assert.Empty(t, texts, "no config finding")
				return
			}
			require.Contains(t, rules(d.Findings), c.rule, all)
			for _, w := range c.want {
				assert.Contains(t, all, w)
			}
			for _, w := range c.notWanted {
				assert.NotContains(t, all, w)
			}
			if c.mended != nil {
				d := decide(t, withConf(c.release, c.mended), c.s)
				assert.NotContains(t, rules(d.Findings), c.rule, "mended: %v", d.Findings)
			}
		})
	}
}

// A config.yaml Flink loads but the reader does not read is said, and the
// start admitted: a refusal of it would be an outage.
func TestConfigTooLargeIsAWarning(t *testing.T) {
	t.Parallel()
	d := decide(t, withConf("2.2.1", map[string]string{"config.yaml": "parallelism.default: " + strings.Repeat("1", 1<<20) + "\n"}), confSettings("jobmanager", imageEnv, ""))
	var found bool
	for _, f := range d.Findings {
		if f.Rule == "config-file-line" {
			found = true
			assert.Equal(t, admission.Warning, f.Severity)
		}
	}
	assert.True(t, found, "%v", d.Findings)
	assert.True(t, d.Admitted(), "%v", d.Findings)
}

// TestConfigRulesOffWithoutConfDir: the host CLI's checks without a conf
// directory, and the tests of other rules, see no config rule.
func TestConfigRulesOffWithoutConfDir(t *testing.T) {
	t.Parallel()
	s := defaults
	s.Role = "taskmanager"
	d := decide(t, withConf("2.2.1", map[string]string{"flink-conf.yaml": "taskmanager.numberOfTaskSlot: 1\n"}), s)
	for _, f := range d.Findings {
		assert.False(t, strings.HasPrefix(f.Rule, "config-"), f.Text())
	}
}

func TestKeyTables(t *testing.T) {
	t.Parallel()
	for _, rel := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		k := admission.TableFor(rel)
		require.NotNil(t, k, rel)
		assert.True(t, k.Known("state.backend.type"), rel)
		assert.True(t, k.Known("state.backend"), "a deprecated key is read: %s", rel)
		assert.True(t, k.Known("kubernetes.jobmanager.annotations.team"), "an entry of a Map option: %s", rel)
		assert.False(t, k.Known("taskmanager.numberOfTaskSlot"), rel)
		prev, n := "", 0
		k.Each(func(o *flinkconf.Option) {
			assert.Less(t, prev, o.Key, "the table is sorted, keys once: lookups search it")
			prev, n = o.Key, n+1
		})
		assert.Greater(t, n, 500, rel)
	}
	assert.Equal(t, "2.2.1", admission.TableFor("2.2.7").Release, "an unknown patch release takes its line's newest table")
	assert.Nil(t, admission.TableFor("1.20.3"))
}

// aliasLines are n keys, each an alias to the list l.
func aliasLines(n int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, "r%d: *l\n", i)
	}
	return b.String()
}

// doublingLines are levels 1..n of a mapping of two aliases to the level
// below, m0 at the bottom.
func doublingLines(n int) string {
	var b strings.Builder
	for i := 1; i <= n; i++ {
		fmt.Fprintf(&b, "m%d: &m%d {a: *m%d, b: *m%d}\n", i, i, i-1, i-1)
	}
	return b.String()
}
