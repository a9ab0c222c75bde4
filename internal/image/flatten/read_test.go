package flatten

import (
	"context"
	"encoding/json"
	"errors"
	"sync/atomic"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// counts is how many layers a reading read and took from the cache.
type counts struct{ read, cached atomic.Int32 }

func (c *counts) progress(u Update) {
	switch {
	case !u.Finished:
	case u.Cached:
		c.cached.Add(1)
	default:
		c.read.Add(1)
	}
}

// testImage is a Flink image of the test distribution, with the selection
// of its settings and its number of layers.
func testImage(t *testing.T) (v1.Image, *Selection, []v1.Hash) {
	t.Helper()
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999"}.Image()
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	c, err := settings.FromEnv(cfg.Config.Env)
	require.NoError(t, err)
	return img, NewSelection(c, cfg.Architecture), cfg.RootFS.DiffIDs
}

// asJSON is the merged view as JSON: every stand-in and every JAR's facts.
func asJSON(t *testing.T, v *View) string {
	t.Helper()
	data, err := json.Marshal(struct {
		FS   any
		JARs any
	}{v.FS, v.JARs})
	require.NoError(t, err)
	return string(data)
}

// TestCacheAnswersKnownLayers: a second reading of an image takes every
// layer's facts from the cache and reads no blob (not even the layer
// list), with the same view as the first; a third reading without the
// cache agrees.
func TestCacheAnswersKnownLayers(t *testing.T) {
	t.Parallel()
	img, sel, ids := testImage(t)
	var first, again counts
	o := Options{Cache: &layercache.Cache{Dir: t.TempDir()}, Progress: first.progress}
	_, v1st, err := Read(context.Background(), img, sel, o)
	require.NoError(t, err)
	assert.EqualValues(t, len(ids), first.read.Load())
	assert.Zero(t, first.cached.Load())

	o.Progress = again.progress
	_, v2nd, err := Read(context.Background(), noLayers{img}, sel, o)
	require.NoError(t, err, "the cache answers every layer: the layers are not listed")
	assert.Zero(t, again.read.Load())
	assert.EqualValues(t, len(ids), again.cached.Load())
	assert.JSONEq(t, asJSON(t, v1st), asJSON(t, v2nd))

	_, plain, err := Read(context.Background(), img, sel, Options{})
	require.NoError(t, err)
	assert.JSONEq(t, asJSON(t, v1st), asJSON(t, plain))
}

// TestCacheIsNeverTrustedAcrossVersions: a record of another format
// version under the key is ignored and the layer read again.
func TestCacheIsNeverTrustedAcrossVersions(t *testing.T) {
	t.Parallel()
	img, sel, ids := testImage(t)
	cache := &layercache.Cache{Dir: t.TempDir()}
	_, want, err := Read(context.Background(), img, sel, Options{Cache: cache})
	require.NoError(t, err)

	for _, d := range ids {
		key := cacheKey(d.String(), sel)
		data, ok := cache.Get(key)
		require.True(t, ok)
		var lf Facts
		require.NoError(t, json.Unmarshal(data, &lf))
		lf.Version = Version + 1
		lf.Nodes = nil // a record that would hide every file
		data, err = json.Marshal(lf)
		require.NoError(t, err)
		require.NoError(t, cache.Put(key, data))
	}
	var n counts
	_, got, err := Read(context.Background(), img, sel, Options{Cache: cache, Progress: n.progress})
	require.NoError(t, err)
	assert.Zero(t, n.cached.Load())
	assert.EqualValues(t, len(ids), n.read.Load())
	assert.JSONEq(t, asJSON(t, want), asJSON(t, got))
}

// noLayers is an image whose layers cannot be listed.
type noLayers struct{ v1.Image }

func (noLayers) Layers() ([]v1.Layer, error) { return nil, errors.New("the layers were listed") }

// TestReadWithoutLayers: an image whose layers cannot be listed fails
// the reading (no cache answers them) with why.
func TestReadWithoutLayers(t *testing.T) {
	t.Parallel()
	img, sel, _ := testImage(t)
	_, _, err := Read(context.Background(), noLayers{img}, sel, Options{})
	require.ErrorContains(t, err, "the layers were listed")
}
