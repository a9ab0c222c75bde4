//go:build realjars

package realflink

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
)

// realJava is the JDK on this machine, which the recording java stand-ins
// hand every call to, except the JobManager's own start.
func realJava(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("java")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal("no java on PATH: the JDK test runs Flink's scripts, which start BashJavaUtils")
		}
		t.Skip("no java on PATH")
	}
	p, err = filepath.EvalSymlinks(p)
	require.NoError(t, err)
	return p
}

// flinkCopy is a writable FLINK_HOME made of a real distribution: bin/ and
// conf/ copied (the image path rewrites conf), lib/ a directory of links to
// the real JARs (Flink's `find lib -name ...` does not follow a linked lib).
func flinkCopy(t *testing.T, version, dir string) string {
	t.Helper()
	src := flinkHome(t, version)
	home := filepath.Join(dir, "flink")
	for _, sub := range []string{"bin", "conf"} {
		require.NoError(t, filepath.WalkDir(filepath.Join(src, sub), func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			r, _ := filepath.Rel(src, p)
			if d.IsDir() {
				return os.MkdirAll(filepath.Join(home, r), 0o755)
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			return os.WriteFile(filepath.Join(home, r), data, info.Mode().Perm())
		}))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(home, "lib"), 0o755))
	require.NoError(t, os.MkdirAll(filepath.Join(home, "log"), 0o755))
	for name, p := range realLib(t, version) {
		require.NoError(t, os.Symlink(p, filepath.Join(home, "lib", name)))
	}
	return home
}

// fakeJDK is a JAVA_HOME whose bin/java records its name, then hands the
// call to the real JDK; the JobManager's own start (the cluster entrypoint
// class) is recorded and stops there. Its release file names a version of
// its own so the model's choice can be told apart.
func fakeJDK(t *testing.T, dir, name, version, javaBin, record string) string {
	t.Helper()
	home := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Join(home, "bin"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, "release"), []byte(`JAVA_VERSION="`+version+`"`+"\n"), 0o644))
	script := fmt.Sprintf(`#!/bin/sh
case "$*" in
*ClusterEntrypoint*) echo "%[1]s jobmanager" >> %[2]q; exit 0 ;;
*BashJavaUtils*) echo "%[1]s bash-java-utils" >> %[2]q ;;
*) echo "%[1]s other" >> %[2]q ;;
esac
exec %[3]q "$@"
`, name, record, javaBin)
	require.NoError(t, os.WriteFile(filepath.Join(home, "bin", "java"), []byte(script), 0o755))
	return home
}

