package layercache

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGetPut(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir()}
	_, ok := c.Get("a")
	assert.False(t, ok)
	require.NoError(t, c.Put("a", []byte("one")))
	got, ok := c.Get("a")
	require.True(t, ok)
	assert.Equal(t, "one", string(got))
	_, ok = c.Get("b")
	assert.False(t, ok, "keys do not collide")
	var nilCache *Cache
	_, ok = nilCache.Get("a")
	assert.False(t, ok, "a nil cache holds nothing")
	assert.NoError(t, nilCache.Put("a", nil))
}

func TestEvictsTheLeastRecentlyUsed(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir(), MaxBytes: 3000}
	old := time.Now().Add(-time.Hour)
	for i := range 3 {
		key := fmt.Sprint("k", i)
		require.NoError(t, c.Put(key, bytes.Repeat([]byte("x"), 1000)))
		require.NoError(t, os.Chtimes(c.file(key), old.Add(time.Duration(i)*time.Minute), old.Add(time.Duration(i)*time.Minute)))
	}
	_, ok := c.Get("k0") // used now: the newest
	require.True(t, ok)
	require.NoError(t, c.Put("k3", bytes.Repeat([]byte("x"), 1000)))
	_, ok = c.Get("k1")
	assert.False(t, ok, "the least recently used entry is evicted")
	for _, k := range []string{"k0", "k2", "k3"} {
		_, ok := c.Get(k)
		assert.True(t, ok, k)
	}
	var total int64
	ents, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	for _, e := range ents {
		info, err := e.Info()
		require.NoError(t, err)
		total += info.Size()
	}
	assert.LessOrEqual(t, total, c.MaxBytes)
}

func TestConcurrentWritersLeaveWholeEntries(t *testing.T) {
	t.Parallel()
	c := &Cache{Dir: t.TempDir(), MaxBytes: 1 << 20}
	want := bytes.Repeat([]byte("0123456789"), 20_000)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(2)
		go func() {
			defer wg.Done()
			assert.NoError(t, c.Put("same", want))
		}()
		go func() {
			defer wg.Done()
			if got, ok := c.Get("same"); ok {
				assert.Equal(t, len(want), len(got), "a reader never sees half an entry")
			}
		}()
	}
	wg.Wait()
	got, ok := c.Get("same")
	require.True(t, ok)
	assert.Equal(t, want, got)
	ents, err := os.ReadDir(c.Dir)
	require.NoError(t, err)
	for _, e := range ents {
		assert.False(t, strings.HasPrefix(e.Name(), ".tmp-"), "no temporary file left: %s", e.Name())
	}
}

func TestDefaultIsUnderTheUserCache(t *testing.T) {
	t.Setenv("XDG_CACHE_HOME", "/somewhere")
	c, err := Default()
	require.NoError(t, err)
	assert.Equal(t, filepath.Join("/somewhere", "streamfusion", "layers"), c.Dir)
}
