package memfs

import (
	"errors"
	"io"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var mtime = time.Unix(1700000000, 0).UTC()

// tree is an image-like root: explicit and synthesised directories,
// relative and absolute links, a link to a directory, a FIFO.
func tree() FS {
	return FS{
		"etc":                   {Mode: fs.ModeDir | 0o755, ModTime: mtime, Sys: "etc"},
		"etc/os-release":        {Data: []byte("ID=debian\n"), Mode: 0o644, ModTime: mtime},
		"usr/lib/libc.so.6":     {Data: []byte("elf"), Mode: 0o755},
		"usr/lib/jvm/release":   {Data: []byte(`JAVA_VERSION="17"`), Mode: 0o644},
		"usr/bin/java":          {Data: []byte("/usr/lib/jvm/bin/java"), Mode: fs.ModeSymlink | 0o777},
		"usr/lib/jvm/bin/java":  {Data: []byte("#!"), Mode: 0o755},
		"lib":                   {Data: []byte("usr/lib"), Mode: fs.ModeSymlink | 0o777},
		"opt/flink":             {Data: []byte("/opt/flink-2.2.1"), Mode: fs.ModeSymlink | 0o777},
		"opt/flink-2.2.1/lib/a": {Data: []byte("a"), Mode: 0o644},
		"opt/up":                {Data: []byte("../etc/os-release"), Mode: fs.ModeSymlink | 0o777},
		"run/fifo":              {Mode: fs.ModeNamedPipe | 0o644},
		"empty":                 {Mode: fs.ModeDir | 0o700},
	}
}

// TestFSContract: the standard library's checker of fs.FS
// implementations (ReadDir, Stat, ReadFile, Seek, ReadAt, ReadLink
// against what Open returns).
func TestFSContract(t *testing.T) {
	require.NoError(t, fstest.TestFS(tree(), "etc/os-release", "usr/lib/libc.so.6", "usr/lib/jvm/release", "opt/flink-2.2.1/lib/a", "run/fifo", "empty"))
}

func TestResolve(t *testing.T) {
	for _, tc := range []struct {
		name, path string
		stat       fs.FileMode // the type Stat reports; 0: regular
		data       string      // what ReadFile reads, for a regular file
		lstat      fs.FileMode // the type Lstat reports
		err        error
	}{
		{name: "explicit file", path: "etc/os-release", data: "ID=debian\n"},
		{name: "synthesised directory", path: "usr/lib", stat: fs.ModeDir, lstat: fs.ModeDir},
		{name: "root", path: ".", stat: fs.ModeDir, lstat: fs.ModeDir},
		{name: "absolute link, from the root", path: "usr/bin/java", data: "#!", lstat: fs.ModeSymlink},
		{name: "relative link to a directory", path: "lib", stat: fs.ModeDir, lstat: fs.ModeSymlink},
		{name: "through a relative link", path: "lib/libc.so.6", data: "elf"},
		{name: "through an absolute link", path: "opt/flink/lib/a", data: "a"},
		{name: "a link climbing with ..", path: "opt/up", data: "ID=debian\n", lstat: fs.ModeSymlink},
		{name: "FIFO", path: "run/fifo", stat: fs.ModeNamedPipe, lstat: fs.ModeNamedPipe},
		{name: "missing", path: "etc/passwd", err: fs.ErrNotExist},
		{name: "below a file", path: "etc/os-release/x", err: fs.ErrNotExist},
		{name: "invalid name", path: "/etc", err: fs.ErrInvalid},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := tree()
			info, err := m.Stat(tc.path)
			if tc.err != nil {
				require.ErrorIs(t, err, tc.err)
				_, err = m.Lstat(tc.path)
				require.ErrorIs(t, err, tc.err)
				_, err = m.Open(tc.path)
				require.ErrorIs(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.stat, info.Mode().Type())
			linfo, err := m.Lstat(tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.lstat, linfo.Mode().Type())
			if tc.stat == 0 {
				data, err := m.ReadFile(tc.path)
				require.NoError(t, err)
				assert.Equal(t, tc.data, string(data))
			}
		})
	}
}

func TestModesTimesAndSys(t *testing.T) {
	m := tree()
	for _, tc := range []struct {
		path string
		mode fs.FileMode
		time time.Time
		sys  any
	}{
		{"etc", fs.ModeDir | 0o755, mtime, "etc"},
		{"etc/os-release", 0o644, mtime, nil},
		{"usr", fs.ModeDir | 0o555, time.Time{}, nil},
		{"empty", fs.ModeDir | 0o700, time.Time{}, nil},
	} {
		t.Run(tc.path, func(t *testing.T) {
			info, err := m.Stat(tc.path)
			require.NoError(t, err)
			assert.Equal(t, tc.mode, info.Mode())
			assert.Equal(t, tc.time, info.ModTime())
			assert.Equal(t, tc.sys, info.Sys())
		})
	}
}

