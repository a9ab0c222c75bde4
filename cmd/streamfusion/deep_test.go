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

// A verify whose deep result is cached prints what the cold deep verify
// prints, as text and as JSON, byte for byte, with the same exit status;
// so does the verify of an image bake wrote (bake stores its deep result).
func TestVerifyDeepCached(t *testing.T) {
	base := writeTarball(t, flinkBase(t, "amd64"))
	shadow := filepath.Join(t.TempDir(), "acme-utils-1.0.jar")
	require.NoError(t, os.WriteFile(shadow, testkit.JAR(testkit.Manifest("Implementation-Title", "acme-utils"),
		testkit.Entry{Name: "org/apache/flink/runtime/entrypoint/ClusterEntrypoint.class", Data: []byte("\xca\xfe\xba\xbe not flink-dist's")}), 0o644))
	refused := filepath.Join(t.TempDir(), "refused.tar")
	code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--output", refused, "--entrypoint", entrypoints["amd64"], "--lib", shadow, "--deep=false"}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)
	admitted := filepath.Join(t.TempDir(), "admitted.tar")
	code, _, stderr = cli(t, nil, append([]string{"bake", "--base", base, "--output", admitted, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
	require.Equal(t, 0, code, stderr)

	noCache := map[string]string{"STREAMFUSION_NO_CACHE": "1"}
	for _, c := range []struct {
		img   string
		code  int
		first bool // verify once to fill the cache (bake filled it for the baked one)
	}{{refused, 78, true}, {admitted, 0, false}} {
		for _, args := range [][]string{{"verify"}, {"verify", "--json"}} {
			args = append(args, c.img)
			wantCode, want, stderr := cli(t, noCache, args...)
			require.Equal(t, c.code, wantCode, stderr)
			assert.NotContains(t, stderr, "deep check:", "no cache, nothing said of it")
			if c.first {
				cli(t, nil, args...)
			}
			code, got, stderr := cli(t, nil, args...)
			assert.Contains(t, stderr, "deep check: the cached result of these layers applies", "%v", args)
			assert.Equal(t, wantCode, code)
			assert.Equal(t, want, got, "%v: the cached deep result prints what the cold verify prints", args)
		}
	}
}
