// Package settings turns the environment into the entrypoint's settings. It
// is a pure function of the environment it is given: only main reads the
// process environment, once.
package settings

import (
	"errors"
	"fmt"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"path"
	"strconv"
	"strings"
	"time"
)

// Defaults of the contract.
const (
	DefaultFlinkHome      = "/opt/flink"
	DefaultOriginal       = "/opt/streamfusion/docker-entrypoint.sh"
	DefaultTimeout        = 30 * time.Second
	DefaultTerminationLog = "/dev/termination-log"
)

// ErrUsage marks a setting that cannot be used (exit 64).
var ErrUsage = errors.New("usage")

// Config is every setting, read once in main.
type Config struct {
	FlinkHome  string // FLINK_HOME, default /opt/flink
	LibDir     string // FLINK_LIB_DIR, default $FLINK_HOME/lib
	PluginsDir string // FLINK_PLUGINS_DIR, default $FLINK_HOME/plugins
	JavaHome   string // JAVA_HOME; empty: the java on PATH
	Path       string // PATH, for finding java
	Locale     string // LC_ALL, else LC_COLLATE, else LANG: orders the classpath as sort(1) does

	// Where Flink's scripts take env.java.home from (see host.Settings).
	ConfDir         string   // FLINK_CONF_DIR, default $FLINK_HOME/conf
	FlinkProperties string   // FLINK_PROPERTIES, which the image entrypoint merges into the config
	Environ         []string // the whole environment, for envsubst as the image entrypoint runs it

	Original       string        // STREAMFUSION_ORIGINAL_ENTRYPOINT: Flink's script, absolute
	JSON           bool          // STREAMFUSION_LOG_FORMAT=json (default text)
	Level          string        // STREAMFUSION_LOG_LEVEL: trace, debug, info, warn or error; default info
	LevelWarning   string        // set when STREAMFUSION_LOG_LEVEL was empty or invalid
	Strict         bool          // STREAMFUSION_STRICT: warnings refuse
	Linkage        bool          // STREAMFUSION_LINKAGE=true: the start checks shadowing and linkage in full
	NoLinkage      bool          // STREAMFUSION_LINKAGE=false: not even a baked deep verdict is applied
	Timeout        time.Duration // STREAMFUSION_ADMISSION_TIMEOUT, default 30s
	TerminationLog string        // STREAMFUSION_TERMINATION_LOG, default /dev/termination-log
}

// Lookup returns the first value of key in env, as getenv(3) does.
func Lookup(env []string, key string) (string, bool) {
	for _, kv := range env {
		if k, v, ok := strings.Cut(kv, "="); ok && k == key {
			return v, true
		}
	}
	return "", false
}

func get(env []string, key, def string) string {
	if v, ok := Lookup(env, key); ok && v != "" {
		return v
	}
	return def
}

// Original returns the path of Flink's original entrypoint: it must be
// absolute, so nothing relative to the working directory (or in argv) can
// change what runs.
func Original(env []string) (string, error) {
	p := get(env, "STREAMFUSION_ORIGINAL_ENTRYPOINT", DefaultOriginal)
	if !path.IsAbs(p) {
		return "", fmt.Errorf("%w: STREAMFUSION_ORIGINAL_ENTRYPOINT=%q is not an absolute path; set it to the absolute path of Flink's docker-entrypoint.sh (default %s)", ErrUsage, p, DefaultOriginal)
	}
	return p, nil
}

