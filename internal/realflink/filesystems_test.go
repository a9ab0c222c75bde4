//go:build realjars

package realflink

import (
	"archive/zip"
	"cmp"
	"context"
	"fmt"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/classfile"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// fsCase is a configuration and a plugins folder: the real distribution's
// own plugins/ (its metrics reporters and GPU plugin) plus what the case
// adds.
type fsCase struct {
	name    string
	only    string            // "2" or "1": the line it is for; "" both
	conf    string            // config lines, the same in config.yaml and flink-conf.yaml
	plugins map[string]string // plugin folder (or "" for straight in plugins/) to artifact
	empty   string            // an empty folder to add below plugins/
	// acme adds plugins/acme/ with a file system for the scheme acme whose
	// factory calls a class of a library the plugin does not bundle
	// (acmeJARs); the library goes to "lib", to "plugin" (plugins/acme/),
	// or to "pattern" (lib, with a plugin parent-first pattern for it).
	acme string
}

var fsCases = []fsCase{
	{name: "s3 checkpoints without a plugin", conf: "state.checkpoints.dir: s3://bucket/cp"},
	{name: "s3 checkpoints with flink-s3-fs-hadoop", conf: "state.checkpoints.dir: s3://bucket/cp", plugins: map[string]string{"s3-fs-hadoop": "flink-s3-fs-hadoop"}},
	{name: "s3a savepoints with flink-s3-fs-hadoop", conf: "state.savepoints.dir: s3a://bucket/sp", plugins: map[string]string{"s3": "flink-s3-fs-hadoop"}},
	{name: "the plugin JAR straight in plugins/", conf: "state.checkpoints.dir: s3://bucket/cp", plugins: map[string]string{"": "flink-s3-fs-hadoop"}},
	{name: "s3a with flink-s3-fs-presto", only: "2", conf: "state.checkpoints.dir: s3a://bucket/cp", plugins: map[string]string{"presto": "flink-s3-fs-presto"}},
	{name: "s3p with flink-s3-fs-presto", only: "2", conf: "state.checkpoints.dir: s3p://bucket/cp", plugins: map[string]string{"presto": "flink-s3-fs-presto"}},
	{name: "gs savepoints without a plugin", conf: "state.savepoints.dir: gs://bucket/sp"},
	{name: "abfss archive without a plugin", conf: "jobmanager.archive.fs.dir: abfss://c@acct.dfs.core.windows.net/archive"},
	{name: "hdfs without Hadoop", conf: "state.checkpoints.dir: hdfs://namenode:8020/cp"},
	{name: "HA storage on s3 with HA on", conf: "high-availability.type: kubernetes\nhigh-availability.storageDir: s3://bucket/ha"},
	{name: "HA storage on s3 with HA off", conf: "high-availability.storageDir: s3://bucket/ha"},
	{name: "local paths", conf: "state.checkpoints.dir: file:///tmp/cp\nstate.savepoints.dir: /tmp/sp\njobmanager.archive.fs.dir: file:/tmp/archive"},
	{name: "default scheme s3 without a plugin", conf: "fs.default-scheme: s3://bucket/\nstate.checkpoints.dir: /cp"},
	{name: "default scheme s3 with a plugin", conf: "fs.default-scheme: s3://bucket/\nstate.checkpoints.dir: /cp", plugins: map[string]string{"s3": "flink-s3-fs-hadoop"}},
	{name: "s3 allowed to fall back, no Hadoop", conf: "fs.allowed-fallback-filesystems: s3\nstate.checkpoints.dir: s3://bucket/cp"},
	{name: "the new key on 2.x", only: "2", conf: "execution.checkpointing.dir: s3://bucket/cp\nexecution.checkpointing.savepoint-dir: s3://bucket/sp", plugins: map[string]string{"s3": "flink-s3-fs-hadoop"}},
	{name: "an empty plugin folder", conf: "state.checkpoints.dir: file:///tmp/cp", empty: "s3"},
	{name: "the plugin JAR in a subfolder of its folder", conf: "state.checkpoints.dir: s3://bucket/cp", plugins: map[string]string{"s3/lib": "flink-s3-fs-hadoop"}},
	{name: "an upper-case scheme", conf: "state.checkpoints.dir: S3://bucket/cp", plugins: map[string]string{"s3": "flink-s3-fs-hadoop"}},
	// A plugin of another release (artifact@release): its factory is
	// found, and its code does not link against the host's Flink.
	{name: "s3 checkpoints with the 1.18.1 plugin", only: "2", conf: "execution.checkpointing.dir: s3://bucket/cp", plugins: map[string]string{"s3-fs-hadoop": "flink-s3-fs-hadoop@1.18.1"}},
	{name: "s3 checkpoints with the 2.2.0 plugin", only: "1", conf: "state.checkpoints.dir: s3://bucket/cp", plugins: map[string]string{"s3-fs-hadoop": "flink-s3-fs-hadoop@2.2.0"}},
	{name: "s3 checkpoints with the 2.1.1 plugin", only: "2", conf: "execution.checkpointing.dir: s3://bucket/cp", plugins: map[string]string{"s3-fs-hadoop": "flink-s3-fs-hadoop@2.1.1"}},
	// A plugin's code in its own class loader: lib only through the
	// plugin parent-first patterns.
	{name: "a plugin using a library only lib has", conf: "state.checkpoints.dir: acme://bucket/cp", acme: "lib"},
	{name: "a plugin that no location uses, using a library only lib has", conf: "state.checkpoints.dir: file:///tmp/cp", acme: "lib"},
	{name: "a plugin with its library in its folder", conf: "state.checkpoints.dir: acme://bucket/cp", acme: "plugin"},
	{name: "a plugin using lib's library by a pattern", conf: "state.checkpoints.dir: acme://bucket/cp\nplugin.classloader.parent-first-patterns.additional: com.acme.util", acme: "pattern"},
}

// acmeSources are the acme file system plugin and the library its factory
// calls (acmeJARs).
var acmeSources = map[string]string{
	"com/acme/fs/AcmeFactory.java": `package com.acme.fs;
public class AcmeFactory implements org.apache.flink.core.fs.FileSystemFactory {
    public String getScheme() { return "acme"; }
    public org.apache.flink.core.fs.FileSystem create(java.net.URI uri) {
        com.acme.util.Helper.check(uri);
        return org.apache.flink.core.fs.local.LocalFileSystem.getSharedInstance();
    }
}
`,
	"com/acme/util/Helper.java": `package com.acme.util;
public class Helper {
    public static void check(java.net.URI uri) {}
}
`,
}

// acmeJARs compiles acmeSources with javac against a release's flink-dist
// and writes the plugin's JAR (its factory, listed in its service file)
// and the library's.
func acmeJARs(t *testing.T, version string) (plugin, util string) {
	t.Helper()
	javac, err := exec.LookPath("javac")
	require.NoError(t, err, "javac compiles the acme plugin")
	src, classes := t.TempDir(), t.TempDir()
	var files []string
	for name, body := range acmeSources {
		p := filepath.Join(src, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
		files = append(files, p)
	}
	slices.Sort(files)
	out, err := exec.Command(javac, append([]string{"--release", "11", "-d", classes, "-cp", realLib(t, version)["flink-dist-"+version+".jar"]}, files...)...).CombinedOutput()
	require.NoError(t, err, "javac: %s", out)
	write := func(name string, entries map[string]string) string {
		p := filepath.Join(t.TempDir(), name)
		f, err := os.Create(p)
		require.NoError(t, err)
		z := zip.NewWriter(f)
		for _, e := range slices.Sorted(maps.Keys(entries)) {
			w, err := z.Create(e)
			require.NoError(t, err)
			data := []byte(entries[e])
			if strings.HasSuffix(e, ".class") {
				data, err = os.ReadFile(filepath.Join(classes, e))
				require.NoError(t, err)
			}
			_, err = w.Write(data)
			require.NoError(t, err)
		}
		require.NoError(t, z.Close())
		require.NoError(t, f.Close())
		return p
	}
	plugin = write("acme-fs-1.0.jar", map[string]string{"com/acme/fs/AcmeFactory.class": "",
		"META-INF/services/org.apache.flink.core.fs.FileSystemFactory": "com.acme.fs.AcmeFactory\n"})
	util = write("acme-util-1.0.jar", map[string]string{"com/acme/util/Helper.class": ""})
	return plugin, util
}

// runTimeHome is a Flink home of a real distribution: lib's JARs and the
// distribution's own plugin folders (but drop) linked in, conf/ empty.
func runTimeHome(t *testing.T, version, drop string) (home, lib, conf, plugins string) {
	t.Helper()
	home = filepath.Join(t.TempDir(), "opt/flink")
	lib, conf, plugins = filepath.Join(home, "lib"), filepath.Join(home, "conf"), filepath.Join(home, "plugins")
	for _, d := range []string{lib, conf, plugins} {
		require.NoError(t, os.MkdirAll(d, 0o755))
	}
	for name, p := range realLib(t, version) {
		require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
	}
	dist := filepath.Join(flinkHome(t, version), "plugins")
	entries, err := os.ReadDir(dist)
	require.NoError(t, err)
	for _, e := range entries {
		if e.IsDir() && e.Name() != drop {
			require.NoError(t, os.Symlink(filepath.Join(dist, e.Name()), filepath.Join(plugins, e.Name())))
		}
	}
	return home, lib, conf, plugins
}

// fsOutcome is what real Flink (FileSystemOracle) made of a case.
type fsOutcome struct {
	startFails string
	schemes    []string // registered factories' schemes, sorted
	failing    []string // "key value" of the locations it could not open
	opened     int
}

func runFileSystemOracle(t *testing.T, version, conf, plugins string, extra ...string) fsOutcome {
	t.Helper()
	cp := extra
	for _, p := range realLib(t, version) {
		cp = append(cp, p)
	}
	slices.Sort(cp)
	oracle, err := filepath.Abs("testdata/FileSystemOracle.java")
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", "-cp", strings.Join(cp, ":"), oracle, conf)
	cmd.Env = append(os.Environ(), "FLINK_PLUGINS_DIR="+plugins)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, "FileSystemOracle: %s", stderr.String())
	var o fsOutcome
	for _, l := range strings.Split(string(out), "\n") {
		switch {
		case strings.HasPrefix(l, "== START-FAILS "):
			o.startFails = strings.TrimPrefix(l, "== START-FAILS ")
		case strings.HasPrefix(l, "== SCHEME "):
			o.schemes = append(o.schemes, strings.Fields(l)[2])
		case strings.HasPrefix(l, "== LOCATION "):
			f := strings.Fields(l)
			if f[4] == "FAILS" {
				o.failing = append(o.failing, f[2]+" "+f[3])
			} else {
				o.opened++
			}
		}
	}
	slices.Sort(o.schemes)
	return o
}

// TestFileSystemsAsFlinkResolvesThem is the test of record for the
// fs-scheme-unserved and plugins-* rules: on the real distributions of both
// lines, with real file system plugins by Maven coordinates (of the host's
// release, or of the other line's), real Flink's FileSystem (with its
// PluginManager) opens every configured location; wherever it fails
// (UnsupportedFileSystemSchemeException, a plugin whose code does not link
// against the host's Flink, or the plugin finder at start), the product
// refuses, and wherever it succeeds, the product admits. The factories' schemes the product reads from bytecode
// are those Flink's factories return.
func TestFileSystemsAsFlinkResolvesThem(t *testing.T) {
	for _, version := range []string{"2.2.0", "1.18.1"} {
		for _, c := range fsCases {
			if c.only != "" && !strings.HasPrefix(version, c.only) {
				continue
			}
			t.Run(version+"/"+c.name, func(t *testing.T) {
				t.Parallel() // one JVM a case: both cores
				home, lib, conf, plugins := runTimeHome(t, version, "")
				for folder, artifact := range c.plugins {
					dir := filepath.Join(plugins, folder)
					require.NoError(t, os.MkdirAll(dir, 0o755))
					release := version
					if a, r, ok := strings.Cut(artifact, "@"); ok {
						artifact, release = a, r
					}
					require.NoError(t, os.Symlink(jarPath(t, artifact, release), filepath.Join(dir, artifact+"-"+release+".jar")))
				}
				if c.empty != "" {
					require.NoError(t, os.MkdirAll(filepath.Join(plugins, c.empty), 0o755))
				}
				var extra []string // lib's JARs beyond the distribution's
				if c.acme != "" {
					plugin, util := acmeJARs(t, version)
					dir := filepath.Join(plugins, "acme")
					require.NoError(t, os.MkdirAll(dir, 0o755))
					require.NoError(t, os.Symlink(plugin, filepath.Join(dir, filepath.Base(plugin))))
					if c.acme == "plugin" {
						require.NoError(t, os.Symlink(util, filepath.Join(dir, filepath.Base(util))))
					} else {
						require.NoError(t, os.Symlink(util, filepath.Join(lib, filepath.Base(util))))
						extra = append(extra, util)
					}
				}
				file := "config.yaml"
				if strings.HasPrefix(version, "1.") {
					file = "flink-conf.yaml"
				}
				require.NoError(t, os.WriteFile(filepath.Join(conf, file), []byte(c.conf+"\n"), 0o644))

				flink := runFileSystemOracle(t, version, conf, plugins, extra...)
				// Deep: the plugins' code is judged in their class loaders too.
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
					LibDir: lib, PluginsDir: plugins, FlinkHome: home, ConfDir: conf, Role: "jobmanager", Launch: host.LaunchBare,
					OS: "linux", Arch: "x86_64", Deep: true}, nil)
				require.NoError(t, err)
				defer facts.Deep.Close()
				d := admission.Decide(facts)
				var refusing, linkage []string
				for _, f := range d.Findings {
					switch {
					case f.Severity != admission.Error:
					case f.Rule == "fs-scheme-unserved" || strings.HasPrefix(f.Rule, "plugins-"):
						refusing = append(refusing, f.Rule+": "+f.Message)
					case strings.HasPrefix(f.Rule, "linkage-") && strings.HasPrefix(f.Path, plugins+"/"):
						linkage = append(linkage, f.Rule+": "+f.Message+" ("+f.Found+")")
					}
				}
				t.Logf("Flink: start fails %q, schemes %v, failing %v, opened %d", flink.startFails, flink.schemes, flink.failing, flink.opened)
				t.Logf("product: %v, plugin linkage: %v", refusing, linkage)
				flinkFails := flink.startFails != "" || len(flink.failing) > 0
				refuses := len(refusing)+len(linkage) > 0
				assert.Equal(t, flinkFails, refuses, "Flink fails: %v, the product refuses: %v %v", flinkFails, refusing, linkage)
				if flink.startFails == "" && len(refusing) > 0 {
					assert.Len(t, refusing, len(flink.failing), "one finding per location Flink cannot open")
				}
				otherRelease := false // a plugin of another release: Flink may fail to instantiate its factories
				for _, a := range c.plugins {
					otherRelease = otherRelease || strings.Contains(a, "@")
				}
				if facts.FileSystems.FactoriesRead && !otherRelease {
					var ours []string
					for _, f := range facts.FileSystems.Factories {
						ours = append(ours, f.Scheme)
					}
					slices.Sort(ours)
					assert.Equal(t, flink.schemes, ours, "the factories' schemes, read from their bytecode")
				}
			})
		}
	}
}