// TestJDKAsFlinkScriptsChooseIt runs the real scripts of each release on
// each launch path and checks that the JDK the JobManager's JVM is started
// from is the one host.Gather derives. The image entrypoints are our own
// stand-ins doing what flink-docker's do to the config (1.18: append
// FLINK_PROPERTIES to flink-conf.yaml, envsubst; 2.x: bin/config-parser-utils.sh
// with the entrypoint's options, then FLINK_PROPERTIES, as -D); everything
// after is Flink's own bin/jobmanager.sh start-foreground.
func TestJDKAsFlinkScriptsChooseIt(t *testing.T) {
	javaBin := realJava(t)
	for _, c := range []struct {
		name    string
		version string
		launch  host.Launch
		conf    string // appended to the shipped config file; "nested:" puts env.java.home into its env.java map
		props   string // FLINK_PROPERTIES
		noEnv   bool   // no JAVA_HOME
		want    string // the fake JDK the JobManager runs on
	}{
		{"2.2.0 bare, flat env.java.home", "2.2.0", host.LaunchBare, "env.java.home: {jdk-conf}\n", "", false, "jdk-conf"},
		{"2.2.0 bare, nested env.java.home", "2.2.0", host.LaunchBare, "nested:{jdk-conf}", "", false, "jdk-env"},
		{"2.2.1 image, flat env.java.home and FLINK_PROPERTIES", "2.2.1", host.LaunchImage, "env.java.home: {jdk-conf}\n", "env.java.home: {jdk-props}\ntaskmanager.numberOfTaskSlots: 2", false, "jdk-env"},
		{"2.2.1 image, no JAVA_HOME", "2.2.1", host.LaunchImage, "env.java.home: {jdk-conf}\n", "", true, "jdk-path"},
		{"1.18.1 bare, env.java.home, FLINK_PROPERTIES unused", "1.18.1", host.LaunchBare, "env.java.home: {jdk-conf}\n", "env.java.home: {jdk-props}", false, "jdk-conf"},
		{"1.18.1 image, FLINK_PROPERTIES appended", "1.18.1", host.LaunchImage, "env.java.home: {jdk-conf}\n", "env.java.home: {jdk-props}", false, "jdk-props"},
		{"1.18.1 image, envsubst", "1.18.1", host.LaunchImage, "env.java.home: ${OTHER_JDK}\n", "", false, "jdk-props"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			record := filepath.Join(dir, "java-calls")
			jdks := map[string]string{}
			for name, v := range map[string]string{"jdk-env": "17.0.101", "jdk-conf": "17.0.102", "jdk-props": "17.0.103", "jdk-path": "17.0.104"} {
				jdks[name] = fakeJDK(t, dir, name, v, javaBin, record)
			}
			pathBin := filepath.Join(dir, "path-bin")
			require.NoError(t, os.MkdirAll(pathBin, 0o755))
			require.NoError(t, os.Symlink(filepath.Join(jdks["jdk-path"], "bin", "java"), filepath.Join(pathBin, "java")))
			fill := func(s string) string {
				for name, home := range jdks {
					s = strings.ReplaceAll(s, "{"+name+"}", home)
				}
				return s
			}
			home := flinkCopy(t, c.version, dir)
			confName := "config.yaml"
			if strings.HasPrefix(c.version, "1.") {
				confName = "flink-conf.yaml"
			}
			confPath := filepath.Join(home, "conf", confName)
			shipped, err := os.ReadFile(confPath)
			require.NoError(t, err)
			conf := string(shipped) + fill(c.conf)
			if v, ok := strings.CutPrefix(c.conf, "nested:"); ok {
				require.Contains(t, string(shipped), "\nenv:\n  java:\n")
				conf = strings.Replace(string(shipped), "\nenv:\n  java:\n", "\nenv:\n  java:\n    home: "+fill(v)+"\n", 1)
			}
			require.NoError(t, os.WriteFile(confPath, []byte(conf), 0o644))
			props := fill(c.props)

			env := []string{"PATH=" + pathBin + ":/usr/bin:/bin", "HOSTNAME=localhost", "FLINK_HOME=" + home, "OTHER_JDK=" + jdks["jdk-props"]}
			if !c.noEnv {
				env = append(env, "JAVA_HOME="+jdks["jdk-env"])
			}
			getenv := func(k string) (string, bool) {
				for _, kv := range env {
					if key, v, ok := strings.Cut(kv, "="); ok && key == k {
						return v, true
					}
				}
				return "", false
			}

			// Ours first: the config is read as the image would have it before
			// its entrypoint runs.
			s := host.Settings{LibDir: home + "/lib", ConfDir: home + "/conf", Launch: c.launch, FlinkProperties: props,
				Path: pathBin + ":/usr/bin:/bin", Getenv: getenv, OS: "linux", Arch: "x86_64"}
			s.JavaHome, _ = getenv("JAVA_HOME")
			facts, err := host.Gather(context.Background(), os.DirFS("/"), s, nil)
			require.NoError(t, err)
			require.NoError(t, facts.JDK.Err)
			t.Logf("ours: %s, via %s", facts.JDK.Source, facts.JDK.Via)

			run := func(name string, args ...string) {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
				defer cancel()
				cmd := exec.CommandContext(ctx, name, args...)
				cmd.Env, cmd.Dir = env, dir
				out, err := cmd.CombinedOutput()
				require.NoError(t, err, "%s %v:\n%s", name, args, out)
			}
			if c.launch == host.LaunchImage {
				if confName == "flink-conf.yaml" {
					f, err := os.OpenFile(confPath, os.O_APPEND|os.O_WRONLY, 0)
					require.NoError(t, err)
					_, err = f.WriteString(props + "\n")
					require.NoError(t, err)
					require.NoError(t, f.Close())
					run("bash", "-c", `envsubst < "$1" > "$1.tmp" && mv "$1.tmp" "$1"`, "bash", confPath)
				} else {
					bin := filepath.Join(home, "bin")
					run(filepath.Join(bin, "config-parser-utils.sh"), filepath.Join(home, "conf"), bin, filepath.Join(home, "lib"),
						"-Djobmanager.rpc.address=localhost", "-Dblob.server.port=6124", "-Dquery.server.port=6125")
					var d []string
					for _, line := range strings.Split(props, "\n") {
						if k, v, ok := strings.Cut(strings.TrimSpace(line), ":"); ok {
							d = append(d, "-D"+k+"="+strings.TrimSpace(v))
						}
					}
					if len(d) > 0 {
						run(filepath.Join(bin, "config-parser-utils.sh"), append([]string{filepath.Join(home, "conf"), bin, filepath.Join(home, "lib")}, d...)...)
					}
				}
			}
			run(filepath.Join(home, "bin", "jobmanager.sh"), "start-foreground")

			calls, err := os.ReadFile(record)
			require.NoError(t, err)
			t.Logf("java calls by Flink's scripts:\n%s", calls)
			var started []string
			for _, line := range strings.Split(strings.TrimSpace(string(calls)), "\n") {
				if name, ok := strings.CutSuffix(line, " jobmanager"); ok {
					started = append(started, name)
				}
			}
			require.Equal(t, []string{c.want}, started, "the JDK Flink's scripts start the JobManager on")
			assert.Equal(t, filepath.Join(jdks[c.want], "release"), facts.JDK.Source, "ours derives the same JDK")
		})
	}
}
