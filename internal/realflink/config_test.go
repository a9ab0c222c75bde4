//go:build realjars

package realflink

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// configCase is a conf directory and how the process starts. The same case
// runs on every release of its kind: File is written as config.yaml for
// 2.x and flink-conf.yaml for 1.18.
type configCase struct {
	name   string
	file   string
	launch host.Launch
	props  string   // FLINK_PROPERTIES
	args   []string // the process's arguments (dynamic properties)
	only   string   // "2" or "1": the line it is for; "" both
}

var configEnv = map[string]string{"SLOTS": "4", "CKPT_DIR": "s3://bucket/ckpt", "EMPTY": ""}

var configCorpus = []configCase{
	{name: "flat keys and comments", file: "# a comment\ntaskmanager.numberOfTaskSlots: 2 # trailing\nstate.backend.type: rocksdb\n  parallelism.default:   3  \nrest.port: 8081\n"},
	{name: "nested keys", only: "2", file: "taskmanager:\n  numberOfTaskSlots: 2\n  memory:\n    process.size: 2g\nstate:\n  backend:\n    type: hashmap\n"},
	{name: "nested then flat: the later wins", only: "2", file: "state:\n  backend:\n    type: hashmap\nstate.backend.type: rocksdb\n"},
	{name: "flat then nested: the later wins", only: "2", file: "state.backend.type: rocksdb\nstate:\n  backend:\n    type: hashmap\n"},
	{name: "scalars of the core schema", only: "2", file: "a:\n  int: 007\n  hex: 0x1F\n  oct: 0o17\n  plus: +5\n  exp: 1e3\n  big: 1e7\n  small: 0.0001\n  neg: -0.5\n  inf: .inf\n  t: True\n  s: 'quoted'\n  d: \"2020\"\n  yes: yes\n  huge: 12345678901234567890\n  date: 2001-12-14\n  colon: \"a: b # c\"\n  empty: \"\"\n"},
	{name: "lists and maps", only: "2", file: "l1: [x, y]\nl2:\n  - u\n  - v: w\nl3: [1, 2.5, true]\nm: {p: q, r: 2}\nflowmap: [a: b, c]\nquoted: ['a: b', 'x,y', '']\n"},
	{name: "multi-line values", only: "2", file: "lit: |\n  line1\n  line2\nfold: >\n  one\n  two\n"},
	{name: "anchors and aliases", only: "2", file: "base: &B {k: v}\nref: *B\nl: &L [1, 2]\nlr: *L\ns: &S text\nsr: *S\n"},
	{name: "duplicate keys", file: "parallelism.default: 1\nparallelism.default: 2\n"},
	{name: "a key without a value", file: "parallelism.default: 1\nrest.port:\n"},
	{name: "deprecated and new key", file: "state.backend: hashmap\nstate.backend.type: rocksdb\nstate.checkpoints.dir: file:///a\nexecution.checkpointing.dir: file:///b\n"},
	{name: "legacy lines that are not YAML", only: "1", file: "a:b\nc :  d\n: e\nf: \ng: h: i\nj: k # l\n  m: n  \n- o: p\n"},
	{name: "java options", file: "env.java.opts.all: -Dx=y -Dz=\"w\"\nenv.java.opts.taskmanager: -Darrow.enable_unsafe_memory_access=true\n"},
	{name: "FLINK_PROPERTIES merged", launch: host.LaunchImage, file: "taskmanager.numberOfTaskSlots: 1\nparallelism.default: 1\n",
		props: "taskmanager.numberOfTaskSlots: 2\nstate.checkpoints.dir: s3://bucket/path\n  rest.port:  9091  \n\nexecution.checkpointing.interval: 10 s"},
	{name: "FLINK_PROPERTIES with envsubst", launch: host.LaunchImage, file: "parallelism.default: ${SLOTS}\n",
		props: "taskmanager.numberOfTaskSlots: ${SLOTS}\nexecution.checkpointing.dir: $CKPT_DIR\nrest.address: x${EMPTY}y${UNSET}z"},
	{name: "FLINK_PROPERTIES with a multi-line value", launch: host.LaunchImage, file: "parallelism.default: 1\n",
		props: "env.java.opts.taskmanager: -Da=1\n  -Db=2\nrest.port: 9000"},
	{name: "bare: no envsubst, no FLINK_PROPERTIES", file: "parallelism.default: ${SLOTS}\n", props: "rest.port: 9000"},
	{name: "argv dynamic properties win", file: "parallelism.default: 1\nrest.port: 8081\n",
		args: []string{"-Dparallelism.default=5", "-D", "rest.port=9999", "-Dkey=a=b", "-Dflag"}},
	{name: "argv over FLINK_PROPERTIES", launch: host.LaunchImage, file: "parallelism.default: 1\n",
		props: "parallelism.default: 2", args: []string{"-Dparallelism.default=3"}},
	{name: "empty file", file: ""},
	{name: "50 aliases to collections", only: "2", file: aliasesTo(50)},
	{name: "51 aliases to collections", only: "2", file: aliasesTo(51)},
	{name: "aliases inside aliased collections, counted where written", only: "2",
		file: "a: &a {x: [1]}\nb: &b {y: *a}\nc: &c {z: *b}\nd: [*c, *c, *c]\ne: &e [*d, *d]\nf: [*e, *e, *e]\n"},
	{name: "scalar aliases, any number", only: "2", file: "s: &s v\nrest.address: *s\nl: [" + strings.Repeat("*s, ", 99) + "*s]\n"},
	{name: "a comment at column 0 ends a plain value", only: "2", file: "rest.address: abc\n# c\n  def\nrest.port: 8081\n"},
	{name: "a comment at column 0 between keys", file: "rest.address: abc\n# c\nrest.port: 8081\n"},
}

