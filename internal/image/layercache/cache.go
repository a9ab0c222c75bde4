// Package layercache keeps small records about image layers on disk, keyed
// by a string the caller builds from the layer's digest and the format of
// what it stores: the image tooling stores there what admission needs from
// one layer, so a base seen before is not read again.
//
// Entries are written to a temporary file and renamed into place, so
// concurrent runs never see a half-written entry (the last writer wins;
// every writer writes the same record for the same key). The cache is
// bounded: after a write, the least recently used entries are removed until
// the total is below MaxBytes. It stores bytes and says nothing about them:
// callers put a format version in the key and in the record, and throw away
// what they cannot decode.
//
// Hand-written: the few lines of temp-and-rename and eviction by age do not
// warrant a dependency (the maintained disk caches bring servers or
// databases along).
package layercache

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"
)

// DefaultMaxBytes bounds a cache whose MaxBytes is 0.
const DefaultMaxBytes = 256 << 20

// Cache is a directory of entries.
type Cache struct {
	Dir      string
	MaxBytes int64 // 0: DefaultMaxBytes
}

// Default is the cache under the user's cache directory
// (os.UserCacheDir()/streamfusion/layers: $XDG_CACHE_HOME or ~/.cache).
func Default() (*Cache, error) {
	dir, err := os.UserCacheDir()
	if err != nil {
		return nil, fmt.Errorf("layer cache: %w", err)
	}
	return &Cache{Dir: filepath.Join(dir, "streamfusion", "layers")}, nil
}

const suffix = ".entry"

func (c *Cache) file(key string) string {
	sum := sha256.Sum256([]byte(key))
	return filepath.Join(c.Dir, hex.EncodeToString(sum[:])+suffix)
}

// Get returns the entry of key, and marks it used.
func (c *Cache) Get(key string) ([]byte, bool) {
	if c == nil {
		return nil, false
	}
	f := c.file(key)
	data, err := os.ReadFile(f)
	if err != nil {
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(f, now, now) // used: evicted last
	return data, true
}

// Put stores data under key, then evicts the oldest entries beyond the
// bound. A cache that cannot be written is not an error worth failing a
// run for; Put returns it for the caller to report.
func (c *Cache) Put(key string, data []byte) error {
	if c == nil {
		return nil
	}
	if err := os.MkdirAll(c.Dir, 0o700); err != nil {
		return fmt.Errorf("layer cache: %w", err)
	}
	tmp, err := os.CreateTemp(c.Dir, ".tmp-*")
	if err != nil {
		return fmt.Errorf("layer cache: %w", err)
	}
	_, werr := tmp.Write(data)
	cerr := tmp.Close()
	if err := errors.Join(werr, cerr); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("layer cache: %w", err)
	}
	if err := os.Rename(tmp.Name(), c.file(key)); err != nil {
		_ = os.Remove(tmp.Name())
		return fmt.Errorf("layer cache: %w", err)
	}
	return c.evict()
}

// evict removes the least recently used entries until the total size is
// at most MaxBytes, and temporary files a crashed run left behind.
func (c *Cache) evict() error {
	limit := c.MaxBytes
	if limit == 0 {
		limit = DefaultMaxBytes
	}
	ents, err := os.ReadDir(c.Dir)
	if err != nil {
		return fmt.Errorf("layer cache: %w", err)
	}
	type item struct {
		name string
		size int64
		used time.Time
	}
	var items []item
	var total int64
	for _, e := range ents {
		info, err := e.Info()
		if err != nil {
			continue // removed by a concurrent run
		}
		if strings.HasPrefix(e.Name(), ".tmp-") {
			if time.Since(info.ModTime()) > time.Hour {
				_ = os.Remove(filepath.Join(c.Dir, e.Name()))
			}
			continue
		}
		if !strings.HasSuffix(e.Name(), suffix) || !info.Mode().IsRegular() {
			continue
		}
		items = append(items, item{e.Name(), info.Size(), info.ModTime()})
		total += info.Size()
	}
	sort.Slice(items, func(i, j int) bool { return items[i].used.Before(items[j].used) })
	for _, it := range items {
		if total <= limit {
			break
		}
		if err := os.Remove(filepath.Join(c.Dir, it.name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("layer cache: %w", err)
		}
		total -= it.size
	}
	return nil
}
