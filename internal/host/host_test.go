package host

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/rootfs"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

func TestClasspathPutsFlinkDistLast(t *testing.T) {
	t.Parallel()
	got := Classpath([]string{"lib/flink-dist-2.2.1.jar", "lib/b.jar", "lib/A.jar", "lib/sub/flink-dist-extra.jar", "lib/a.jar"}, ByteOrder)
	assert.Equal(t, []string{"lib/A.jar", "lib/a.jar", "lib/b.jar", "lib/flink-dist-2.2.1.jar", "lib/sub/flink-dist-extra.jar"}, got)
}

func TestListLikeFind(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	lib := filepath.Join(dir, "lib")
	for _, p := range []string{"a.jar", "sub/b.jar", "sub/deeper/c.jar", "notes.txt", "d.JAR", ".hidden.jar", "dir.jar/inner.jar"} {
		require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(lib, p)), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(lib, p), []byte("x"), 0o644))
	}
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "elsewhere"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, "elsewhere", "hidden-behind-link.jar"), []byte("x"), 0o644))
	require.NoError(t, os.Symlink("../elsewhere", filepath.Join(lib, "linked-dir")))
	require.NoError(t, os.Symlink("../elsewhere", filepath.Join(lib, "linked-dir.jar")))
	names, unlisted, err := List(os.DirFS(dir), "/lib")
	require.NoError(t, err)
	assert.Empty(t, unlisted)
	// find lists links (even to directories) but does not follow them, and skips directories.
	assert.ElementsMatch(t, []string{"lib/.hidden.jar", "lib/a.jar", "lib/dir.jar/inner.jar", "lib/linked-dir.jar", "lib/sub/b.jar", "lib/sub/deeper/c.jar"}, names)

	_, _, err = List(os.DirFS(dir), "/missing")
	require.Error(t, err)
	_, _, err = List(os.DirFS(dir), "/lib/a.jar")
	require.Error(t, err)
}

func TestJDKFromPath(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"usr/lib/jvm/java-17/release":  {Data: []byte("JAVA_VERSION=\"17.0.15\"\n")},
		"usr/lib/jvm/java-17/bin/java": {Data: []byte("elf"), Mode: 0o755},
		"usr/bin/java":                 {Data: []byte("../lib/jvm/java-17/bin/java"), Mode: os.ModeSymlink},
	}
	j := jdk(fsys, "", "relative/bin:/usr/local/bin:/usr/bin")
	require.NoError(t, j.Err)
	assert.Equal(t, "17.0.15", j.Version)
	assert.Equal(t, "/usr/lib/jvm/java-17/release", j.Source)

	j = jdk(fsys, "", "/bin")
	require.Error(t, j.Err)
	j = jdk(fsys, "/opt/none", "")
	require.Error(t, j.Err)
	assert.Equal(t, "/opt/none/release", j.Source)
}

func TestPlatform(t *testing.T) {
	t.Parallel()
	glibc := fstest.MapFS{"lib64/ld-linux-x86-64.so.2": {Data: []byte("x")}, "lib/ld-linux-aarch64.so.1": {Data: []byte("x")}}
	assert.Equal(t, "glibc", platform(glibc, "linux", "x86_64").Libc)
	p := platform(glibc, "linux", "arm64")
	assert.Equal(t, "aarch64", p.Arch)
	assert.Equal(t, "glibc", p.Libc)
	musl := fstest.MapFS{"lib/ld-musl-x86_64.so.1": {Data: []byte("x")}}
	assert.Equal(t, "musl", platform(musl, "linux", "x86_64").Libc)
	assert.Equal(t, "unknown", platform(fstest.MapFS{}, "linux", "x86_64").Libc)
}

