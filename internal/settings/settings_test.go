package settings

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestDefaults(t *testing.T) {
	t.Parallel()
	c, err := FromEnv(nil)
	require.NoError(t, err)
	assert.Equal(t, "/opt/flink/lib", c.LibDir)
	assert.Equal(t, "/opt/flink/plugins", c.PluginsDir)
	assert.Equal(t, DefaultOriginal, c.Original)
	assert.Equal(t, 30*time.Second, c.Timeout)
	assert.Equal(t, "info", c.Level)
	assert.Equal(t, "/dev/termination-log", c.TerminationLog)
	assert.False(t, c.JSON)
	assert.False(t, c.Strict)
	assert.False(t, c.Linkage)
	assert.False(t, c.HostSettings("linux", "x86_64").Deep, "the start reads no class files unless asked")
}

func TestSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv([]string{"FLINK_HOME=/srv/flink", "STREAMFUSION_LOG_FORMAT=json", "STREAMFUSION_STRICT=true",
		"STREAMFUSION_ADMISSION_TIMEOUT=5", "STREAMFUSION_LOG_LEVEL=debug", "FLINK_HOME=/ignored", "STREAMFUSION_LINKAGE=true"})
	require.NoError(t, err)
	assert.Equal(t, "/srv/flink/lib", c.LibDir, "the first of repeated variables wins, as getenv does")
	assert.True(t, c.JSON)
	assert.True(t, c.Strict)
	assert.True(t, c.Linkage)
	assert.True(t, c.HostSettings("linux", "x86_64").Deep)
	assert.Equal(t, 5*time.Second, c.Timeout)
	assert.Equal(t, "debug", c.Level)

	c, err = FromEnv([]string{"FLINK_LIB_DIR=/x/lib", "STREAMFUSION_ADMISSION_TIMEOUT=1500ms"})
	require.NoError(t, err)
	assert.Equal(t, "/x/lib", c.LibDir)
	assert.Equal(t, 1500*time.Millisecond, c.Timeout)
}

func TestLogLevelFallsBackToInfo(t *testing.T) {
	t.Parallel()
	for _, lv := range []string{"loud", "disabled"} {
		t.Run(lv, func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv([]string{"STREAMFUSION_LOG_LEVEL=" + lv})
			require.NoError(t, err)
			assert.Equal(t, "info", c.Level)
			assert.Contains(t, c.LevelWarning, lv)
		})
	}
	c, err := FromEnv([]string{"STREAMFUSION_LOG_LEVEL="})
	require.NoError(t, err)
	assert.Equal(t, "info", c.Level, "empty means info, never NoLevel")
	assert.NotEmpty(t, c.LevelWarning, "set but empty is worth a warning")
	c, err = FromEnv(nil)
	require.NoError(t, err)
	assert.Empty(t, c.LevelWarning, "unset is the default, silently")
}

func TestUsageErrors(t *testing.T) {
	t.Parallel()
	for _, kv := range []string{
		"STREAMFUSION_ORIGINAL_ENTRYPOINT=docker-entrypoint.sh",
		"STREAMFUSION_LOG_FORMAT=xml",
		"STREAMFUSION_STRICT=maybe",
		"STREAMFUSION_LINKAGE=yes please",
		"STREAMFUSION_ADMISSION_TIMEOUT=-1s",
		"STREAMFUSION_ADMISSION_TIMEOUT=soon",
		"FLINK_HOME=opt/flink",
		"JAVA_HOME=jdk",
	} {
		t.Run(kv, func(t *testing.T) {
			t.Parallel()
			_, err := FromEnv([]string{kv})
			require.Error(t, err)
			assert.True(t, errors.Is(err, ErrUsage))
		})
	}
}

func TestLocalePrecedence(t *testing.T) {
	t.Parallel()
	for want, env := range map[string][]string{
		"a": {"LANG=c", "LC_COLLATE=b", "LC_ALL=a"},
		"b": {"LANG=c", "LC_COLLATE=b", "LC_ALL="},
		"c": {"LANG=c"},
		"":  nil,
	} {
		t.Run(fmt.Sprintf("%q", env), func(t *testing.T) {
			t.Parallel()
			c, err := FromEnv(env)
			require.NoError(t, err)
			assert.Equal(t, want, c.Locale)
		})
	}
}

func TestFlinkConfigSettings(t *testing.T) {
	t.Parallel()
	c, err := FromEnv([]string{"FLINK_HOME=/srv/flink", "FLINK_PROPERTIES=env.java.home: /opt/jdk\nparallelism.default: 2", "OTHER=x"})
	require.NoError(t, err)
	assert.Equal(t, "/srv/flink/conf", c.ConfDir, "FLINK_CONF_DIR defaults to $FLINK_HOME/conf, as bin/config.sh has it")
	assert.Equal(t, "env.java.home: /opt/jdk\nparallelism.default: 2", c.FlinkProperties)
	v, ok := Lookup(c.Environ, "OTHER")
	assert.True(t, ok, "the whole environment is kept for envsubst")
	assert.Equal(t, "x", v)

	c, err = FromEnv([]string{"FLINK_HOME=/srv/flink", "FLINK_CONF_DIR=/etc/flink"})
	require.NoError(t, err)
	assert.Equal(t, "/etc/flink", c.ConfDir)
	assert.Empty(t, c.FlinkProperties)
}

// STREAMFUSION_LINKAGE is the switch of the deep rules at start: unset,
// a baked deep verdict applies when lib has one; true checks in full;
// false applies none.
func TestLinkageSwitch(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		value       string
		deep, baked bool
	}{{"", false, true}, {"true", true, false}, {"false", false, false}, {"0", false, false}} {
		env := []string{"PATH=/usr/bin"}
		if c.value != "" {
			env = append(env, "STREAMFUSION_LINKAGE="+c.value)
		}
		cfg, err := FromEnv(env)
		if err != nil {
			t.Fatal(err)
		}
		s := cfg.HostSettings("linux", "x86_64")
		if s.Deep != c.deep || s.Baked != c.baked {
			t.Errorf("STREAMFUSION_LINKAGE=%q: Deep %v, Baked %v; want %v, %v", c.value, s.Deep, s.Baked, c.deep, c.baked)
		}
	}
}
