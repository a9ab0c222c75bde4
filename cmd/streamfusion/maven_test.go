package main

import (
	"crypto/sha1" //nolint:gosec // the checksum Maven repositories publish
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/maven"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// mavenRepo serves the usual payload set on loopback by coordinates, as a
// release repository lays it out; corrupt damages one artifact's checksum.
func mavenRepo(t *testing.T, corrupt string) (url string, coords []string) {
	t.Helper()
	files := map[string][]byte{}
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		classifier := ""
		if p.Payload.Kind == "core" {
			classifier = "runtime"
		}
		c := maven.Coordinates{Group: "tech.streamfusion", Artifact: p.Payload.Module, Version: "0.1.0", Classifier: classifier}
		data := p.Payload.Bytes()
		sum := sha1.Sum(data) //nolint:gosec // the checksum Maven repositories publish
		files[c.Path()] = data
		files[c.Path()+".sha1"] = []byte(hex.EncodeToString(sum[:]))
		if c.Artifact == corrupt {
			files[c.Path()+".sha1"] = []byte(strings.Repeat("0", 40))
		}
		coords = append(coords, c.String())
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[strings.TrimPrefix(r.URL.Path, "/releases/")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/releases", coords
}

func TestInstallByCoordinates(t *testing.T) {
	home, env := flinkHome(t, testkit.Dist{Flink: "2.2.1"})
	env["HOME"] = t.TempDir()
	url, coords := mavenRepo(t, "")
	args := append([]string{"install", "--flink-home", home, "--maven-repo", url}, coords...)
	code, out, stderr := cli(t, env, args...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "add      streamfusion-core.jar            streamfusion-core 0.1.0 (line 2.2) from tech.streamfusion:streamfusion-core:0.1.0:runtime")
	stored := filepath.Join(env["HOME"], ".m2/repository/tech/streamfusion/streamfusion-core/0.1.0/streamfusion-core-0.1.0-runtime.jar")
	assert.FileExists(t, stored, "kept in the local repository for Maven")
	assert.FileExists(t, filepath.Join(home, "lib", "00-streamfusion-loader.jar"))

	// A settings.xml mirror serves as well, and the local repository it names is used.
	settings := filepath.Join(t.TempDir(), "settings.xml")
	require.NoError(t, os.WriteFile(settings, []byte(`<settings><localRepository>`+filepath.Join(env["HOME"], "other-m2")+`</localRepository>
<mirrors><mirror><id>corp</id><mirrorOf>*</mirrorOf><url>`+url+`</url></mirror></mirrors></settings>`), 0o644))
	code, out, stderr = cli(t, env, append([]string{"install", "--dry-run", "--flink-home", home, "--maven-settings", settings}, coords...)...)
	require.Equal(t, 0, code, "%s\n%s", out, stderr)
	assert.Contains(t, out, "replace  streamfusion-core.jar")
	assert.FileExists(t, filepath.Join(env["HOME"], "other-m2/tech/streamfusion/streamfusion-kafka/0.1.0/streamfusion-kafka-0.1.0.jar"))
}

func TestInstallByCoordinatesRefusesABadChecksum(t *testing.T) {
	home, env := flinkHome(t, testkit.Dist{Flink: "2.2.1"})
	env["HOME"] = t.TempDir()
	before := libState(t, home)
	url, coords := mavenRepo(t, "streamfusion-kafka")
	code, _, stderr := cli(t, env, append([]string{"install", "--flink-home", home, "--maven-repo", url}, coords...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "tech.streamfusion:streamfusion-kafka:0.1.0 from "+url)
	assert.Contains(t, stderr, "checksum mismatch")
	assert.Equal(t, before, libState(t, home), "lib unchanged")

	// No repository at all: said plainly, nothing guessed.
	code, _, stderr = cli(t, env, "install", "--flink-home", home, "tech.streamfusion:streamfusion-avro:0.1.0")
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "no remote repository is configured")
	code, _, stderr = cli(t, env, "install", "--flink-home", home, "--maven-repo", "repo.example/maven", "tech.streamfusion:streamfusion-avro:0.1.0")
	assert.Equal(t, 64, code)
	assert.Contains(t, stderr, "want an http(s) URL")
	assert.Equal(t, before, libState(t, home), "lib unchanged")
}
