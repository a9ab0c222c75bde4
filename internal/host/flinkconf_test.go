package host

import (
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

func confTree(files map[string]string) fstest.MapFS {
	fsys := fstest.MapFS{}
	for name, data := range files {
		fsys["opt/flink/conf/"+name] = &fstest.MapFile{Data: []byte(data)}
	}
	return fsys
}

func effective(c admission.Config) map[string]string {
	m := map[string]string{}
	for _, e := range c.Entries {
		m[e.Key] = e.Value
	}
	return m
}

// The reader against real Flink is TestConfigAsFlinkLoadsIt (make
// test-real); these are the cases that must hold offline.
func TestReadConfigPerLaunchPath(t *testing.T) {
	t.Parallel()
	env := map[string]string{"SLOTS": "4"}
	getenv := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, c := range []struct {
		name    string
		flink   string
		launch  Launch
		files   map[string]string
		props   string
		args    []string
		want    map[string]string
		sources map[string]string
	}{
		{"1.18 bare: Flink's line reader, not YAML", "1.18.1", LaunchBare,
			map[string]string{"flink-conf.yaml": "a: 1 # c\nb:2\n  c :  x: y  \nd: ${SLOTS}\n- e: f\n"}, "", nil,
			map[string]string{"a": "1", "c": "x: y", "d": "${SLOTS}", "- e": "f"}, map[string]string{"a": "/opt/flink/conf/flink-conf.yaml, line 1"}},
		{"1.18 image: FLINK_PROPERTIES appended, envsubst over the file", "1.18.1", LaunchImage,
			map[string]string{"flink-conf.yaml": "a: 1\nd: ${SLOTS}\n"}, "a: 2\ne: $SLOTS", nil,
			map[string]string{"a": "2", "d": "4", "e": "4"}, map[string]string{"a": "FLINK_PROPERTIES", "d": "/opt/flink/conf/flink-conf.yaml, line 2"}},
		{"2.x bare: nested and flat keys", "2.2.1", LaunchBare,
			map[string]string{"config.yaml": "a:\n  b: 0x10\n  c: [x, 'y: z']\na.d: 1e7\n"}, "", nil,
			map[string]string{"a.b": "16", "a.c": "[x, 'y: z']", "a.d": "1.0E7"}, map[string]string{"a.d": "/opt/flink/conf/config.yaml, line 4"}},
		{"2.x image: FLINK_PROPERTIES through the rewrite's word split", "2.2.0", LaunchImage,
			map[string]string{"config.yaml": "a: 1\n"}, "a: 2\nb:3\nenv.java.opts.taskmanager: -Dx=1 -Dy=2", nil,
			map[string]string{"a": "", "b": "3", "env.java.opts.taskmanager": "", "x": "1", "y": "2"}, map[string]string{"b": "FLINK_PROPERTIES"}},
		{"argv wins", "2.2.0", LaunchBare,
			map[string]string{"config.yaml": "a: 1\n"}, "", []string{"-Da=2", "-D", "b=c=d", "-De", "start-foreground"},
			map[string]string{"a": "2", "b": "c=d", "e": "true"}, map[string]string{"a": "argv (-D)"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Settings{ConfDir: "/opt/flink/conf", Launch: c.launch, FlinkProperties: c.props, Args: c.args, Getenv: getenv}
			got := ReadConfig(confTree(c.files), s, c.flink)
			require.NoError(t, got.Err)
			assert.Equal(t, c.want, effective(got))
			for k, src := range c.sources {
				e, ok := got.Effective(k)
				require.True(t, ok, k)
				assert.Equal(t, src, e.Source, k)
			}
		})
	}
}

func TestReadConfigRefuses(t *testing.T) {
	t.Parallel()
	bomb := "a: &a [x, x, x, x, x, x, x, x, x]\n"
	for i := 'b'; i <= 'z'; i++ {
		bomb += string(i) + ": &" + string(i) + " [*" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + ", *" + string(i-1) + "]\n"
	}
	deep := strings.Repeat("k:\n ", 0)
	for i := range 100 {
		deep += strings.Repeat(" ", i) + "k:\n"
	}
	deep += strings.Repeat(" ", 100) + "v: 1\n"
	for _, c := range []struct {
		name, file string
		want       error
	}{
		{"a YAML bomb past Flink's 50 aliases", bomb, admission.ErrConfigFlink},
		{"a YAML bomb within 50 aliases", "a: &a [x, x]\nb: &b [*a, *a]\n" + doublings(3, 24), admission.ErrConfigLimit},
		{"deep nesting", deep, admission.ErrConfigLimit},
		{"too large", "a: " + strings.Repeat("x", flinkconf.MaxBytes) + "\n", admission.ErrConfigTooLarge},
		{"a duplicate key", "a: 1\na: 2\n", admission.ErrConfigFlink},
		{"a key without a value", "a:\n", admission.ErrConfigFlink},
		{"a syntax error", "a: [\n", admission.ErrConfigFlink},
		{"a plain value continued past a comment at column 0", "a: abc\n# c\n  def\n", admission.ErrConfigFlink},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := ReadConfig(confTree(map[string]string{"config.yaml": c.file}), Settings{ConfDir: "/opt/flink/conf"}, "2.2.1")
			require.Error(t, got.Err)
			if c.want != nil {
				assert.ErrorIs(t, got.Err, c.want)
			}
			assert.Empty(t, got.Entries)
		})
	}
}