// aliasesTo is a config.yaml with n aliases to one list (snakeyaml-engine,
// which Flink keeps at its defaults, allows 50).
func aliasesTo(n int) string {
	var b strings.Builder
	b.WriteString("l: &l [1, 2]\n")
	for i := range n {
		fmt.Fprintf(&b, "r%d: *l\n", i)
	}
	return b.String()
}

// TestConfigAsFlinkLoadsIt loads each case of the corpus with real Flink
// (GlobalConfiguration.loadConfiguration with the dynamic properties
// Flink's own parser takes from the arguments; testdata/ConfigOracle.java)
// on every supported release, and checks that host.ReadConfig sees the same
// effective configuration, key by key, and refuses what Flink refuses.
// The image entrypoints are our stand-ins, as in the JDK test: 1.18 appends
// FLINK_PROPERTIES to flink-conf.yaml and runs envsubst over it; 2.x passes
// each line as a dynamic property to Flink's own bin/config-parser-utils.sh,
// which rewrites config.yaml.
func TestConfigAsFlinkLoadsIt(t *testing.T) {
	realJava(t)
	if _, err := exec.LookPath("envsubst"); err != nil {
		require.Empty(t, os.Getenv("CI"), "envsubst (gettext-base) is missing")
		t.Skip("no envsubst")
	}
	for _, version := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			line := version[:1]
			dir := t.TempDir()
			home := flinkCopy(t, version, dir)
			name := "config.yaml"
			if line == "1" {
				name = "flink-conf.yaml"
			}
			env := []string{"PATH=/usr/bin:/bin"}
			for k, v := range configEnv {
				env = append(env, k+"="+v)
			}
			getenv := func(k string) (string, bool) { v, ok := configEnv[k]; return v, ok }
			type prepared struct {
				c    configCase
				conf string
				ours admission.Config
			}
			var cases []prepared
			for i, c := range configCorpus {
				if c.only != "" && c.only != line {
					continue
				}
				conf := filepath.Join(dir, fmt.Sprintf("case%02d", i))
				require.NoError(t, os.MkdirAll(conf, 0o755))
				confFile := filepath.Join(conf, name)
				require.NoError(t, os.WriteFile(confFile, []byte(c.file), 0o644))
				// Ours first: the config as the image holds it, before its entrypoint runs.
				s := host.Settings{ConfDir: conf, Launch: c.launch, FlinkProperties: c.props, Getenv: getenv, Args: c.args, Role: "taskmanager"}
				if s.Launch == "" {
					s.Launch = host.LaunchBare
				}
				ours := host.ReadConfig(os.DirFS("/"), s, version)
				if c.launch == host.LaunchImage {
					imageStandIn(t, home, conf, confFile, line, c.props, env)
				}
				cases = append(cases, prepared{c, conf, ours})
			}
			var input strings.Builder
			for _, p := range cases {
				input.WriteString(strings.Join(append([]string{p.conf}, p.c.args...), "\t") + "\n")
			}
			results := flinkLoads(t, version, input.String())
			require.Len(t, results, len(cases))
			for i, p := range cases {
				t.Run(p.c.name, func(t *testing.T) {
					flink := results[i]
					if flink.err != "" {
						require.ErrorIs(t, p.ours.Err, admission.ErrConfigFlink, "Flink refuses it: %s", flink.err)
						return
					}
					require.NoError(t, p.ours.Err)
					if p.c.file != "" {
						require.NotEmpty(t, flink.values, "Flink loaded nothing: the case proves nothing")
					}
					got := map[string]string{}
					for _, e := range p.ours.Entries {
						got[e.Key] = e.Value
					}
					assert.Equal(t, flink.values, got, "effective configuration, key by key")
				})
			}
		})
	}
}