// TestDirectlySupportedIsFlinks reads the schemes Flink serves only from
// plugins out of flink-dist's FileSystem (its static initializer's string
// constants, in scheme/plugin pairs) on both lines.
func TestDirectlySupportedIsFlinks(t *testing.T) {
	for _, version := range []string{"2.2.0", "1.18.1"} {
		a, err := payload.OpenArchive(os.DirFS("/"), strings.TrimPrefix(realLib(t, version)["flink-dist-"+version+".jar"], "/"))
		require.NoError(t, err)
		data, err := a.Class("org/apache/flink/core/fs/FileSystem", nil)
		a.Close()
		require.NoError(t, err)
		c, err := classfile.Parse(data, classfile.Options{Init: true})
		require.NoError(t, err)
		var strs []string
		for _, in := range c.Init {
			if in.String != "" {
				strs = append(strs, in.String)
			}
		}
		flink := map[string]bool{}
		for i := 0; i+1 < len(strs); i++ {
			if strings.HasPrefix(strs[i+1], "flink-") && !strings.HasPrefix(strs[i], "flink-") {
				flink[strs[i]] = true
			}
		}
		ours := map[string]bool{}
		for s := range admission.DirectlySupported() {
			ours[s] = true
		}
		assert.Equal(t, flink, ours, "Flink %s: the schemes only plugins serve", version)
	}
}

