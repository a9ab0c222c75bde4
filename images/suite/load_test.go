//go:build imagesuite

package suite

import (
	"context"
	"os"
	osexec "os/exec"
	"path/filepath"
	"testing"

	dockerimage "github.com/docker/docker/api/types/image"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// `streamfusion bake --load` loads the result into the engine at
// DOCKER_HOST through its API (podman's in CI), as `docker build --load`
// does, and the loaded image starts Flink; a job JAR given with --usrlib
// is in usrlib.
func TestBakeLoadIntoTheEngine(t *testing.T) {
	h := hosts[1]
	base, err := imagekit.Base{Dist: testkit.Dist{Flink: h.flink}, User: h.user, Busybox: busybox, Extra: doubles}.Image()
	require.NoError(t, err)
	dir := t.TempDir()
	baseTar := filepath.Join(dir, "base.tar")
	require.NoError(t, tarball.WriteToFile(baseTar, name.MustParseReference("localhost/flink:base").(name.Tag), base))
	job := filepath.Join(dir, "my-job.jar")
	require.NoError(t, os.WriteFile(job, testkit.JAR(testkit.Manifest("Main-Class", "com.example.Job")), 0o644))
	const tag = "localhost/streamfusion-suite:cli-loaded"
	args := []string{"bake", "--base", baseTar, "--load", "--name", tag, "--usrlib", job}
	for _, p := range testkit.StreamFusion(h.line, "0.1.0") {
		f := filepath.Join(dir, p.Name)
		require.NoError(t, os.WriteFile(f, p.Payload.Bytes(), 0o644))
		args = append(args, "--payload", f)
	}
	t.Cleanup(func() { _, _ = engine.ImageRemove(context.Background(), tag, dockerimage.RemoveOptions{Force: true}) })
	cmd := osexec.Command(filepath.Join(bindir, "streamfusion"), args...)
	cmd.Env = append(os.Environ(), "DOCKER_HOST="+engine.DaemonHost())
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, string(out))
	assert.Contains(t, string(out), tag+" (loaded into the engine at "+engine.DaemonHost())

	o := run{image: tag, cmd: []string{"jobmanager"}}.start(t)
	require.Equal(t, 0, o.code, o.logs)
	assert.Contains(t, o.logs, "flink-double: started role=jobmanager pid=1 uid=9999")
	o = run{image: tag, cmd: []string{"ls", "/opt/flink/usrlib"}}.start(t)
	require.Equal(t, 0, o.code, o.logs)
	assert.Contains(t, o.logs, "my-job.jar")
}