// imageStandIn does to the conf directory what the release's image
// entrypoint does with FLINK_PROPERTIES.
func imageStandIn(t *testing.T, home, conf, confFile, line, props string, env []string) {
	t.Helper()
	run := func(name string, args ...string) {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, name, args...)
		cmd.Env = append(env, "FLINK_HOME="+home, "FLINK_CONF_DIR="+conf)
		out, err := cmd.CombinedOutput()
		require.NoError(t, err, "%s %v:\n%s", name, args, out)
	}
	if line == "1" {
		f, err := os.OpenFile(confFile, os.O_APPEND|os.O_WRONLY, 0)
		require.NoError(t, err)
		_, err = f.WriteString(props + "\n")
		require.NoError(t, err)
		require.NoError(t, f.Close())
		run("bash", "-c", `envsubst < "$1" > "$1.tmp" && mv "$1.tmp" "$1"`, "bash", confFile)
		return
	}
	// Each line trimmed, split at the first ':', the value through envsubst
	// with its spaces: what the 2.x entrypoint hands to config-parser-utils.sh.
	var d []string
	for _, l := range strings.Split(props, "\n") {
		l = strings.TrimSpace(l)
		if l == "" {
			continue
		}
		k, v, _ := strings.Cut(l, ":")
		cmd := exec.Command("envsubst")
		cmd.Env, cmd.Stdin = env, strings.NewReader(v)
		out, err := cmd.Output()
		require.NoError(t, err)
		d = append(d, "-D"+k+"="+strings.TrimRight(string(out), "\n")) // $(...) drops trailing newlines
	}
	if len(d) > 0 {
		bin := filepath.Join(home, "bin")
		run(filepath.Join(bin, "config-parser-utils.sh"), append([]string{conf, bin, filepath.Join(home, "lib")}, d...)...)
	}
}

type flinkResult struct {
	values map[string]string
	err    string
}

// flinkLoads runs testdata/ConfigOracle.java on the release's lib, one
// case a line of input.
func flinkLoads(t *testing.T, version, input string) []flinkResult {
	t.Helper()
	var cp []string
	for _, p := range realLib(t, version) {
		cp = append(cp, p)
	}
	slices.Sort(cp)
	oracle, err := filepath.Abs("testdata/ConfigOracle.java")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", "-cp", strings.Join(cp, ":"), oracle)
	cmd.Stdin = strings.NewReader(input)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "ConfigOracle: %s", stderr.String())
	var results []flinkResult
	var cur *flinkResult
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		l := sc.Text()
		switch {
		case strings.HasPrefix(l, "== BEGIN "):
			cur = &flinkResult{values: map[string]string{}}
		case l == "== END":
			require.NotNil(t, cur)
			results = append(results, *cur)
			cur = nil
		case strings.HasPrefix(l, "== ERROR "):
			cur.err = strings.TrimPrefix(l, "== ERROR ")
		case cur != nil:
			k, v, ok := cutUnescaped(l)
			if ok {
				cur.values[k] = v
			}
		}
	}
	require.NoError(t, sc.Err())
	return results
}