// TestLoggingBindingAsSLF4JFindsIt is the test of record for
// logging-binding-lost and logging-bridge-loop: real Flink lib of both
// lines, with real SLF4J and Log4j JARs by Maven coordinates added to it,
// and SLF4J's and Log4j's own lookups (LoggingOracle, on lib in Flink's
// class path order) as the oracle: wherever SLF4J binds the no-operation
// logger, the product refuses with logging-binding-lost; wherever taking
// a logger throws (Log4j's binding refusing a Log4j API routed back to
// SLF4J), with logging-bridge-loop; wherever SLF4J binds Flink's Log4j
// and a logger is taken, the product admits.
func TestLoggingBindingAsSLF4JFindsIt(t *testing.T) {
	for _, version := range []string{"2.2.0", "1.18.1"} {
		for _, c := range []struct {
			name  string
			extra []string // artifact-version in the JAR cache, added to lib
			only  string
		}{
			{"Flink's own lib", nil, ""},
			{"the SLF4J 2 API in lib", []string{"slf4j-api-2.0.16"}, ""},
			// Log4j's SLF4J 2 provider exists from 2.19 on; on 1.18.1's Log4j
			// 2.17.1 the JVM fails to initialize it (NoClassDefFoundError),
			// which no rule judges yet: 2.2 only.
			{"the SLF4J 2 API with its Log4j provider", []string{"slf4j-api-2.0.16", "log4j-slf4j2-impl-2.24.3"}, "2"},
			{"the SLF4J 1.7 API in lib", []string{"slf4j-api-1.7.36"}, ""},
			// Log4j's API routed to SLF4J while SLF4J is bound to Log4j
			// (logging-bridge-loop), with each line's Log4j release.
			{"log4j-to-slf4j 2.24.3 in lib", []string{"log4j-to-slf4j-2.24.3"}, ""},
			{"log4j-to-slf4j 2.17.1 in lib", []string{"log4j-to-slf4j-2.17.1"}, "1"},
			// ...and with SLF4J bound to another backend: the way to it.
			{"log4j-to-slf4j with SLF4J 2 bound to slf4j-simple", []string{"slf4j-api-2.0.16", "slf4j-simple-2.0.16", "log4j-to-slf4j-2.24.3"}, ""},
		} {
			if c.only != "" && !strings.HasPrefix(version, c.only) {
				continue
			}
			t.Run(version+"/"+c.name, func(t *testing.T) {
				lib := filepath.Join(t.TempDir(), "opt/flink/lib")
				require.NoError(t, os.MkdirAll(lib, 0o755))
				var cp []string
				for name, p := range realLib(t, version) {
					require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
					if !admission.IsDist(name) {
						cp = append(cp, filepath.Join(lib, name))
					}
				}
				for _, e := range c.extra {
					i := strings.LastIndexByte(e, '-')
					p := filepath.Join(lib, e+".jar")
					require.NoError(t, os.Symlink(jarPath(t, e[:i], e[i+1:]), p))
					cp = append(cp, p)
				}
				slices.Sort(cp) // the names sort alike in every collation
				cp = append(cp, filepath.Join(lib, "flink-dist-"+version+".jar"))
				oracle, err := filepath.Abs("testdata/LoggingOracle.java")
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				out, err := exec.CommandContext(ctx, "java", "-cp", strings.Join(cp, ":"), oracle).Output()
				require.NoError(t, err)
				factory, failed := "", ""
				for _, l := range strings.Split(string(out), "\n") {
					if strings.HasPrefix(l, "== FACTORY ") {
						factory = strings.TrimPrefix(l, "== FACTORY ")
					}
					if strings.HasPrefix(l, "== FAILED ") {
						failed = strings.TrimPrefix(l, "== FAILED ")
					}
				}
				require.NotEmpty(t, factory, "LoggingOracle: %s", out)
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{LibDir: lib, OS: "linux", Arch: "x86_64"}, nil)
				require.NoError(t, err)
				rules := ruleIDs(admission.Decide(facts).Findings)
				lost, loop := slices.Contains(rules, "logging-binding-lost"), slices.Contains(rules, "logging-bridge-loop")
				t.Logf("SLF4J binds %s (a logger: %s); the product refuses: binding lost %v, bridge loop %v", factory, cmp.Or(failed, "ok"), lost, loop)
				assert.Equal(t, strings.HasSuffix(factory, ".NOPLoggerFactory"), lost, "SLF4J binds %s", factory)
				assert.Equal(t, failed != "", loop, "the first logger: %s", cmp.Or(failed, "ok"))
			})
		}
	}
}

