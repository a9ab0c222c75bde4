package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// loopback routes every registry request, whatever its host, to a
// registry on loopback: the official base names resolve without a network.
type loopback struct{ host string }

func (l loopback) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.URL.Scheme, r.URL.Host, r.Host = "http", l.host, l.host
	return http.DefaultTransport.RoundTrip(r)
}

func TestBakeFlinkLineChoosesTheOfficialBase(t *testing.T) {
	saved := remoteOptions
	t.Cleanup(func() { remoteOptions = saved })
	srv := httptest.NewServer(registry.New())
	t.Cleanup(srv.Close)
	remoteOptions = []remote.Option{remote.WithTransport(loopback{strings.TrimPrefix(srv.URL, "http://")})}
	ref, err := name.ParseReference("flink:2.2.1-scala_2.12-java17")
	require.NoError(t, err)
	base := flinkBase(t, "amd64")
	require.NoError(t, remote.Write(ref, base, remoteOptions...))

	out := filepath.Join(t.TempDir(), "baked.tar")
	code, stdout, stderr := cli(t, nil, append([]string{"bake", "--flink-line", "2.2", "--output", out, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	assert.Contains(t, stdout, "baked linux/amd64")
	img, err := tarball.ImageFromPath(out, nil)
	require.NoError(t, err)
	baseLayers, err := base.Layers()
	require.NoError(t, err)
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, len(baseLayers)+1, "the base's layers and bake's")
	want, err := baseLayers[0].Digest()
	require.NoError(t, err)
	got, err := layers[0].Digest()
	require.NoError(t, err)
	assert.Equal(t, want, got, "baked on the official base of the line")

	// The 1.18 line's base is another image: not in this registry.
	code, _, stderr = cli(t, nil, append([]string{"bake", "--flink-line", "1.18", "--output", out, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	assert.Equal(t, 1, code)
	assert.Contains(t, stderr, "flink:1.18.1-scala_2.12-java17")
}

func TestBakeLibAndUsrlib(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	dir := t.TempDir()
	stock := filepath.Join(dir, "flink-connector-kafka-5.0.0-2.2.jar")
	require.NoError(t, os.WriteFile(stock, testkit.JAR(testkit.Manifest("Implementation-Title", "flink-connector-kafka", "Implementation-Version", "5.0.0-2.2")), 0o644))
	job := filepath.Join(dir, "my-job.jar")
	require.NoError(t, os.WriteFile(job, testkit.JAR(testkit.Manifest("Main-Class", "com.example.Job")), 0o644))
	img := bakeTarball(t, base, nil, append([]string{"--lib", stock, "--usrlib", job}, payloadFiles(t, nil)...)...)
	fsys, err := imagekit.Files(img)
	require.NoError(t, err)
	assert.Contains(t, fsys, "opt/flink/lib/flink-connector-kafka-5.0.0-2.2.jar")
	assert.Contains(t, fsys, "opt/flink/usrlib/my-job.jar")

	// A job JAR that bundles StreamFusion: layout-usrlib, naming the argument.
	fat := filepath.Join(dir, "fat-job.jar")
	require.NoError(t, os.WriteFile(fat, testkit.JAR(testkit.Manifest("Main-Class", "com.example.Job"),
		testkit.Entry{Name: "tech/streamfusion/core/Engine.class", Data: []byte("x")}), 0o644))
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", filepath.Join(dir, "x.tar"), "--entrypoint", entrypoints["amd64"], "--usrlib", fat}, payloadFiles(t, nil)...)...)
	assert.Equal(t, 78, code)
	assert.Contains(t, stderr, "[layout-usrlib]")
	assert.Contains(t, stderr, "(from --usrlib "+fat+")")
}
