package host

import (
	"fmt"
	"io/fs"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
)

// jdkTree has three JDKs (release files and a bin/java each) and a java on
// PATH, plus the config files of a case.
func jdkTree(conf map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for home, v := range map[string]string{"opt/jdk-env": "17.0.1", "opt/jdk-conf": "11.0.2", "opt/jdk-props": "17.0.3", "usr/lib/jvm/path": "11.0.4"} {
		fsys[home+"/release"] = &fstest.MapFile{Data: []byte(`JAVA_VERSION="` + v + `"` + "\n")}
		fsys[home+"/bin/java"] = &fstest.MapFile{Data: []byte("#!/bin/sh\n"), Mode: 0o755}
	}
	fsys["usr/bin/java"] = &fstest.MapFile{Data: []byte("/usr/lib/jvm/path/bin/java"), Mode: fs.ModeSymlink | 0o777}
	for name, data := range conf {
		fsys["opt/flink/conf/"+name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

const shippedNested = "# Flink's own comment\nenv:\n  java:\n    opts:\n      all: -Dx=y\njobmanager:\n  rpc:\n    address: localhost\n"

func TestJDKAsFlinkScriptsDeriveIt(t *testing.T) {
	t.Parallel()
	env := map[string]string{"JDK_FROM_ENV": "/opt/jdk-props"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		name    string
		flink   string
		launch  Launch
		conf    map[string]string
		props   string
		javaEnv string
		want    string // JAVA_VERSION of the JDK chosen
		via     []string
	}{
		{"2.x bare: flat key in config.yaml", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": shippedNested + "env.java.home: /opt/jdk-conf\n"}, "", "/opt/jdk-env",
			"11.0.2", []string{"env.java.home in /opt/flink/conf/config.yaml, line 9"}},
		{"2.x bare: last flat key wins, indented too", "2.2.0", LaunchBare,
			map[string]string{"config.yaml": "env.java.home: /opt/jdk-env\n  env.java.home:   /opt/jdk-conf   # trailing comment\n"}, "", "",
			"11.0.2", []string{"line 2"}},
		{"2.x bare: nested key is not seen", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": "env:\n  java:\n    home: /opt/jdk-conf\n"}, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME", "env.java.home=/opt/jdk-conf (in /opt/flink/conf/config.yaml) is ignored"}},
		{"2.x bare: a stray flink-conf.yaml is not read", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": shippedNested, "flink-conf.yaml": "env.java.home: /opt/jdk-conf\n"}, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME"}},
		{"2.x image: the rewrite nests the flat key", "2.2.1", LaunchImage,
			map[string]string{"config.yaml": shippedNested + "env.java.home: /opt/jdk-conf\n"}, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME", "env.java.home=/opt/jdk-conf (in /opt/flink/conf/config.yaml) is ignored: the image entrypoint rewrites"}},
		{"2.x image: FLINK_PROPERTIES is merged, its value lost to the rewrite's word split", "2.2.0", LaunchImage,
			map[string]string{"config.yaml": shippedNested + "env.java.home: /opt/jdk-conf\n"}, "taskmanager.numberOfTaskSlots: 2\nenv.java.home: /opt/jdk-props\n", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME"}},
		{"2.x image: FLINK_PROPERTIES without a space is merged, then nested", "2.2.0", LaunchImage,
			map[string]string{"config.yaml": shippedNested}, "env.java.home:/opt/jdk-props\n", "/opt/jdk-env",
			"17.0.1", []string{"env.java.home=/opt/jdk-props (from FLINK_PROPERTIES) is ignored"}},
		{"2.x image without JAVA_HOME: java on PATH", "2.2.0", LaunchImage,
			map[string]string{"config.yaml": shippedNested + "env.java.home: /opt/jdk-conf\n"}, "", "",
			"11.0.4", []string{"java on PATH"}},
		{"1.18 image: FLINK_PROPERTIES appended last wins", "1.18.1", LaunchImage,
			map[string]string{"flink-conf.yaml": "env.java.home: /opt/jdk-conf\n"}, "env.java.home: /opt/jdk-props", "/opt/jdk-env",
			"17.0.3", []string{"env.java.home in FLINK_PROPERTIES, appended to /opt/flink/conf/flink-conf.yaml"}},
		{"1.18 image: the file's key without FLINK_PROPERTIES", "1.18.1", LaunchImage,
			map[string]string{"flink-conf.yaml": "jobmanager.rpc.address: x\nenv.java.home: /opt/jdk-conf\n", "config.yaml": "env.java.home: /opt/jdk-props\n"}, "", "/opt/jdk-env",
			"11.0.2", []string{"env.java.home in /opt/flink/conf/flink-conf.yaml, line 2"}},
		{"1.18 image: envsubst over the file", "1.18.1", LaunchImage,
			map[string]string{"flink-conf.yaml": "env.java.home: ${JDK_FROM_ENV}\n"}, "", "/opt/jdk-env",
			"17.0.3", []string{"line 1"}},
		{"1.18 bare: no envsubst, the value is not a directory", "1.18.1", LaunchBare,
			map[string]string{"flink-conf.yaml": "env.java.home: ${JDK_FROM_ENV}\n"}, "", "/opt/jdk-env",
			"11.0.4", []string{"java on PATH", `"${JDK_FROM_ENV}", not a directory`}},
		{"quotes are kept: not a directory", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": "env.java.home: \"/opt/jdk-conf\"\n"}, "", "/opt/jdk-env",
			"11.0.4", []string{"java on PATH"}},
		{"an empty last occurrence falls back to JAVA_HOME", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": "env.java.home: /opt/jdk-conf\nenv.java.home: \n"}, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME (env.java.home in /opt/flink/conf/config.yaml, line 2 is empty)"}},
		{"no space after the colon: not seen", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": "env.java.home:/opt/jdk-conf\n"}, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME"}},
		{"no config file: JAVA_HOME", "2.2.1", LaunchBare, nil, "", "/opt/jdk-env",
			"17.0.1", []string{"JAVA_HOME", "cannot be read"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Settings{ConfDir: "/opt/flink/conf", Launch: c.launch, FlinkProperties: c.props, JavaHome: c.javaEnv,
				Path: "/usr/local/bin:/usr/bin", Getenv: getenv}
			j := jdkAsFlink(jdkTree(c.conf), s, c.flink)
			assert.NoError(t, j.Err)
			assert.Equal(t, c.want, j.Version, "via %s", j.Via)
			for _, v := range c.via {
				assert.Contains(t, j.Via, v)
			}
		})
	}
}