// doublings are levels from..to of a list of two aliases to the level below.
func doublings(from, to int) string {
	var b strings.Builder
	for i := from; i <= to; i++ {
		fmt.Fprintf(&b, "l%d: &l%d [*l%d, *l%d]\n", i, i, i-1, i-1)
	}
	return strings.ReplaceAll(strings.ReplaceAll(b.String(), "*l2,", "*b,"), "*l2]", "*b]")
}

func TestTaskManagerJVMOptionsAsTheScriptsMergeThem(t *testing.T) {
	t.Parallel()
	file := "env.java.opts: -Dold=1\nenv.java.default-opts.taskmanager: -Dd=1\nenv.java.opts.taskmanager: \"-Dtm=1\"\n"
	for _, c := range []struct {
		name string
		env  map[string]string
		want []string
	}{
		{"from the file, the deprecated env.java.opts too", nil, []string{"-Dold=1", "-Dd=1", "-Dtm=1"}},
		{"FLINK_ENV_JAVA_OPTS replaces the all options", map[string]string{"FLINK_ENV_JAVA_OPTS": "-De=1", "JVM_ARGS": "-Dj=1"}, []string{"-Dj=1", "-De=1", "-Dd=1", "-Dtm=1"}},
		{"FLINK_ENV_JAVA_OPTS_TM replaces the TaskManager's", map[string]string{"FLINK_ENV_JAVA_OPTS_TM": "-Dt=2"}, []string{"-Dold=1", "-Dt=2"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			s := Settings{ConfDir: "/opt/flink/conf", Role: "taskmanager", Getenv: func(k string) (string, bool) { v, ok := c.env[k]; return v, ok }}
			got := ReadConfig(confTree(map[string]string{"config.yaml": file}), s, "2.2.1")
			var opts []string
			for _, p := range got.JVMOptions {
				opts = append(opts, p.Options)
			}
			assert.Equal(t, c.want, opts)
		})
	}
	s := Settings{ConfDir: "/opt/flink/conf", Role: "jobmanager"}
	assert.Empty(t, ReadConfig(confTree(map[string]string{"config.yaml": file}), s, "2.2.1").JVMOptions, "only a TaskManager's are gathered")
}

// FuzzReadConfig: any bytes as config.yaml or flink-conf.yaml, with any
// FLINK_PROPERTIES, give a configuration or an error, never a panic, and
// stay within the reader's limits.
func FuzzReadConfig(f *testing.F) {
	f.Add([]byte(shippedNested), "a: 1", true)
	f.Add([]byte("a: &a [x, x]\nb: [*a, *a]\nc: {d: *a}\n"), "", true)
	f.Add([]byte("a: 1 # c\nb:2\n- e: f\n"), "x: ${Y}", false)
	f.Add([]byte("a:\n  b:\n    c: [1, {d: e}]\n"), "", true)
	f.Fuzz(func(t *testing.T, data []byte, props string, standard bool) {
		name, version := "config.yaml", "2.2.1"
		if !standard {
			name, version = "flink-conf.yaml", "1.18.1"
		}
		s := Settings{ConfDir: "/opt/flink/conf", Launch: LaunchImage, FlinkProperties: props, Role: "taskmanager"}
		c := ReadConfig(confTree(map[string]string{name: string(data)}), s, version)
		if len(c.Entries) > flinkconf.MaxEntries+len(props)+1 {
			t.Fatalf("%d entries from %d bytes", len(c.Entries), len(data))
		}
		total := 0
		for _, e := range c.Entries {
			total += len(e.Value)
		}
		if total > 64*(len(data)+len(props)+64) {
			t.Fatalf("%d bytes of values from %d bytes", total, len(data)+len(props))
		}
	})
}
