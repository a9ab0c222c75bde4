package host

import (
	"fmt"
	"io/fs"
	"path"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
)

// Launch says what starts Flink's own scripts, which decides the config
// file they read the JDK from.
type Launch string

const (
	// LaunchImage means the official image's docker-entrypoint.sh runs first (the
	// entrypoint's original). Up to 1.18 it appends FLINK_PROPERTIES to
	// flink-conf.yaml, which stays flat; from 1.19 on it rewrites config.yaml
	// through BashJavaUtils (bin/config-parser-utils.sh), as nested YAML,
	// FLINK_PROPERTIES merged, before the role's script reads it.
	LaunchImage Launch = "image"
	// LaunchBare means Flink's bin/ scripts run directly and read conf/ as it is.
	LaunchBare Launch = "bare"
)

// keyJavaHome is the key Flink's scripts take the JDK from.
const keyJavaHome = "env.java.home"

// bin/config.sh (1.18) and bin/bash-java-utils.sh (2.x) read
// env.java.home with a sed over the file's lines, `^[ ]*KEY[ ]*: ([^#]*)`
// (the dots of the key match any character; ScriptJavaHome), the value
// trimmed of spaces, the last matching line winning even when its value is
// empty. Only the flat key is seen, never a nested one; quotes are kept.

// javaChoice is what Flink's scripts take from the config file.
type javaChoice struct {
	home    string // env.java.home as the scripts see it; "" when they see none
	origin  string // where that value came from, for the finding
	ignored string // an env.java.home the scripts do not see, and why
}

// confFile names the config file Flink's scripts read, by release: 1.18
// and earlier read flink-conf.yaml; 1.19 and 1.20 read config.yaml when it
// exists, else flink-conf.yaml; 2.x read config.yaml only.
func confFile(fsys fs.FS, confDir, flinkVersion string) string {
	standard, legacy := path.Join(confDir, "config.yaml"), path.Join(confDir, "flink-conf.yaml")
	v, ok := admission.ParseFlinkVersion(flinkVersion)
	switch {
	case ok && v.Major >= 2:
		return standard
	case ok && v.Major == 1 && v.Minor <= 18:
		return legacy
	case exists(fsys, standard):
		return standard
	}
	return legacy
}

// chooseJavaHome derives env.java.home as the process that will run sees
// it, for the launch and the config file.
func chooseJavaHome(s Settings, cf *confFileData) javaChoice {
	file := cf.file
	if cf.err != nil {
		// The scripts' sed fails on a missing file and they go on without it.
		return javaChoice{ignored: fmt.Sprintf("%s cannot be read (%v)", file, cf.err)}
	}
	text := string(cf.data)
	rewritten := s.Launch == LaunchImage && path.Base(file) == "config.yaml"
	if rewritten {
		// The image entrypoint rewrites the file through BashJavaUtils as
		// nested YAML before the role's script reads it: the flat key the
		// scripts look for is never in it.
		c := javaChoice{}
		if v, where := standardJavaHome(cf, s.FlinkProperties, s.Getenv); v != "" {
			c.ignored = fmt.Sprintf("%s=%s (%s) is ignored: the image entrypoint rewrites %s as nested YAML, and bin/bash-java-utils.sh reads only the flat key",
				keyJavaHome, v, where, file)
		}
		return c
	}
	appended := s.Launch == LaunchImage && s.FlinkProperties != ""
	if appended {
		// 1.18's image entrypoint appends FLINK_PROPERTIES to flink-conf.yaml
		// (echo, so with a newline), then runs envsubst over the file.
		text += s.FlinkProperties + "\n"
	}
	if s.Launch == LaunchImage && path.Base(file) == "flink-conf.yaml" {
		text = envsubst(text, s.Getenv)
	}
	c := javaChoice{}
	found := false
	base := strings.Count(string(cf.data), "\n") // lines from here on were appended
	for i, line := range strings.Split(text, "\n") {
		v, ok := flinkconf.ScriptJavaHome(line)
		if !ok {
			continue
		}
		found = true
		c.home = strings.Trim(v, " ")
		c.origin = fmt.Sprintf("%s in %s, line %d", keyJavaHome, file, i+1)
		if appended && i >= base {
			c.origin = fmt.Sprintf("%s in FLINK_PROPERTIES, appended to %s by the image entrypoint", keyJavaHome, file)
		}
	}
	if !found && path.Base(file) == "config.yaml" {
		if v, where := standardJavaHome(cf, "", nil); v != "" {
			c.ignored = fmt.Sprintf("%s=%s (%s) is ignored: bin/bash-java-utils.sh reads only the flat key", keyJavaHome, v, where)
		}
	}
	return c
}