func TestJDKWithoutConfDirIsJavaHome(t *testing.T) {
	t.Parallel()
	j := jdkAsFlink(jdkTree(map[string]string{"config.yaml": "env.java.home: /opt/jdk-conf\n"}), Settings{JavaHome: "/opt/jdk-env"}, "2.2.1")
	assert.Equal(t, "17.0.1", j.Version)
	assert.Empty(t, j.Via)
}

func TestConfFileByRelease(t *testing.T) {
	t.Parallel()
	both := jdkTree(map[string]string{"config.yaml": "", "flink-conf.yaml": ""})
	legacyOnly := jdkTree(map[string]string{"flink-conf.yaml": ""})
	for _, c := range []struct {
		fsys    fstest.MapFS
		version string
		want    string
	}{
		{both, "2.2.1", "config.yaml"}, {legacyOnly, "2.0.0", "config.yaml"},
		{both, "1.18.1", "flink-conf.yaml"}, {both, "1.17.2", "flink-conf.yaml"},
		{both, "1.20.3", "config.yaml"}, {legacyOnly, "1.19.1", "flink-conf.yaml"},
		{both, "", "config.yaml"}, {legacyOnly, "", "flink-conf.yaml"},
	} {
		t.Run(fmt.Sprintf("%q with %d files", c.version, len(c.fsys)), func(t *testing.T) {
			t.Parallel()
			got := confFile(c.fsys, "/opt/flink/conf", c.version)
			assert.True(t, strings.HasSuffix(got, "/"+c.want), "%s: %s", c.version, got)
		})
	}
}