// TestReportersAsFlinkSetsThemUp is the test of record for
// reporter-unavailable: on the real distributions of both lines, with their
// own plugins/ (the metrics reporters), real Flink's reporter setup
// (ReporterOracle: ReporterSetup on 1.18, ReporterSetupBuilder's metrics,
// traces and events on 2.x) is the oracle. Every reporter the
// configuration names that Flink does not set up has a warning of the
// product, and no reporter Flink sets up has one.
func TestReportersAsFlinkSetsThemUp(t *testing.T) {
	const prom = "metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\nmetrics.reporter.prom.port: 0\n"
	for _, version := range []string{"2.2.0", "1.18.1"} {
		for _, c := range []struct {
			name, conf string
			only       string
			drop       string // a folder of the distribution's plugins/ left out
			loose      bool   // and its JAR put straight into plugins/
			other      bool   // and the other line's JAR of it put in its place
		}{
			{name: "Prometheus with its plugin", conf: prom},
			{name: "Prometheus without its plugin", conf: prom, drop: "metrics-prometheus"},
			{name: "Prometheus's JAR straight in plugins/", conf: prom, drop: "metrics-prometheus", loose: true},
			{name: "Prometheus's plugin of the other line", conf: prom, drop: "metrics-prometheus", other: true},
			{name: "a factory class that is not there", conf: "metrics.reporter.bad.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactoryX\n"},
			{name: "the reporter class only", conf: "metrics.reporter.old.class: org.apache.flink.metrics.jmx.JMXReporter\n"},
			{name: "JMX and Prometheus", conf: prom + "metrics.reporter.jmx.factory.class: org.apache.flink.metrics.jmx.JMXReporterFactory\n"},
			{name: "a list that leaves the broken one out", conf: prom + "metrics.reporters: prom\nmetrics.reporter.bad.factory.class: x.Y\n"},
			{name: "trace and event reporters", only: "2", conf: "traces.reporter.slf.factory.class: org.apache.flink.traces.slf4j.Slf4jTraceReporterFactory\nevents.reporter.slf.factory.class: org.apache.flink.events.slf4j.Slf4jEventReporterFactory\ntraces.reporter.bad.factory.class: x.Y\n"},
		} {
			if c.only != "" && !strings.HasPrefix(version, c.only) {
				continue
			}
			t.Run(version+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				home, lib, conf, plugins := runTimeHome(t, version, c.drop)
				if c.loose {
					jars, err := filepath.Glob(filepath.Join(flinkHome(t, version), "plugins", c.drop, "*.jar"))
					require.NoError(t, err)
					require.Len(t, jars, 1)
					require.NoError(t, os.Symlink(jars[0], filepath.Join(plugins, filepath.Base(jars[0]))))
				}
				if c.other {
					other := map[string]string{"2.2.0": "1.18.1", "1.18.1": "2.2.0"}[version]
					jars, err := filepath.Glob(filepath.Join(flinkHome(t, other), "plugins", c.drop, "*.jar"))
					require.NoError(t, err)
					require.Len(t, jars, 1)
					require.NoError(t, os.MkdirAll(filepath.Join(plugins, c.drop), 0o755))
					require.NoError(t, os.Symlink(jars[0], filepath.Join(plugins, c.drop, filepath.Base(jars[0]))))
				}
				file := "config.yaml"
				if strings.HasPrefix(version, "1.") {
					file = "flink-conf.yaml"
				}
				text := c.conf
				if !strings.HasPrefix(version, "1.") {
					// Flink 2's config.yaml hands a reporter "port: 0" as an
					// integer, which the Prometheus reporter's string lookup
					// does not see: it falls back to 9249, and the parallel
					// cases' JVMs then race for that port and all but one
					// fail to set it up. Quoted, the port is 0 (any free one).
					text = strings.ReplaceAll(text, "port: 0\n", "port: \"0\"\n")
				}
				require.NoError(t, os.WriteFile(filepath.Join(conf, file), []byte(text), 0o644))

				out := reporterOracle(t, version, conf, plugins)
				setUp := map[string]bool{}
				for _, l := range strings.Split(out, "\n") {
					if f := strings.Fields(l); len(f) == 4 && f[1] == "REPORTER" {
						setUp[f[2]+" "+f[3]] = true
					}
				}

				// Deep: a reporter plugin's own code is judged too.
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
					LibDir: lib, PluginsDir: plugins, FlinkHome: home, ConfDir: conf, Role: "jobmanager", Launch: host.LaunchBare,
					OS: "linux", Arch: "x86_64", Deep: true}, nil)
				require.NoError(t, err)
				defer facts.Deep.Close()
				warned := map[string]bool{}
				for _, f := range admission.Decide(facts).Findings {
					if c.other && strings.HasPrefix(f.Path, plugins+"/"+c.drop+"/") && (f.Rule == "plugins-release" || strings.HasPrefix(f.Rule, "linkage-")) {
						// The plugin's linkage says whether Flink sets the
						// reporter up; plugins-release is a notice of the
						// release alone, a warning whatever Flink does.
						assert.Equal(t, admission.Warning, f.Severity, "a reporter plugin: Flink runs without it")
						warned["metrics prom"] = warned["metrics prom"] || f.Rule != "plugins-release"
						t.Logf("product: %s %s: %s (%s)", f.Severity, f.Rule, f.Message, f.Found)
						continue
					}
					if f.Rule != "reporter-unavailable" {
						continue
					}
					var kind, name string
					_, err := fmt.Sscanf(f.Message, "the %s reporter %s", &kind, &name)
					require.NoError(t, err, f.Message)
					warned[kind+" "+name] = true
				}
				// every reporter the configuration names, by Flink's own key pattern
				named := map[string]bool{}
				for _, l := range strings.Split(c.conf, "\n") {
					k, _, _ := strings.Cut(l, ":")
					for _, kind := range []string{"metrics", "traces", "events"} {
						if rest, ok := strings.CutPrefix(k, kind+".reporter."); ok {
							if name, suffix, _ := strings.Cut(rest, "."); suffix == "factory.class" || suffix == "class" {
								named[kind+" "+name] = true
							}
						}
					}
				}
				t.Logf("named %v; Flink set up %v; the product warns of %v", named, setUp, warned)
				_, list, listed := strings.Cut(c.conf, "metrics.reporters: ")
				list, _, _ = strings.Cut(list, "\n")
				for r := range named {
					if listed && strings.HasPrefix(r, "metrics ") && !slices.Contains(strings.Split(list, ","), strings.TrimPrefix(r, "metrics ")) {
						assert.False(t, setUp[r] || warned[r], "%s is left out by metrics.reporters: neither set up nor judged", r)
						continue
					}
					assert.Equal(t, !setUp[r], warned[r], "reporter %s: Flink set it up: %v, the product warns: %v", r, setUp[r], warned[r])
				}
				for r := range setUp {
					assert.False(t, warned[r], "a warning for %s, which Flink set up", r)
				}
			})
		}
	}
}