// standardJavaHome is env.java.home as Flink's YAML parser reads config.yaml
// (flat or nested keys; nothing when Flink cannot load the file, which the
// config rules report), with FLINK_PROPERTIES applied over it as the 2.x
// image entrypoint passes it to BashJavaUtils (propertyEntries).
func standardJavaHome(cf *confFileData, props string, getenv func(string) (string, bool)) (value, where string) {
	if entries, err := cf.yaml(); err == nil {
		if e, ok := flinkconf.Last(entries, keyJavaHome); ok && e.Value != "" {
			value, where = e.Value, "in "+cf.file
		}
	}
	// FLINK_PROPERTIES as the rewrite receives it (propertyEntries): a
	// value written after "key: " is lost there, and the key set empty.
	for _, e := range propertyEntries(Settings{Launch: LaunchImage, FlinkProperties: props, Getenv: getenv}) {
		if e.Key == keyJavaHome {
			value, where = e.Value, "from FLINK_PROPERTIES"
		}
	}
	return value, where
}

// envRef is compiled on first use: only 1.18's image path substitutes.
var envRef = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))`)
})

// envsubst replaces $VAR and ${VAR} as GNU envsubst does: unset variables
// become empty, anything else stays.
func envsubst(s string, getenv func(string) (string, bool)) string {
	if !strings.Contains(s, "$") {
		return s
	}
	re := envRef()
	return re.ReplaceAllStringFunc(s, func(ref string) string {
		m := re.FindStringSubmatch(ref)
		name := m[1] + m[2]
		if getenv == nil {
			return ""
		}
		v, _ := getenv(name)
		return v
	})
}

// jdkAsFlink finds the JDK the way Flink's scripts pick the JVM: the
// env.java.home they see, else JAVA_HOME; $HOME/bin/java when HOME is a
// directory, else the java on PATH.
func jdkAsFlink(fsys fs.FS, s Settings, flinkVersion string) admission.JDK {
	if s.ConfDir == "" {
		return jdk(fsys, s.JavaHome, s.Path)
	}
	return jdkFromConf(fsys, s, readConfFile(fsys, s.ConfDir, flinkVersion))
}

// jdkFromConf is jdkAsFlink over the release's config file, read.
func jdkFromConf(fsys fs.FS, s Settings, cf *confFileData) admission.JDK {
	file := cf.file
	c := chooseJavaHome(s, cf)
	home, via := c.home, c.origin
	if home == "" {
		home, via = s.JavaHome, "JAVA_HOME"
		if c.origin != "" {
			via = "JAVA_HOME (" + c.origin + " is empty)"
		}
	}
	var j admission.JDK
	switch {
	case home != "" && isDir(fsys, home):
		j = jdk(fsys, home, s.Path)
	case home != "":
		j = jdk(fsys, "", s.Path)
		via = "java on PATH: " + via + " is " + strconv.Quote(home) + ", not a directory"
	default:
		j = jdk(fsys, "", s.Path)
		via = "java on PATH (no " + keyJavaHome + " in " + file + ", no JAVA_HOME)"
	}
	j.Via = via
	if c.ignored != "" {
		j.Via += "; " + c.ignored
	}
	return j
}

func isDir(fsys fs.FS, name string) bool {
	if !path.IsAbs(name) {
		return false // relative to the scripts' working directory: not modelled
	}
	_, info, err := rootfs.Resolve(fsys, rel(name))
	return err == nil && info.IsDir()
}
