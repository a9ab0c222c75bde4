package admission

import (
	"cmp"
	"errors"
	"fmt"
	"path"
	"slices"
	"strconv"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

// Config is the configuration the process about to start runs with, as
// Flink builds it on the launch path (internal/host reads it): the config
// file of the host's release, FLINK_PROPERTIES as the image entrypoint
// merges it, and the dynamic properties of argv, which win.
type Config struct {
	// Role is the process about to start (internal/roles' names:
	// taskmanager, kubernetes-taskmanager, jobmanager, client...); "" when
	// not known (host CLI checks of a whole image).
	Role string
	// Dir is the conf directory (FLINK_CONF_DIR); "" when the config was
	// not consulted, and then no config rule runs.
	Dir string
	// File is the config file the host's release reads (absolute); Present
	// says whether it exists. Other is the other line's file when it exists
	// (flink-conf.yaml beside a 2.x release, config.yaml beside 1.18).
	File    string
	Present bool
	Other   string
	// Err is a config file Flink would refuse or that cannot be read
	// (too large, a YAML bomb, too deep); Entries is then what came from
	// elsewhere.
	Err error
	// Entries is every setting in the order Flink applies it: the later
	// one of a key wins.
	Entries []Entry
	// JVMOptions is the TaskManager's JVM options as Flink's scripts merge
	// them (JAVA_TOOL_OPTIONS, JDK_JAVA_OPTIONS, JVM_ARGS, env.java.opts.all
	// or FLINK_ENV_JAVA_OPTS, env.java.opts.taskmanager or
	// FLINK_ENV_JAVA_OPTS_TM), with where each part came from; set only for
	// a TaskManager.
	JVMOptions []flinkconf.Part
	// Env is the few variables the config rules read (GLIBC_TUNABLES):
	// set ones only.
	Env map[string]string
}

// ErrConfigLimit marks a config file beyond the reader's limits (its
// size, nesting, keys, what its aliases expand to): it is not read, and
// the start is refused. ErrConfigFlink marks a config file Flink itself
// cannot load (a YAML syntax error, a duplicate key, a null value, more
// than 50 aliases to collections): the process fails at start.
// ErrConfigTooLarge marks a file larger than the reader reads, which Flink
// may load: not judged, a warning.
var (
	ErrConfigLimit    = flinkconf.ErrLimit
	ErrConfigFlink    = flinkconf.ErrFlink
	ErrConfigTooLarge = flinkconf.ErrTooLarge
)

// Entry is one key as set by one source (internal/flinkconf reads them).
type Entry = flinkconf.Entry

// Effective returns the value Flink uses for key and its entry, last one
// winning.
func (c *Config) Effective(key string) (Entry, bool) { return flinkconf.Last(c.Entries, key) }

// effective is every key once, with its winning entry, in first-set order.
func (c *Config) effective() []Entry {
	last := map[string]int{}
	var order []string
	for i, e := range c.Entries {
		if _, ok := last[e.Key]; !ok {
			order = append(order, e.Key)
		}
		last[e.Key] = i
	}
	out := make([]Entry, 0, len(order))
	for _, k := range order {
		out = append(out, c.Entries[last[k]])
	}
	return out
}

// TableFor returns the table of a Flink release: its own, else the newest
// of its line (major.minor); nil when there is none.
func TableFor(release string) *flinkconf.Keys {
	if k := flinkconf.KeysOf(release); k != nil {
		return k
	}
	line := LineOf(release)
	if line == "" {
		return nil
	}
	best := ""
	for _, r := range flinkconf.Releases() {
		if LineOf(r) == line && (best == "" || Lookup(r) != nil && (Lookup(best) == nil || versionLess(best, r))) {
			best = r
		}
	}
	if best == "" {
		return nil
	}
	return flinkconf.KeysOf(best)
}

// versionLess orders two releases of the tables (all parse).
func versionLess(a, b string) bool {
	va, _ := ParseFlinkVersion(a)
	vb, _ := ParseFlinkVersion(b)
	return va.Less(vb)
}

// openPrefixes are the keys Flink leaves open: their names are chosen by
// the user (a reporter's, a file system's, a plugin's, the Kubernetes
// operator's own settings), so no table can know them.
var openPrefixes = []string{
	"metrics.reporter.",                           // metrics.reporter.<name>.*
	"metrics.scope.",                              // custom scope formats
	"fs.", "s3.", "s3a.", "gs.", "oss.", "azure.", // file system plugins forward these
	"flink.hadoop.", "flink.yarn.", "hadoop.", // forwarded to Hadoop and YARN
	"plugin.",                                 // plugin settings
	"kubernetes.operator.", "job.autoscaler.", // the Flink Kubernetes Operator's own
	"containerized.master.env.", "containerized.taskmanager.env.", // environment maps
	"kubernetes.jobmanager.env.", "kubernetes.taskmanager.env.",
	"pipeline.global-job-parameters.",
	"sql-gateway.", "python.", // read by modules in opt/, not on the classpath the tables are made of
	"$internal.",
}

// imageKeys are keys the official images write themselves (their
// docker-entrypoint.sh): never a finding, whatever the release.
var imageKeys = []string{"query.server.port"}

func open(key string) bool {
	if slices.Contains(imageKeys, key) {
		return true
	}
	for _, p := range openPrefixes {
		if strings.HasPrefix(key, p) {
			return true
		}
	}
	return false
}

// The config rules.

// confRelease is the release whose config rules apply, with its table.
func (v *view) confRelease() (string, *flinkconf.Keys) {
	if v.Config.Dir == "" {
		return "", nil
	}
	rel := v.flink
	if d := v.theDist(); d != nil && distVersion(d) != "" {
		rel = distVersion(d)
	}
	if rel == "" {
		return "", nil
	}
	return rel, TableFor(rel)
}

func configFileLine(v *view) []Finding {
	rel, _ := v.confRelease()
	c := v.Config
	if c.Dir != "" && errors.Is(c.Err, ErrConfigFlink) {
		return one(Finding{Path: c.File, Message: "Flink cannot load its config file and fails at start",
			Found: c.Err.Error(), Required: "a config file Flink " + cmp.Or(rel, "(unknown release)") + " loads",
			Fix: "correct the file (a YAML syntax error, a key set twice in one mapping, a key without a value, or more than 50 aliases (*name) to mappings or lists)"})
	}
	if c.Dir != "" && errors.Is(c.Err, ErrConfigTooLarge) {
		return one(Finding{Severity: Warning, Path: c.File, Message: "the config file is larger than the entrypoint reads, so its settings are not judged",
			Found: c.Err.Error(), Required: fmt.Sprintf("a config file of at most %d KiB to be judged", flinkconf.MaxBytes>>10),
			Fix: "nothing, if Flink loads it; to have it judged, write the configuration out without what makes it this large"})
	}
	if c.Dir != "" && errors.Is(c.Err, ErrConfigLimit) {
		return one(Finding{Path: c.File, Message: "the config file is beyond what the entrypoint reads, so nothing can vouch for it",
			Found: c.Err.Error(), Required: fmt.Sprintf("a config file of at most %d KiB, %d keys and %d levels of nesting, whose aliases expand to at most %d values",
				flinkconf.MaxBytes>>10, flinkconf.MaxEntries, flinkconf.MaxDepth, flinkconf.MaxNodes),
			Fix: "write the configuration out as plain keys and values (Flink's shipped config.yaml is 15 KiB), without aliases that repeat whole mappings or lists"})
	}
	if rel == "" || c.Present || c.Other == "" {
		return nil
	}
	want, other := path.Base(c.File), path.Base(c.Other)
	fix := "write the configuration as config.yaml (standard YAML; Flink's bin/migrate-config-file.sh converts a flink-conf.yaml), or, with the Flink Kubernetes Operator, set spec.flinkVersion to the image's release"
	if want == "flink-conf.yaml" {
		fix = "write the configuration as flink-conf.yaml (one `key: value` a line); Flink " + rel + " does not read config.yaml"
	}
	return one(Finding{Path: c.Dir, Message: fmt.Sprintf("Flink %s reads only %s and fails at start without it", rel, want),
		Found: other + " without " + want, Required: want, Fix: fix})
}

// configKeyConflict reports a key set beside one of its deprecated keys to
// another value. A non-deprecated fallback key is another live option the
// key only defaults to (rest.address falls back to jobmanager.rpc.address):
// setting both apart is deliberate (the official images do), so it is not
// reported.
func configKeyConflict(v *view) []Finding {
	_, keys := v.confRelease()
	if keys == nil {
		return nil
	}
	var out []Finding
	for _, e := range v.Config.effective() {
		o := keys.Option(e.Key)
		if o == nil {
			continue
		}
		for _, old := range o.Deprecated {
			oe, ok := v.Config.Effective(old)
			if !ok || oe.Value == e.Value {
				continue
			}
			out = append(out, Finding{Path: v.Config.File,
				Message:  fmt.Sprintf("%s and its deprecated key %s are both set, to different values; Flink uses %s", e.Key, old, e.Key),
				Found:    fmt.Sprintf("%s: %s (%s), %s: %s (%s)", e.Key, e.Value, e.Source, old, oe.Value, oe.Source),
				Required: "one of the two keys, or both set to the same value",
				Fix:      fmt.Sprintf("remove %s (%s) and keep %s at the value you mean", old, oe.Source, e.Key)})
		}
	}
	return out
}

func configUnknownKey(v *view) []Finding {
	rel, keys := v.confRelease()
	if keys == nil {
		return nil
	}
	var out []Finding
	for _, e := range v.Config.effective() {
		if open(e.Key) || keys.Known(e.Key) {
			continue
		}
		if f, ok := removedKey(rel, keys, e); ok {
			out = append(out, f)
			continue
		}
		if near := keys.Nearest(e.Key); near != "" {
			out = append(out, Finding{Path: v.Config.File, Message: fmt.Sprintf("Flink %s does not know %s and ignores it", rel, e.Key),
				Found: fmt.Sprintf("%s: %s (%s)", e.Key, e.Value, e.Source), Required: "a key Flink " + rel + " reads: " + near + ", a near name",
				Fix: "rename " + e.Key + " to " + near})
		}
	}
	return out
}

// removedKey reports a key another release's table knows and the host's does not.
func removedKey(rel string, keys *flinkconf.Keys, e Entry) (Finding, bool) {
	for _, r := range flinkconf.Releases() {
		if r == keys.Release {
			continue
		}
		t := flinkconf.KeysOf(r)
		if !t.Known(e.Key) {
			continue
		}
		// What replaced it: the option that read it there, if the host has it.
		repl := ""
		if t.Option(e.Key) == nil {
			for _, a := range t.ReadBy(e.Key) {
				if keys.Option(a) != nil {
					repl = a
					break
				}
			}
		}
		req, fix := "no such key: Flink "+rel+" has no replacement for it", "remove "+e.Key
		if repl != "" {
			req, fix = repl+", which replaces it in Flink "+rel, "set "+repl+" instead of "+e.Key
		}
		return Finding{Path: configPath(e), Message: fmt.Sprintf("%s is a key of Flink %s that Flink %s no longer reads", e.Key, r, rel),
			Found: fmt.Sprintf("%s: %s (%s)", e.Key, e.Value, e.Source), Required: req, Fix: fix}, true
	}
	return Finding{}, false
}

func configPath(e Entry) string {
	if p, _, ok := strings.Cut(e.Source, ", line "); ok && strings.HasPrefix(p, "/") {
		return p
	}
	return ""
}

// ArrowFlags are the JVM options StreamFusion's Arrow transposes need on a
// TaskManager, with the value each must have.
var ArrowFlags = [][2]string{{"arrow.enable_unsafe_memory_access", "true"}, {"arrow.enable_null_check_for_get", "false"}}

// ArrowOptions is ArrowFlags as JVM options.
func ArrowOptions() string {
	var s []string
	for _, f := range ArrowFlags {
		s = append(s, "-D"+f[0]+"="+f[1])
	}
	return strings.Join(s, " ")
}

// IsTaskManager reports whether a role (internal/roles' names) starts a
// TaskManager.
func IsTaskManager(role string) bool {
	return role == "taskmanager" || role == "kubernetes-taskmanager"
}

func configTaskManagerFlags(v *view) []Finding {
	c := v.Config
	if c.Dir == "" || !IsTaskManager(c.Role) || !v.payloads {
		return nil
	}
	values := map[string]string{} // the last -Dname=value wins, as in the JVM
	for _, p := range c.JVMOptions {
		for _, w := range strings.Fields(p.Options) {
			if name, val, ok := strings.Cut(strings.TrimPrefix(w, "-D"), "="); ok && strings.HasPrefix(w, "-D") {
				values[name] = val
			}
		}
	}
	var missing []string
	for _, f := range ArrowFlags {
		if values[f[0]] != f[1] {
			missing = append(missing, "-D"+f[0]+"="+f[1])
		}
	}
	if len(missing) == 0 {
		return nil
	}
	var found []string
	for _, p := range c.JVMOptions {
		if strings.TrimSpace(p.Options) != "" {
			found = append(found, strings.TrimSpace(p.Options)+" ("+p.Source+")")
		}
	}
	foundText := "JVM options without " + strings.Join(missing, " ")
	if len(found) > 0 {
		foundText += ": " + strings.Join(found, "; ")
	}
	return one(Finding{Path: c.File, Message: "the TaskManager's JVM lacks the Arrow options StreamFusion's transposes need (about a third of their CPU otherwise)",
		Found: foundText, Required: ArrowOptions() + " in the TaskManager's JVM options",
		Fix: "add them to env.java.opts.taskmanager (config file or FLINK_PROPERTIES: `env.java.opts.taskmanager: " + ArrowOptions() + "`, appended to what it holds)"})
}

// MaxStaticTLS is the largest glibc.rtld.optional_static_tls measured to
// leave the JVM running (Debian bookworm's glibc 2.36, OpenJDK 17, x86_64;
// docs/glibc-tunables.md): glibc takes the reservation out of every thread's
// stack, and the JVM's process reaper (136 KiB) hangs from 32768 on and
// dies of SIGSEGV, without an hs_err file, at 131072, the value images
// carried up to issue 29. StreamFusion's native libraries use dynamic TLS
// and need no reservation.
const MaxStaticTLS = 24576

func configEnv(v *view) []Finding {
	c := v.Config
	if c.Dir == "" {
		return nil
	}
	got, set := c.Env["GLIBC_TUNABLES"]
	size, ok := staticTLS(got)
	if !set || !ok || size <= MaxStaticTLS {
		return nil
	}
	return one(Finding{Path: "GLIBC_TUNABLES", Message: fmt.Sprintf("the environment reserves %d bytes of optional static TLS, which glibc takes out of every thread's stack: "+
		"the JVM's process reaper is left less than its guard zones, so the first subprocess (the SQL client's terminal, Flink 1.18 RocksDB's libc probe, "+
		"any ProcessBuilder) hangs the JVM from 32768 on and kills it with SIGSEGV, without an hs_err file, at 131072 (docs/glibc-tunables.md)", size),
		Found:    "GLIBC_TUNABLES=" + got,
		Required: fmt.Sprintf("no glibc.rtld.optional_static_tls, or at most %d (StreamFusion's native libraries use dynamic TLS and need none)", MaxStaticTLS),
		Fix:      "remove glibc.rtld.optional_static_tls from GLIBC_TUNABLES in the image (Dockerfile ENV) or the pod's env; images baked before this release set it, rebuild them or unset it"})
}

// staticTLS is the glibc.rtld.optional_static_tls that GLIBC_TUNABLES, a
// colon-separated list of tunables, sets (the last setting wins, as in
// glibc's parser); ok is false when it sets none or an unparsable one,
// which glibc ignores.
func staticTLS(tunables string) (size uint64, ok bool) {
	for _, t := range strings.Split(tunables, ":") {
		if v, found := strings.CutPrefix(t, "glibc.rtld.optional_static_tls="); found {
			n, err := strconv.ParseUint(v, 0, 64)
			size, ok = n, err == nil
		}
	}
	return size, ok
}

// JudgeConfig runs the rules on a configuration that is not a host's own:
// a FlinkDeployment's spec.flinkConfiguration, which the Flink Kubernetes
// Operator writes into the config file of the pods it starts. release is
// the image's Flink release, payloads whether the image holds StreamFusion
// payloads. The file rules (config-file-line) and the environment's
// (config-env) belong to the image's own verdict and are not run.
//
// runTime, when not nil, is what the image's Flink will resolve at run time
// (Decision.RunTime): the configuration's locations and reporters are
// judged against it too (fs-scheme-unserved, reporter-unavailable).
func JudgeConfig(release string, payloads bool, c Config, runTime *FileSystems) []Finding {
	if c.Dir == "" {
		c.Dir = "(" + c.File + ")"
	}
	v := &view{Facts: &Facts{Config: c, FileSystems: runTime}, flink: release, payloads: payloads}
	var out []Finding
	for _, r := range Rules {
		switch r.ID {
		case "config-key-conflict", "config-unknown-key", "config-taskmanager-flags", "fs-scheme-unserved", "reporter-unavailable":
			for _, f := range r.check(v) {
				f.Rule, f.Severity = r.ID, r.Severity
				out = append(out, f)
			}
		}
	}
	return out
}