// reporterOracle runs ReporterOracle on the real lib of version with the
// conf directory and plugins folder given, and returns what it printed.
func reporterOracle(t *testing.T, version, conf, plugins string) string {
	t.Helper()
	oracle, err := filepath.Abs("testdata/ReporterOracle.java")
	require.NoError(t, err)
	var cp []string
	for _, p := range realLib(t, version) {
		cp = append(cp, p)
	}
	slices.Sort(cp)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", "-cp", strings.Join(cp, ":"), oracle, conf)
	cmd.Env = append(os.Environ(), "FLINK_PLUGINS_DIR="+plugins)
	out, err := cmd.Output()
	require.NoError(t, err)
	return string(out)
}

// TestReporterOptionsAsFlinkReadsThem is the test of record for
// reporter-option-ignored: on the real distributions of both lines, with
// their Prometheus plugin, real Flink's reporter setup is the oracle of
// the port the reporter serves on (ReporterOracle's "== PORT"). Wherever
// the reporter does not serve on the port the configuration gives, the
// product warns of that option; wherever it does, it does not.
func TestReporterOptionsAsFlinkReadsThem(t *testing.T) {
	free := func() int {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		defer ln.Close()
		return ln.Addr().(*net.TCPAddr).Port
	}
	for _, version := range []string{"2.2.0", "1.18.1"} {
		for _, c := range []struct {
			name   string
			format string // the port line, %d the port
		}{
			{"a YAML int", "metrics.reporter.prom.port: %d\n"},
			{"a quoted port", "metrics.reporter.prom.port: \"%d\"\n"},
			{"a port range", "metrics.reporter.prom.port: %d-65000\n"},
			{"nested YAML, an int", "metrics:\n  reporter:\n    prom:\n      port: %d\n"}, // config.yaml only
		} {
			file := "config.yaml"
			if strings.HasPrefix(version, "1.") {
				if strings.HasPrefix(c.name, "nested") {
					continue // 1.18's flink-conf.yaml is flat: key: value lines
				}
				file = "flink-conf.yaml"
			}
			t.Run(version+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				home, lib, conf, plugins := runTimeHome(t, version, "")
				port := free()
				text := "metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n" + fmt.Sprintf(c.format, port)
				require.NoError(t, os.WriteFile(filepath.Join(conf, file), []byte(text), 0o644))
				served := -1
				for _, l := range strings.Split(reporterOracle(t, version, conf, plugins), "\n") {
					if f := strings.Fields(l); len(f) == 5 && f[1] == "PORT" && f[3] == "prom" {
						served, _ = strconv.Atoi(f[4])
					}
				}
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
					LibDir: lib, PluginsDir: plugins, FlinkHome: home, ConfDir: conf, Role: "jobmanager", Launch: host.LaunchBare,
					OS: "linux", Arch: "x86_64"}, nil)
				require.NoError(t, err)
				var warned []string
				for _, f := range admission.Decide(facts).Findings {
					if f.Rule == "reporter-option-ignored" {
						warned = append(warned, f.Found)
					}
				}
				t.Logf("configured %d; Prometheus served on %d; the product warns of %v", port, served, warned)
				if served == port {
					assert.Empty(t, warned, "the reporter serves on the port configured")
				} else {
					require.Len(t, warned, 1, "the reporter serves on %d, not on the port configured, %d", served, port)
					assert.Contains(t, warned[0], "metrics.reporter.prom.port: ")
					assert.Contains(t, warned[0], strconv.Itoa(port))
				}
			})
		}
	}
}

