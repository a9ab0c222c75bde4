package admission

import "testing"

// The linkage severity policy by table: each row is one consequence the
// policy must tell apart (the real JARs behind them: make test-ecosystem
// and make test-linkage).
func TestJudgeMissing(t *testing.T) {
	own := missingClass{OwnCode: true, JARSeverity: Warning}
	with := func(m missingClass, f func(*missingClass)) missingClass { f(&m); return m }
	for _, c := range []struct {
		name     string
		m        missingClass
		want     missingVerdict
		sev      Severity
		requires bool // as a supertype (marks the library; a quiet or reported finding does not wait for it)
	}{
		{"bundled code naming what nothing provides fails where the JAR belongs too",
			with(own, func(m *missingClass) { m.OwnCode = false }), missingQuiet, "", false},
		{"a class the cluster provides (Hadoop by parent-first pattern)",
			with(own, func(m *missingClass) { m.ClusterProvided = true }), missingQuiet, "", false},
		{"a library the JAR's POM leaves to the user (provided, optional)",
			with(own, func(m *missingClass) { m.Undeclared = true }), missingQuiet, "", true},
		{"a declared library nothing provides: only if the JAR's own code is built on it, a warning",
			own, missingIfRequired, Warning, true},
		{"the same for a payload: an error, it must load",
			with(own, func(m *missingClass) { m.MustLoad = true; m.JARSeverity = Error }), missingIfRequired, Error, true},
		{"a class gone from a package the classpath has: the JAR's severity",
			with(own, func(m *missingClass) { m.Provided = true }), missingReported, Warning, false},
		{"bundled code too, once the package is there",
			with(own, func(m *missingClass) { m.Provided = true; m.OwnCode = false }), missingReported, Warning, false},
		{"the host's own API changed under the JAR: an error whatever the JAR",
			with(own, func(m *missingClass) { m.Provided = true; m.HostProvides = true }), missingReported, Error, false},
		{"a planner class lib never sees: the JAR's severity, the planner's fix",
			with(own, func(m *missingClass) { m.Provided = true; m.PlannerOnly = true }), missingReported, Warning, false},
		{"a library the JAR's own line's flink-dist carried: the JAR's severity",
			with(own, func(m *missingClass) { m.Dropped = true; m.JARSeverity = Error; m.Undeclared = true }), missingReported, Error, true},
		{"a plugin's provider naming a class its loader does not have (lib's): the plugin's severity",
			with(own, func(m *missingClass) { m.Plugin = true; m.Root = true; m.InLib = true; m.JARSeverity = Error }), missingReported, Error, false},
		{"the same, a class gone from a package the plugin has",
			with(own, func(m *missingClass) { m.Plugin = true; m.Root = true; m.Provided = true }), missingReported, Warning, false},
		{"a plugin's deeper own code naming lib's class: quiet, another scheme's path (an s3 plugin's hdfs code)",
			with(own, func(m *missingClass) { m.Plugin = true; m.InLib = true; m.JARSeverity = Error }), missingQuiet, "", false},
		{"code a plugin bundles missing a class of its own library: quiet, not the host's doing",
			with(own, func(m *missingClass) { m.Plugin = true; m.Provided = true; m.OwnCode = false; m.JARSeverity = Error }), missingQuiet, "", false},
		{"a plugin's code missing Flink's own API: an error",
			with(own, func(m *missingClass) { m.Plugin = true; m.Provided = true; m.OwnCode = false; m.HostProvides = true }), missingReported, Error, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, sev := judgeMissing(c.m)
			if got != c.want || sev != c.sev {
				t.Fatalf("judgeMissing(%+v) = %v, %q; want %v, %q", c.m, got, sev, c.want, c.sev)
			}
			if r := requiresLibrary(c.m, true); r != c.requires {
				t.Fatalf("requiresLibrary(%+v, super) = %v, want %v", c.m, r, c.requires)
			}
			if requiresLibrary(c.m, false) {
				t.Fatal("requiresLibrary without a supertype")
			}
		})
	}
}

func TestMemberSeverity(t *testing.T) {
	for _, c := range []struct {
		jar           Severity
		hostsFlinkOwn bool
		want          Severity
	}{{Warning, false, Warning}, {Error, false, Error}, {Warning, true, Error}} {
		if got := memberSeverity(c.jar, c.hostsFlinkOwn); got != c.want {
			t.Errorf("memberSeverity(%s, %v) = %s, want %s", c.jar, c.hostsFlinkOwn, got, c.want)
		}
	}
}
