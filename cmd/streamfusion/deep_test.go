package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// verify and bake run the deep check unless --deep=false: a stock JAR
// whose class differs from flink-dist's hides it (classpath-shadowed, an
// error), which only the deep check sees.
func TestDeepByDefault(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	shadow := filepath.Join(t.TempDir(), "acme-utils-1.0.jar")
	require.NoError(t, os.WriteFile(shadow, testkit.JAR(testkit.Manifest("Implementation-Title", "acme-utils"),
		testkit.Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: []byte("\xca\xfe\xba\xbe not flink-dist's")}), 0o644))
	bake := func(extra ...string) (int, string, string) {
		out := filepath.Join(t.TempDir(), "baked.tar")
		args := append([]string{"bake", "--base", base, "--output", out, "--entrypoint", entrypoints["amd64"], "--lib", shadow}, payloadFiles(t, nil)...)
		code, stdout, stderr := cli(t, nil, append(args, extra...)...)
		return code, out, stdout + stderr
	}
	code, _, out := bake()
	assert.Equal(t, 78, code, out)
	assert.Contains(t, out, "[classpath-shadowed] /opt/flink/lib/acme-utils-1.0.jar")

	code, baked, out := bake("--deep=false")
	require.Equal(t, 0, code, out)

	code, stdout, stderr := cli(t, nil, "verify", baked)
	assert.Equal(t, 78, code, stderr)
	assert.Contains(t, stdout, "classpath-shadowed")
	code, stdout, stderr = cli(t, nil, "verify", "--deep=false", baked)
	assert.Equal(t, 0, code, stderr)
	assert.NotContains(t, stdout, "classpath-shadowed")
}