// TestSQLFactoriesAsThePlannerFindsThem is the test of record for
// table-factory-missing and for the SQL scanner (internal/sqlscan): on the
// real lib of both lines (and 2.2.0's with the real Kafka SQL connector),
// real Flink's planner runs a job's SQL file (SQLOracle): every CREATE,
// then every table planned as a source. Wherever FactoryUtil finds no
// factory for an identifier, the product names that identifier of that
// table or catalog; wherever the planner creates and plans it, the product
// has no finding for it. The factory options the scanner reads are the
// ones Flink's parser made of the same statements.
func TestSQLFactoriesAsThePlannerFindsThem(t *testing.T) {
	const sql = `CREATE TABLE gen (a INT, b AS a + 1) WITH ('connector' = 'datagen', 'number-of-rows' = '1');
CREATE TABLE k (a INT) WITH (
  'connector' = 'kafka', /* the Kafka connector, if lib has it */
  'topic' = 't;x',
  'properties.bootstrap.servers' = 'localhost:9092',
  'properties.group.id' = 'g',
  'value.format' = 'json'
);
CREATE TABLE fsjson (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp/sf-sql-oracle', 'format' = 'json');
CREATE TABLE fsavro (a INT) WITH ('connector' = 'filesystem', 'path' = '/tmp/sf-sql-oracle', 'format' = 'avro');
CREATE TABLE fscsv (a INT) PARTITIONED BY (a) WITH ('connector' = 'filesystem', 'path' = '/tmp/sf-sql-oracle', 'format' = 'csv');
CREATE CATALOG mem WITH ('type' = 'generic_in_memory');
CREATE CATALOG hive WITH ('type' = 'hive');
-- the end of the job's SQL
`
	file := filepath.Join(t.TempDir(), "job.sql")
	require.NoError(t, os.WriteFile(file, []byte(sql), 0o644))
	// FactoryUtil's words, and the file system connector's for a format
	notFound := regexp.MustCompile(`Could not find any (?:format )?factory for identifier '([^']*)'`)
	for _, c := range []struct {
		version string
		extra   []string // artifact-version in the JAR cache
	}{
		{"2.2.0", nil},
		{"2.2.0", []string{"flink-sql-connector-kafka-5.0.0-2.2"}},
		{"1.18.1", nil},
	} {
		t.Run(c.version+"/"+strings.Join(append([]string{"lib"}, c.extra...), "+"), func(t *testing.T) {
			t.Parallel()
			lib := filepath.Join(t.TempDir(), "opt/flink/lib")
			require.NoError(t, os.MkdirAll(lib, 0o755))
			var cp []string
			for name, p := range realLib(t, c.version) {
				require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
				cp = append(cp, p)
			}
			for _, e := range c.extra {
				i := strings.LastIndex(e[:strings.LastIndex(e, "-")], "-")
				p := jarPath(t, e[:i], e[i+1:])
				require.NoError(t, os.Symlink(p, filepath.Join(lib, e+".jar")))
				cp = append(cp, p)
			}
			slices.Sort(cp)
			oracle, err := filepath.Abs("testdata/SQLOracle.java")
			require.NoError(t, err)
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			raw, err := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", "-cp", strings.Join(cp, ":"), oracle, file).Output()
			require.NoError(t, err)
			flink := map[string]string{}   // table or catalog -> the identifier FactoryUtil found no factory for
			options := map[string]string{} // table -> its factory options as Flink parsed them
			for _, l := range strings.Split(string(raw), "\n") {
				f := strings.Fields(l)
				switch {
				case len(f) >= 4 && (f[1] == "TABLE" || f[1] == "CREATE") && f[3] == "FAILS":
					if m := notFound.FindStringSubmatch(l); m != nil {
						flink[f[2]] = m[1]
					} else {
						t.Errorf("the planner fails %s otherwise: %s", f[2], l)
					}
				case len(f) >= 3 && f[1] == "OPTIONS":
					options[f[2]] = strings.Join(f[3:], " ")
				}
			}
			require.NotEmpty(t, options, "SQLOracle: %s", raw)

			facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{LibDir: lib, OS: "linux", Arch: "x86_64", Deep: true, Args: []string{file}}, nil)
			require.NoError(t, err)
			defer facts.Deep.Close()
			require.Len(t, facts.SQL, 1)
			scanned := map[string][]string{}
			for _, u := range facts.SQL[0].Uses {
				if u.Statement == "table" {
					scanned[u.Name] = append(scanned[u.Name], u.Option+"="+u.Value)
				}
			}
			for name, opts := range scanned {
				slices.Sort(opts)
				assert.Equal(t, options[name], strings.Join(opts, " "), "%s: the scanner's factory options, and the parser's", name)
			}
			assert.Len(t, scanned, len(options), "the tables the scanner read, and those Flink created")
			ours := map[string][]string{}
			for _, f := range admission.Decide(facts).Findings {
				if f.Rule != "table-factory-missing" {
					continue
				}
				assert.Equal(t, admission.Error, f.Severity, f.Message)
				_, rest, _ := strings.Cut(f.Message, " of ")
				fields := strings.Fields(rest) // "table NAME has no factory ..."
				id := f.Message[strings.Index(f.Message, "'")+1:]
				id = id[:strings.Index(id, "'")]
				ours[fields[1]] = append(ours[fields[1]], id)
			}
			t.Logf("the planner finds no factory for %v; the product names %v", flink, ours)
			for name, id := range flink {
				assert.Contains(t, ours[name], id, "%s: the planner finds no factory for '%s'", name, id)
			}
			for name, ids := range ours {
				assert.NotEmpty(t, flink[name], "%s: the product names %v, and the planner creates and plans it", name, ids)
			}
		})
	}
}