// FromEnv reads every setting and validates it.
func FromEnv(env []string) (Config, error) {
	c := Config{
		FlinkHome:      get(env, "FLINK_HOME", DefaultFlinkHome),
		JavaHome:       get(env, "JAVA_HOME", ""),
		Path:           get(env, "PATH", ""),
		TerminationLog: get(env, "STREAMFUSION_TERMINATION_LOG", DefaultTerminationLog),
		Timeout:        DefaultTimeout,
		Level:          "info",
	}
	c.LibDir = get(env, "FLINK_LIB_DIR", path.Join(c.FlinkHome, "lib"))
	c.Locale = get(env, "LC_ALL", get(env, "LC_COLLATE", get(env, "LANG", "")))
	c.PluginsDir = get(env, "FLINK_PLUGINS_DIR", path.Join(c.FlinkHome, "plugins"))
	c.ConfDir = get(env, "FLINK_CONF_DIR", path.Join(c.FlinkHome, "conf"))
	c.FlinkProperties = get(env, "FLINK_PROPERTIES", "")
	c.Environ = env
	var errs []error
	var err error
	if c.Original, err = Original(env); err != nil {
		errs = append(errs, err)
	}
	for _, s := range []struct{ key, val string }{{"FLINK_HOME", c.FlinkHome}, {"FLINK_LIB_DIR", c.LibDir}, {"FLINK_PLUGINS_DIR", c.PluginsDir}} {
		if !path.IsAbs(s.val) {
			errs = append(errs, fmt.Errorf("%w: %s=%q is not an absolute path", ErrUsage, s.key, s.val))
		}
	}
	if c.JavaHome != "" && !path.IsAbs(c.JavaHome) {
		errs = append(errs, fmt.Errorf("%w: JAVA_HOME=%q is not an absolute path", ErrUsage, c.JavaHome))
	}
	switch f := get(env, "STREAMFUSION_LOG_FORMAT", "text"); f {
	case "text":
	case "json":
		c.JSON = true
	default:
		errs = append(errs, fmt.Errorf("%w: STREAMFUSION_LOG_FORMAT=%q; use text or json", ErrUsage, f))
	}
	// An empty or unknown level means info, with a warning: a logger
	// without a level would silence everything.
	if lv, set := Lookup(env, "STREAMFUSION_LOG_LEVEL"); set {
		switch l := strings.ToLower(lv); l {
		case "trace", "debug", "info", "warn", "error":
			c.Level = l
		default:
			c.LevelWarning = fmt.Sprintf("STREAMFUSION_LOG_LEVEL=%q is not a level (trace, debug, info, warn, error); using info", lv)
		}
	}
	if s, ok := Lookup(env, "STREAMFUSION_STRICT"); ok && s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: STREAMFUSION_STRICT=%q; use true or false", ErrUsage, s))
		}
		c.Strict = b
	}
	if s, ok := Lookup(env, "STREAMFUSION_LINKAGE"); ok && s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: STREAMFUSION_LINKAGE=%q; use true or false", ErrUsage, s))
		}
		c.Linkage, c.NoLinkage = b, err == nil && !b
	}
	if s, ok := Lookup(env, "STREAMFUSION_ADMISSION_TIMEOUT"); ok && s != "" {
		d, err := parseTimeout(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%w: STREAMFUSION_ADMISSION_TIMEOUT=%q; use a duration such as 30s or 2m, or seconds", ErrUsage, s))
		}
		c.Timeout = d
	}
	return c, errors.Join(errs...)
}

func parseTimeout(s string) (time.Duration, error) {
	if n, err := strconv.ParseUint(s, 10, 32); err == nil && n > 0 {
		return time.Duration(n) * time.Second, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf("not a positive duration")
	}
	return d, nil
}

// HostSettings returns what host.Gather needs of this configuration, on a
// platform (GOOS-style os, uname or OCI architecture), for a process that
// Flink's image entrypoint starts.
func (c Config) HostSettings(goos, arch string) host.Settings {
	return host.Settings{LibDir: c.LibDir, PluginsDir: c.PluginsDir, FlinkHome: c.FlinkHome, JavaHome: c.JavaHome, Path: c.Path,
		OS: goos, Arch: arch, Strict: c.Strict, Locale: c.Locale, Deep: c.Linkage, Baked: !c.Linkage && !c.NoLinkage,
		ConfDir: c.ConfDir, FlinkProperties: c.FlinkProperties, Launch: host.LaunchImage,
		Getenv: func(k string) (string, bool) { return Lookup(c.Environ, k) }}
}
