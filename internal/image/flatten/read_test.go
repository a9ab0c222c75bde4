package flatten

import (
	"context"
	"encoding/json"
	"errors"
	"sync"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/settings"
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
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999"}.Image()
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	sel := NewSelection(mustConfig(t, cfg.Config.Env), cfg.Architecture)
	r := &recorder{}
	o := Options{Cache: &layercache.Cache{Dir: t.TempDir()}, Progress: r.progress}
	_, first, err := Read(context.Background(), img, sel, o)
	require.NoError(t, err)
	n := len(cfg.RootFS.DiffIDs)
	assert.Len(t, r.read, n)
	assert.Empty(t, r.cached)

	r.read, r.cached = nil, nil
	_, again, err := Read(context.Background(), noLayers{img}, sel, o)
	require.NoError(t, err, "the cache answers every layer: the layers are not listed")
	assert.Empty(t, r.read)
	assert.Len(t, r.cached, n)
	assert.JSONEq(t, asJSON(t, first), asJSON(t, again))

	_, plain, err := Read(context.Background(), img, sel, Options{})
	require.NoError(t, err)
	assert.JSONEq(t, asJSON(t, first), asJSON(t, plain))
}

// TestCacheIsNeverTrustedAcrossVersions: a record of another format
// version under the key is ignored and the layer read again.
func TestCacheIsNeverTrustedAcrossVersions(t *testing.T) {
	t.Parallel()
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999"}.Image()
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	sel := NewSelection(mustConfig(t, cfg.Config.Env), cfg.Architecture)
	cache := &layercache.Cache{Dir: t.TempDir()}
	r := &recorder{}
	o := Options{Cache: cache, Progress: r.progress}
	_, want, err := Read(context.Background(), img, sel, o)
	require.NoError(t, err)

	for _, d := range cfg.RootFS.DiffIDs {
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
	r.read, r.cached = nil, nil
	_, got, err := Read(context.Background(), img, sel, o)
	require.NoError(t, err)
	assert.Empty(t, r.cached)
	assert.Len(t, r.read, len(cfg.RootFS.DiffIDs))
	assert.JSONEq(t, asJSON(t, want), asJSON(t, got))
}

func mustConfig(t *testing.T, env []string) settings.Config {
	t.Helper()
	c, err := settings.FromEnv(env)
	require.NoError(t, err)
	return c
}

// noLayers is an image whose layers cannot be listed.
type noLayers struct{ v1.Image }

func (noLayers) Layers() ([]v1.Layer, error) { return nil, errors.New("the layers were listed") }

// TestReadWithoutLayers: an image whose layers cannot be listed fails
// the reading (no cache answers them) with why.
func TestReadWithoutLayers(t *testing.T) {
	t.Parallel()
	img, err := imagekit.Base{Dist: testkit.Good("2.2.1"), User: "9999"}.Image()
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	_, _, err = Read(context.Background(), noLayers{img}, NewSelection(mustConfig(t, cfg.Config.Env), cfg.Architecture), Options{})
	require.ErrorContains(t, err, "the layers were listed")
}