// TestTableFactoriesAsFactoryUtilFindsThem is the test of record for
// table-factory-broken and table-factory-duplicate: on the real lib of
// both lines, with real CDC connectors by Maven coordinates and a JAR
// whose service file names a class that is not there (written by the JDK's
// jar tool), real Flink's FactoryUtil.discoverFactory is the oracle
// (TableFactoryOracle). Wherever it fails for an identifier, the deep
// check refuses with the rule for that failure; wherever it finds one
// factory, the deep check has no table-factory finding.
func TestTableFactoriesAsFactoryUtilFindsThem(t *testing.T) {
	dir := t.TempDir()
	services := filepath.Join(dir, "src/META-INF/services")
	require.NoError(t, os.MkdirAll(services, 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(services, "org.apache.flink.table.factories.Factory"), []byte("com.acme.GoneFactory\n"), 0o644))
	broken := filepath.Join(dir, "a-broken-uber.jar")
	out, err := exec.Command("jar", "cf", broken, "-C", filepath.Join(dir, "src"), "META-INF").CombinedOutput()
	require.NoError(t, err, "jar: %s", out)
	// The real CDC connector as an uber JAR built without merging service
	// files leaves it: its Factory service file gone, its classes kept.
	unlisted := filepath.Join(dir, "flink-sql-connector-mysql-cdc-3.1.1-unlisted.jar")
	withoutEntry(t, jarPath(t, "flink-sql-connector-mysql-cdc", "3.1.1"), unlisted, "META-INF/services/org.apache.flink.table.factories.Factory")
	for _, version := range []string{"1.18.1", "2.2.0"} {
		for _, c := range []struct {
			name  string
			extra []string // JAR cache names, or the broken JAR
			rule  string   // the product's rule where Flink fails
		}{
			{"one CDC connector", []string{"flink-sql-connector-mysql-cdc-3.1.1"}, ""},
			{"two releases of the CDC connector", []string{"flink-sql-connector-mysql-cdc-3.0.1", "flink-sql-connector-mysql-cdc-3.1.1"}, "table-factory-duplicate"},
			{"a service file naming a class that is not there", []string{"broken"}, "table-factory-broken"},
			{"the CDC connector without its service file", []string{"unlisted"}, "table-factory-unlisted"},
		} {
			t.Run(version+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				lib := filepath.Join(t.TempDir(), "opt/flink/lib")
				require.NoError(t, os.MkdirAll(lib, 0o755))
				var cp []string
				for name, p := range realLib(t, version) {
					require.NoError(t, os.Symlink(p, filepath.Join(lib, name)))
					cp = append(cp, p)
				}
				for _, e := range c.extra {
					src, name := broken, filepath.Base(broken)
					if e == "unlisted" {
						src, name = unlisted, filepath.Base(unlisted)
					} else if e != "broken" {
						i := strings.LastIndexByte(e, '-')
						src, name = jarPath(t, e[:i], e[i+1:]), e+".jar"
					}
					require.NoError(t, os.Symlink(src, filepath.Join(lib, name)))
					cp = append(cp, src)
				}
				slices.Sort(cp)
				oracle, err := filepath.Abs("testdata/TableFactoryOracle.java")
				require.NoError(t, err)
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
				defer cancel()
				raw, err := exec.CommandContext(ctx, "java", "-Dlog4j2.level=OFF", "-cp", strings.Join(cp, ":"), oracle, "datagen", "mysql-cdc").Output()
				require.NoError(t, err)
				flink := ""
				for _, l := range strings.Split(string(raw), "\n") {
					if _, msg, ok := strings.Cut(l, " FAILS "); ok && flink == "" {
						flink = msg
					}
				}
				facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{LibDir: lib, OS: "linux", Arch: "x86_64", Deep: true}, nil)
				require.NoError(t, err)
				defer facts.Deep.Close()
				var ours []string
				for _, f := range admission.Decide(facts).Findings {
					if strings.HasPrefix(f.Rule, "table-factory-") {
						ours = append(ours, f.Rule)
						t.Logf("%s: %s; found %s", f.Rule, f.Message, f.Found)
					}
				}
				t.Logf("FactoryUtil: %q; the product: %v", flink, ours)
				switch c.rule {
				case "":
					assert.Empty(t, flink, "FactoryUtil finds every identifier")
					assert.Empty(t, ours)
				case "table-factory-duplicate":
					assert.Contains(t, flink, "Multiple factories for identifier 'mysql-cdc'")
					assert.Equal(t, []string{c.rule}, ours)
				case "table-factory-broken":
					assert.Contains(t, flink, "Unexpected error when trying to load service provider")
					assert.Equal(t, []string{c.rule}, ours)
				case "table-factory-unlisted":
					assert.Contains(t, flink, "Could not find any factory for identifier 'mysql-cdc'")
					assert.Equal(t, []string{c.rule}, ours)
				}
			})
		}
	}
}

// withoutEntry copies the JAR src to dst without the entry name, every
// other entry's bytes as they are (a directory's header only).
func withoutEntry(t testing.TB, src, dst, name string) {
	t.Helper()
	r, err := zip.OpenReader(src)
	require.NoError(t, err)
	defer r.Close()
	f, err := os.Create(dst)
	require.NoError(t, err)
	w := zip.NewWriter(f)
	dropped := false
	for _, e := range r.File {
		if e.Name == name {
			dropped = true
			continue
		}
		if strings.HasSuffix(e.Name, "/") { // a directory: its header only (some writers deflate its nothing)
			h := e.FileHeader
			h.Method, h.CompressedSize64, h.UncompressedSize64, h.CRC32 = zip.Store, 0, 0, 0
			_, err := w.CreateHeader(&h)
			require.NoError(t, err)
			continue
		}
		require.NoError(t, w.Copy(e))
	}
	require.True(t, dropped, "%s has no %s", src, name)
	require.NoError(t, w.Close())
	require.NoError(t, f.Close())
}