func TestGatherReadsEveryJAROnce(t *testing.T) {
	t.Parallel()
	fsys := testkit.Good("2.2.1").MapFS()
	fsys["opt/flink/usrlib/job.jar"] = &fstest.MapFile{Data: testkit.JAR(testkit.Manifest("Main-Class", "Job"))}
	fsys["opt/flink/plugins/s3/s3.jar"] = &fstest.MapFile{Data: testkit.JAR(testkit.Manifest("A", "b"))}
	f, err := Gather(context.Background(), fsys, Settings{LibDir: "/opt/flink/lib", PluginsDir: "/opt/flink/plugins", JavaHome: "/opt/java/openjdk", Arch: "x86_64"}, &Progress{})
	require.NoError(t, err)
	assert.Len(t, f.Classpath, 4+6+4+2)
	assert.Equal(t, "/opt/flink/lib/flink-dist-2.2.1.jar", f.Classpath[len(f.Classpath)-1].Path)
	assert.Equal(t, "2.2.1", f.Classpath[len(f.Classpath)-1].Properties["project.version"])
	require.Len(t, f.Usrlib, 1)
	require.Len(t, f.Plugins, 1)
	for _, j := range f.Classpath {
		assert.NoError(t, j.Err, j.Path)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Gather(ctx, fsys, Settings{LibDir: "/opt/flink/lib"}, nil)
	require.ErrorIs(t, err, context.Canceled)
}

func TestGatherOrdersByTheImageLocale(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{
		"usr/lib/locale/locale-archive":          {Data: []byte("x")},
		"opt/flink/lib/streamfusion-csv.jar":     {Data: testkit.JAR(testkit.Manifest("A", "b"))},
		"opt/flink/lib/streamfusioncore.jar":     {Data: testkit.JAR(testkit.Manifest("A", "b"))},
		"opt/flink/lib/flink-dist-2.2.1.jar":     {Data: testkit.JAR(testkit.Manifest("A", "b"))},
		"opt/flink/lib/zz/flink-dist-extras.jar": {Data: testkit.JAR(testkit.Manifest("A", "b"))},
	}
	order := func(locale string) []string {
		f, err := Gather(context.Background(), fsys, Settings{LibDir: "/opt/flink/lib", Locale: locale}, nil)
		require.NoError(t, err)
		var names []string
		for _, j := range f.Classpath {
			names = append(names, j.Path[len("/opt/flink/lib/"):])
		}
		return names
	}
	assert.Equal(t, []string{"streamfusioncore.jar", "streamfusion-csv.jar", "flink-dist-2.2.1.jar", "zz/flink-dist-extras.jar"}, order("en_US.UTF-8"))
	assert.Equal(t, []string{"streamfusion-csv.jar", "streamfusioncore.jar", "flink-dist-2.2.1.jar", "zz/flink-dist-extras.jar"}, order("C.UTF-8"))
}

// The entrypoint reads "/" through rootfs.Host: the facts it gathers are
// those os.DirFS("/") gives, on a layout with links, a broken JAR and a
// FIFO in lib.
func TestGatherThroughHostAsThroughDirFS(t *testing.T) {
	t.Parallel()
	dir, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	d := testkit.Good("2.2.1")
	require.NoError(t, d.Write(dir))
	lib := filepath.Join(dir, testkit.LibDir)
	require.NoError(t, os.WriteFile(filepath.Join(lib, "broken.jar"), []byte("<html>"), 0o644))
	require.NoError(t, os.Symlink("flink-dist-2.2.1.jar", filepath.Join(lib, "zz-link.jar")))
	require.NoError(t, syscall.Mkfifo(filepath.Join(lib, "fifo.jar"), 0o644))
	s := Settings{LibDir: dir + "/" + testkit.LibDir, JavaHome: dir + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64"}
	want, err := Gather(context.Background(), os.DirFS("/"), s, nil)
	require.NoError(t, err)
	got, err := Gather(context.Background(), rootfs.Host(), s, nil)
	require.NoError(t, err)
	require.Len(t, got.Classpath, len(want.Classpath))
	for i := range want.Classpath {
		w, g := want.Classpath[i], got.Classpath[i]
		assert.Equal(t, w.Path, g.Path)
		assert.Equal(t, w.Target, g.Target)
		assert.Equal(t, w.Size, g.Size)
		assert.Equal(t, w.Entries, g.Entries)
		assert.Equal(t, w.Manifest, g.Manifest)
		assert.Equal(t, fmt.Sprint(w.Err), fmt.Sprint(g.Err), w.Path)
		assert.Equal(t, w.Nested != nil, g.Nested != nil)
	}
	assert.Equal(t, want.JDK, got.JDK)
	assert.Equal(t, want.Platform, got.Platform)
	require.NotEmpty(t, admission.Decide(want).Findings, "the broken JAR and the FIFO are found")
	assert.Equal(t, admission.Decide(want).Findings, admission.Decide(got).Findings)
}