// cutUnescaped splits an escaped "key=value" line at the first '=' of the
// key and undoes ConfigOracle's escapes.
func cutUnescaped(l string) (string, string, bool) {
	unesc := func(s string) string {
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				switch s[i] {
				case 'n':
					b.WriteByte('\n')
				case 'r':
					b.WriteByte('\r')
				default:
					b.WriteByte(s[i])
				}
				continue
			}
			b.WriteByte(s[i])
		}
		return b.String()
	}
	for i := 0; i < len(l); i++ {
		if l[i] == '\\' {
			i++
			continue
		}
		if l[i] == '=' {
			return unesc(l[:i]), unesc(l[i+1:]), true
		}
	}
	return "", "", false
}

// TestConfigTablesMatchTheDistributions regenerates each release's table of
// options from its real lib (scripts/config-tables, as `make config-tables`
// runs it) and fails on any difference from the table checked in.
func TestConfigTablesMatchTheDistributions(t *testing.T) {
	realJava(t)
	prog, err := filepath.Abs("../../scripts/config-tables/ConfigTables.java")
	require.NoError(t, err)
	for _, version := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		t.Run(version, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", prog, flinkHome(t, version))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			checked, err := os.ReadFile(filepath.Join("..", "flinkconf", "flinkkeys", version+".txt"))
			require.NoError(t, err)
			require.Greater(t, strings.Count(string(out), "\n"), 500, "a real flink-dist has hundreds of options")
			assert.Equal(t, string(checked), string(out), "internal/flinkconf/flinkkeys/%s.txt is stale: run `make config-tables`", version)
		})
	}
}

// operatorArgs are the dynamic properties native Kubernetes (and so the
// Flink Kubernetes Operator) passes kubernetes-taskmanager.sh.
var operatorArgs = strings.Fields("-D taskmanager.memory.network.min=134217730b -D taskmanager.cpu.cores=1.0 " +
	"-D taskmanager.memory.task.off-heap.size=0b -D taskmanager.memory.jvm-metaspace.size=268435456b -D external-resources=none " +
	"-D taskmanager.memory.jvm-overhead.min=201326592b -D taskmanager.memory.framework.off-heap.size=134217728b " +
	"-D taskmanager.memory.network.max=134217730b -D taskmanager.memory.framework.heap.size=134217728b " +
	"-D taskmanager.memory.managed.size=536870920b -D taskmanager.memory.task.heap.size=402653174b " +
	"-D taskmanager.numberOfTaskSlots=2 -D taskmanager.memory.jvm-overhead.max=201326592b")

// imageKeys are what the official images write into the config; operatorKeys
// what the Flink Kubernetes Operator adds to a FlinkDeployment's
// (its own kubernetes.operator.* settings included).
const (
	imageKeys    = "jobmanager.rpc.address: flink-jobmanager\nblob.server.port: 6124\nquery.server.port: 6125\ntaskmanager.numberOfTaskSlots: 2\n"
	operatorKeys = "kubernetes.cluster-id: basic\nkubernetes.namespace: flink\nexecution.target: kubernetes-application\n" +
		"kubernetes.container.image.ref: flink:2.2\nkubernetes.jobmanager.replicas: 1\nkubernetes.jobmanager.cpu.amount: 1.0\n" +
		"kubernetes.taskmanager.cpu.amount: 1.0\nkubernetes.service-account: flink\nkubernetes.rest-service.exposed.type: ClusterIP\n" +
		"kubernetes.pod-template-file.jobmanager: /opt/flink/pod-template/jobmanager-pod-template.yaml\n" +
		"kubernetes.pod-template-file.taskmanager: /opt/flink/pod-template/taskmanager-pod-template.yaml\n" +
		"kubernetes.internal.jobmanager.entrypoint.class: org.apache.flink.kubernetes.entrypoint.KubernetesApplicationClusterEntrypoint\n" +
		"high-availability.type: kubernetes\nhigh-availability.storageDir: s3://bucket/ha\nstate.savepoints.dir: s3://bucket/savepoints\n" +
		"kubernetes.operator.periodic.savepoint.interval: 6h\nkubernetes.operator.job.upgrade.last-state-fallback.enabled: true\n" +
		"job.autoscaler.enabled: true\nmetrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n" +
		"metrics.reporter.prom.port: 9249\n$internal.application.program-args: --input;s3://in\npipeline.name: wordcount\n"
)

