package image

import (
	"context"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// A bake with the deep check writes lib's deep verdict into its layer,
// and a start of the baked image (its files, as the entrypoint reads
// them) applies it; a bake without it writes none, and removes an
// earlier bake's.
func TestBakeWritesTheDeepVerdict(t *testing.T) {
	t.Parallel()
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	base, err := imagekit.Base{Dist: d, User: "9999", Extra: flinkDirs}.Image()
	require.NoError(t, err)
	baked, res, err := Bake(context.Background(), base, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"),
		DeepVerdict: true, Read: VerifyOptions{TempDir: t.TempDir()}})
	require.NoError(t, err)
	assert.Positive(t, res.Verdict)

	start := func(t *testing.T, img v1.Image) *admission.Facts {
		t.Helper()
		fsys, err := imagekit.Files(img)
		require.NoError(t, err)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		c, err := settings.FromEnv(cfg.Config.Env)
		require.NoError(t, err)
		f, err := host.Gather(context.Background(), fsys, c.HostSettings(cfg.OS, cfg.Architecture), nil)
		require.NoError(t, err)
		return f
	}
	f := start(t, baked)
	assert.Contains(t, f.Linkage, "the baked deep verdict applies")
	require.NotNil(t, f.Deep)
	assert.NotNil(t, f.Deep.Baked)

	// Baked again without it: the earlier verdict goes.
	again, res, err := Bake(context.Background(), baked, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"),
		Read: VerifyOptions{TempDir: t.TempDir()}})
	require.NoError(t, err)
	assert.Zero(t, res.Verdict)
	fsys, err := imagekit.Files(again)
	require.NoError(t, err)
	_, err = fsys.Stat(testkit.FlinkHome + "/lib/" + host.VerdictFile)
	assert.Error(t, err, "no stale verdict left in lib")
}
