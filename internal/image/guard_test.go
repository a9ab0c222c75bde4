package image

import (
	"io/fs"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/streamfusion/image-entrypoint/internal/memfs"
)

// What containers of an image start, and whether that runs the StreamFusion
// entrypoint: directly, through links or PATH, or through what execs its
// arguments (tini, dumb-init, a shell's -c command).
func TestReaches(t *testing.T) {
	t.Parallel()
	exe := func(data string) *memfs.File { return &memfs.File{Data: []byte(data), Mode: 0o755} }
	link := func(to string) *memfs.File { return &memfs.File{Data: []byte(to), Mode: fs.ModeSymlink | 0o777} }
	fsys := memfs.FS{
		"docker-entrypoint.sh":                  exe("entrypoint"),
		"usr/local/bin/docker-entrypoint.sh":    link("/docker-entrypoint.sh"),
		"opt/streamfusion/docker-entrypoint.sh": exe("flink's script"),
		"usr/bin/tini":                          exe("tini"),
		"usr/bin/dumb-init":                     exe("dumb-init"),
		"bin/sh":                                link("dash"),
		"bin/dash":                              exe("dash"),
		"bin/bash":                              exe("bash"),
		"opt/flink/bin/flink-console.sh":        exe("flink"),
		"opt/flink/docker-entrypoint.sh":        link("../../docker-entrypoint.sh"),
	}
	env := []string{"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}
	for _, tc := range []struct {
		name string
		argv []string
		want bool
	}{
		{"the official form", []string{"/docker-entrypoint.sh", "help"}, true},
		{"a bare name on PATH, a link to it", []string{"docker-entrypoint.sh", "jobmanager"}, true},
		{"relative to the working directory, through a link", []string{"./docker-entrypoint.sh"}, true},
		{"tini", []string{"/usr/bin/tini", "--", "/docker-entrypoint.sh", "jobmanager"}, true},
		{"tini with options", []string{"tini", "-g", "-p", "SIGTERM", "--", "/docker-entrypoint.sh"}, true},
		{"dumb-init", []string{"/usr/bin/dumb-init", "-r", "15:2", "/docker-entrypoint.sh"}, true},
		{"a shell's exec", []string{"/bin/sh", "-c", `exec /docker-entrypoint.sh "$@"`, "--", "jobmanager"}, true},
		{"bash -c", []string{"bash", "-c", "/docker-entrypoint.sh taskmanager"}, true},
		{"tini, then a shell", []string{"tini", "--", "sh", "-c", "exec docker-entrypoint.sh"}, true},
		{"Flink's own script, past the guard", []string{"/opt/streamfusion/docker-entrypoint.sh"}, false},
		{"Flink's scripts directly", []string{"/opt/flink/bin/flink-console.sh", "jobmanager"}, false},
		{"a shell doing more than one thing", []string{"sh", "-c", "/docker-entrypoint.sh; sleep 1"}, false},
		{"a shell running a script file", []string{"sh", "/docker-entrypoint.sh"}, false},
		{"tini with nothing to run", []string{"tini", "--"}, false},
		{"a missing program", []string{"/usr/bin/nope", "/docker-entrypoint.sh"}, false},
		{"nothing", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, reaches(fsys, env, "/opt/flink", tc.argv))
		})
	}
}