// TestRealConfigsGiveNoConfigFindings: each supported distribution's own
// conf/, as it ships, as the official image fills it, and with what the
// operator and native Kubernetes add, draws no config finding on a
// StreamFusion host (a TaskManager with the Arrow options and the
// environment StreamFusion images set).
func TestRealConfigsGiveNoConfigFindings(t *testing.T) {
	env := map[string]string{"FLINK_ENV_JAVA_OPTS_TM": admission.ArrowOptions()}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, v := range []string{"2.2.0", "2.2.1", "1.18.1"} {
		for _, c := range []struct {
			name   string
			extra  string
			role   string
			args   []string
			launch host.Launch
		}{
			{"as shipped", "", "jobmanager", nil, host.LaunchBare},
			{"as the image fills it", imageKeys, "taskmanager", nil, host.LaunchImage},
			{"with the operator's keys", imageKeys + operatorKeys, "kubernetes-taskmanager", operatorArgs, host.LaunchImage},
		} {
			t.Run(v+"/"+c.name, func(t *testing.T) {
				root := layout{flink: v, planner: []string{"loader"}, sf: testkit.StreamFusion(sfLine(v), "0.1.0")}.build(t)
				conf := filepath.Join(root, "opt/flink/conf")
				require.NoError(t, os.MkdirAll(conf, 0o755))
				shipped := filepath.Join(flinkHome(t, v), "conf")
				entries, err := os.ReadDir(shipped)
				require.NoError(t, err)
				for _, e := range entries {
					data, err := os.ReadFile(filepath.Join(shipped, e.Name()))
					require.NoError(t, err)
					if e.Name() == "config.yaml" || e.Name() == "flink-conf.yaml" {
						data = append(data, c.extra...)
					}
					require.NoError(t, os.WriteFile(filepath.Join(conf, e.Name()), data, 0o644))
				}
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
					LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64",
					ConfDir: conf, Role: c.role, Args: c.args, Launch: c.launch, Getenv: getenv,
				}, nil)
				require.NoError(t, err)
				require.NoError(t, facts.Config.Err)
				require.NotEmpty(t, facts.Config.Entries, "the shipped config was read")
				d := admission.Decide(facts)
				for _, f := range d.Findings {
					assert.False(t, strings.HasPrefix(f.Rule, "config-"), "%s", f.Text())
				}
				// The same host without the Arrow options: the TaskManager is warned, only it.
				delete(env, "FLINK_ENV_JAVA_OPTS_TM")
				defer func() { env["FLINK_ENV_JAVA_OPTS_TM"] = admission.ArrowOptions() }()
				d = admission.Decide(mustGather(t, root, conf, c.role, c.args, c.launch, getenv))
				want := []string(nil)
				if strings.HasSuffix(c.role, "taskmanager") {
					want = []string{"config-taskmanager-flags"}
				}
				var got []string
				for _, f := range d.Findings {
					if strings.HasPrefix(f.Rule, "config-") {
						got = append(got, f.Rule)
					}
				}
				assert.Equal(t, want, got)
			})
		}
	}
}

func mustGather(t *testing.T, root, conf, role string, args []string, launch host.Launch, getenv func(string) (string, bool)) *admission.Facts {
	t.Helper()
	facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
		LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64",
		ConfDir: conf, Role: role, Args: args, Launch: launch, Getenv: getenv,
	}, nil)
	require.NoError(t, err)
	return facts
}
