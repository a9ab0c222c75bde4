package image

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// recorder keeps the layers read (not cached) and those from the cache.
type recorder struct {
	mu           sync.Mutex
	read, cached []int
}

func (r *recorder) progress(u Update) {
	if !u.Finished {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if u.Cached {
		r.cached = append(r.cached, u.Layer)
	} else {
		r.read = append(r.read, u.Layer)
	}
}

// TestCacheReadsOnlyNewLayers: a bake reads the base; verifying the baked
// image then reads only the new layer; a second bake with other payloads
// and its verification read no base layer either, and decide the same as
// without a cache.
func TestCacheReadsOnlyNewLayers(t *testing.T) {
	t.Parallel()
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	base, err := imagekit.Base{Dist: d, User: "9999", Extra: flinkDirs}.Image()
	require.NoError(t, err)
	baseLayers, err := base.Layers()
	require.NoError(t, err)
	n := len(baseLayers)
	cache := &layercache.Cache{Dir: t.TempDir()}

	r := &recorder{}
	opts := VerifyOptions{Cache: cache, Progress: r.progress, TempDir: t.TempDir()}
	baked, _, err := Bake(context.Background(), base, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2"), Read: opts})
	require.NoError(t, err)
	assert.Len(t, r.read, n, "the first bake reads every base layer")

	r.read, r.cached = nil, nil
	res, err := opts.Verify(context.Background(), baked)
	require.NoError(t, err)
	assert.Equal(t, []int{n + 1}, r.read, "only the new layer is read")
	assert.Len(t, r.cached, n)
	uncached, err := VerifyOptions{}.Verify(context.Background(), baked)
	require.NoError(t, err)
	assert.JSONEq(t, asJSON(t, uncached.Facts), asJSON(t, res.Facts), "the cache changes nothing of the verdict")
	assert.True(t, res.Decision.Admitted())

	// A re-bake with payloads of another release.
	var other []File
	for _, p := range testkit.StreamFusion("2.2", "0.2.0") {
		other = append(other, File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	r.read, r.cached = nil, nil
	rebaked, _, err := Bake(context.Background(), baked, BakeOptions{Entrypoint: entrypoint, Payloads: other, Read: opts})
	require.NoError(t, err)
	assert.Empty(t, r.read, "the re-bake reads no layer: all are known")
	r.read, r.cached = nil, nil
	_, err = opts.Verify(context.Background(), rebaked)
	require.NoError(t, err)
	assert.Equal(t, []int{n + 2}, r.read)
}