func TestReadDir(t *testing.T) {
	m := tree()
	for _, tc := range []struct {
		dir  string
		want []string
	}{
		{".", []string{"empty", "etc", "lib", "opt", "run", "usr"}},
		{"usr/lib", []string{"jvm", "libc.so.6"}},
		{"lib", []string{"jvm", "libc.so.6"}}, // through the link
		{"opt", []string{"flink", "flink-2.2.1", "up"}},
		{"empty", nil},
	} {
		t.Run(tc.dir, func(t *testing.T) {
			es, err := m.ReadDir(tc.dir)
			require.NoError(t, err)
			var names []string
			for _, e := range es {
				names = append(names, e.Name())
			}
			assert.Equal(t, tc.want, names)
		})
	}
	_, err := m.ReadDir("etc/os-release")
	require.Error(t, err, "a file is not listed")
	es, err := m.ReadDir("opt")
	require.NoError(t, err)
	assert.Equal(t, fs.ModeSymlink, es[0].Type(), "entries are not followed")
}

func TestReadLink(t *testing.T) {
	m := tree()
	target, err := m.ReadLink("opt/flink")
	require.NoError(t, err)
	assert.Equal(t, "/opt/flink-2.2.1", target)
	target, err = m.ReadLink("lib")
	require.NoError(t, err)
	assert.Equal(t, "usr/lib", target)
	_, err = m.ReadLink("etc/os-release")
	require.ErrorIs(t, err, fs.ErrInvalid, "not a link")
}

// TestLinkLoops: a loop fails after 40 links (a hostile image must not
// exhaust the stack), for every operation that follows links.
func TestLinkLoops(t *testing.T) {
	m := FS{
		"a":    {Data: []byte("b"), Mode: fs.ModeSymlink | 0o777},
		"b":    {Data: []byte("/a"), Mode: fs.ModeSymlink | 0o777},
		"self": {Data: []byte("self/x"), Mode: fs.ModeSymlink | 0o777},
	}
	for _, name := range []string{"a", "a/x", "self"} {
		t.Run(name, func(t *testing.T) {
			_, err := m.Open(name)
			require.ErrorIs(t, err, ErrLinkLoop)
			_, err = m.Stat(name)
			require.ErrorIs(t, err, ErrLinkLoop)
			_, err = m.ReadDir(name)
			require.ErrorIs(t, err, ErrLinkLoop)
		})
	}
	info, err := m.Lstat("a")
	require.NoError(t, err, "the link itself can be described")
	assert.Equal(t, fs.ModeSymlink, info.Mode().Type())
}

func TestReadSeekReadAt(t *testing.T) {
	f, err := tree().Open("etc/os-release")
	require.NoError(t, err)
	defer f.Close()
	rs := f.(io.ReadSeeker)
	_, err = rs.Seek(3, io.SeekStart)
	require.NoError(t, err)
	rest, err := io.ReadAll(rs)
	require.NoError(t, err)
	assert.Equal(t, "debian\n", string(rest))
	b := make([]byte, 4)
	n, err := f.(io.ReaderAt).ReadAt(b, 7)
	assert.Equal(t, 3, n)
	assert.True(t, errors.Is(err, io.EOF), "a short ReadAt says why")
	_, err = rs.Seek(-1, io.SeekStart)
	require.ErrorIs(t, err, fs.ErrInvalid)
}

// TestDataIsShared: ReadFile returns a copy; the map's data stays as given.
func TestDataIsShared(t *testing.T) {
	m := tree()
	data, err := m.ReadFile("etc/os-release")
	require.NoError(t, err)
	data[0] = 'X'
	assert.Equal(t, "ID=debian\n", string(m["etc/os-release"].Data))
}

// Links that lead nowhere, as the kernel has them: ".." leaves directories
// only (ENOTDIR), and a link with an empty target leads nowhere (ENOENT).
// The link itself is there.
func TestLinksToNowhere(t *testing.T) {
	m := tree()
	m["opt/viafile"] = &File{Data: []byte("../etc/os-release/../os-release"), Mode: fs.ModeSymlink | 0o777}
	m["opt/nothing"] = &File{Data: []byte(""), Mode: fs.ModeSymlink | 0o777}
	for _, name := range []string{"opt/viafile", "opt/nothing"} {
		t.Run(name, func(t *testing.T) {
			_, err := m.Stat(name)
			require.ErrorIs(t, err, fs.ErrNotExist)
			_, err = m.Open(name)
			require.ErrorIs(t, err, fs.ErrNotExist)
			info, err := m.Lstat(name)
			require.NoError(t, err)
			assert.Equal(t, fs.ModeSymlink, info.Mode().Type())
		})
	}
}
