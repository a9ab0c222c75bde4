package maven

import (
	"archive/zip"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A small real artifact, fetched by Maven itself. Maven's own plugins are
// kept in a cache between runs (the first run downloads them); the
// artifact is fetched anew into a temporary local repository every run.
const realCoords = "org.reactivestreams:reactive-streams:1.0.4"

// The plugin by its coordinates: no prefix lookup (and its metadata
// downloads) on every run.
const getGoal = "org.apache.maven.plugins:maven-dependency-plugin:2.8:get"

func mvnGet(t *testing.T) string {
	t.Helper()
	if _, err := exec.LookPath("mvn"); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("mvn is needed in CI: %v", err)
		}
		t.Skipf("mvn not installed: %v", err)
	}
	cacheRoot, err := os.UserCacheDir()
	require.NoError(t, err)
	plugins := filepath.Join(cacheRoot, "streamfusion", "maven-plugins")
	c, err := Parse(realCoords)
	require.NoError(t, err)
	if _, err := os.Stat(filepath.Join(plugins, ".ready")); err != nil {
		get(t, plugins)
		require.NoError(t, os.RemoveAll(filepath.Join(plugins, "org", "reactivestreams")))
		require.NoError(t, os.WriteFile(filepath.Join(plugins, ".ready"), nil, 0o644))
	}
	local := t.TempDir()
	cp := exec.Command("cp", "-R", plugins+"/.", local)
	out, err := cp.CombinedOutput()
	require.NoError(t, err, string(out))
	require.NoFileExists(t, filepath.Join(local, filepath.FromSlash(c.Path())), "the artifact is not in the plugin cache")
	get(t, local)
	return local
}

func get(t *testing.T, local string) {
	t.Helper()
	cmd := exec.Command("mvn", "-B", "-q", getGoal, "-Dartifact="+realCoords, "-Dtransitive=false", "-Dmaven.repo.local="+local)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "mvn dependency:get: %s", out)
}

func TestRealArtifactFetchedByMaven(t *testing.T) {
	mavenRepo := mvnGet(t)
	c, err := Parse(realCoords)
	require.NoError(t, err)

	// 1. Found in a local repository Maven wrote, through settings.xml.
	s, err := ReadSettings(writeSettings(t, "<localRepository>"+mavenRepo+"</localRepository>"), false, os.Getenv, t.TempDir())
	require.NoError(t, err)
	p, err := (&Resolver{Local: s.Local(""), Remotes: s.Remotes()}).Resolve(context.Background(), c)
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(mavenRepo, "org/reactivestreams/reactive-streams/1.0.4/reactive-streams-1.0.4.jar"), p)
	zr, err := zip.OpenReader(p)
	require.NoError(t, err, "a real JAR")
	zr.Close()

	// 2. That repository served over HTTP, with the .sha1 Maven kept from
	// the remote: our download checks against it and lands where Maven
	// would put it, byte for byte.
	srv := httptest.NewServer(http.FileServer(http.Dir(mavenRepo)))
	defer srv.Close()
	local := t.TempDir()
	got, err := (&Resolver{Local: local, Remotes: []Repository{{ID: "loopback", URL: srv.URL}}}).Resolve(context.Background(), c)
	require.NoError(t, err)
	want, err := os.ReadFile(p)
	require.NoError(t, err)
	data, err := os.ReadFile(got)
	require.NoError(t, err)
	assert.Equal(t, want, data)
	mavenSum, err := os.ReadFile(p + ".sha1")
	require.NoError(t, err)
	ourSum, err := os.ReadFile(got + ".sha1")
	require.NoError(t, err)
	assert.Equal(t, string(mavenSum)[:40], string(ourSum), "the same .sha1 as Maven's")

	// 3. Maven, offline, takes what we stored as its own.
	require.NoError(t, os.RemoveAll(filepath.Join(mavenRepo, "org", "reactivestreams")))
	require.NoError(t, os.MkdirAll(filepath.Join(mavenRepo, "org/reactivestreams/reactive-streams/1.0.4"), 0o755))
	for _, f := range []string{got, got + ".sha1"} {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(filepath.Join(mavenRepo, "org/reactivestreams/reactive-streams/1.0.4", filepath.Base(f)), b, 0o644))
	}
	cmd := exec.Command("mvn", "-B", "-q", "-o", getGoal, "-Dartifact="+realCoords, "-Dtransitive=false", "-Dmaven.repo.local="+mavenRepo)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "offline Maven must find the stored artifact: %s", out)
}
