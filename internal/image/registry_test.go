package image

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// loopback is go-containerregistry's in-memory registry on a loopback
// port, behind a handler that can slow or cut blob downloads and that
// records every request.
type loopback struct {
	srv   *httptest.Server
	host  string
	mu    sync.Mutex
	log   []string // "METHOD path?query"
	blobs map[string]int
	// serve, when set, answers blob GETs instead of the registry: n is how
	// many times this blob was asked for before.
	serve func(w http.ResponseWriter, r *http.Request, next http.Handler, n int) bool
}

func newLoopback(t *testing.T) *loopback {
	t.Helper()
	l := &loopback{blobs: map[string]int{}}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	l.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		l.mu.Lock()
		l.log = append(l.log, r.Method+" "+r.URL.RequestURI())
		n := -1
		if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/sha256:") {
			n = l.blobs[r.URL.Path]
			l.blobs[r.URL.Path]++
		}
		serve := l.serve
		l.mu.Unlock()
		if n >= 0 && serve != nil && serve(w, r, reg, n) {
			return
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(l.srv.Close)
	l.host = strings.TrimPrefix(l.srv.URL, "http://")
	return l
}

func (l *loopback) requests() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.log...)
}

func (l *loopback) push(t *testing.T, repo string, img v1.Image) string {
	t.Helper()
	ref := l.host + "/" + repo
	require.NoError(t, remote.Write(parseRef(t, ref), img))
	return ref
}

func registryBase(t *testing.T) v1.Image {
	t.Helper()
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	// A lib of some size, so a cut in the middle of the layer is a cut in
	// the middle of JARs.
	extra := []imagekit.Entry{{Name: "opt/flink/lib/flink-big-2.2.1.jar", Data: testkit.BigJAR(20, 200_000, testkit.Manifest("Implementation-Title", "big"))}}
	img, err := imagekit.Base{Dist: d, User: "9999", Extra: append(extra, flinkDirs...)}.Image()
	require.NoError(t, err)
	return img
}

// TestPushSkipsTheBaseBlobs: pushing a baked image uploads the new layer
// and the config only; the base's blobs are mounted from the base's
// repository or found in place.
func TestPushSkipsTheBaseBlobs(t *testing.T) {
	t.Parallel()
	l := newLoopback(t)
	baseRef := l.push(t, "flink/base:2.2.1", registryBase(t))
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	for i, target := range []string{"flink/base:baked", "other/repo:baked"} {
		t.Run(target, func(t *testing.T) {
			src, err := source.Open(context.Background(), baseRef)
			require.NoError(t, err)
			var payloads []File // another release each time: a new layer
			for _, p := range testkit.StreamFusion("2.2", fmt.Sprintf("0.%d.0", i+1)) {
				payloads = append(payloads, File{Name: p.Name, Data: p.Payload.Bytes()})
			}
			baked, _, err := Bake(context.Background(), src.Image, BakeOptions{Entrypoint: entrypoint, Payloads: payloads})
			require.NoError(t, err)
			before := len(l.requests())
			require.NoError(t, remote.Write(parseRef(t, l.host+"/"+target), baked))
			baseLayers, err := src.Image.Layers()
			require.NoError(t, err)
			var uploads int
			for _, r := range l.requests()[before:] {
				if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "/blobs/uploads/") {
					uploads++
				}
				for _, bl := range baseLayers {
					d, _ := bl.Digest()
					if strings.HasPrefix(r, "PUT ") && strings.Contains(r, "digest="+strings.ReplaceAll(d.String(), ":", "%3A")) {
						t.Errorf("the base layer %s was uploaded again: %s", d, r)
					}
				}
			}
			// pkg/registry keeps one blob store for all repositories: a HEAD
			// finds the base's blobs in another repository too, so nothing
			// needs mounting. A registry with per-repository stores gets a
			// cross-repository mount (remote.Write passes the base as the
			// mount source).
			assert.Equal(t, 2, uploads, "the new layer and the config, nothing else")
		})
	}
}

// TestSlowRegistry: layers served in small pieces with pauses verify all
// the same, with progress between start and end; a deadline that passes
// mid-layer fails with an error that names the layer.
func TestSlowRegistry(t *testing.T) {
	t.Parallel()
	l := newLoopback(t)
	ref := l.push(t, "flink/slow:1", registryBase(t))
	l.serve = func(w http.ResponseWriter, r *http.Request, next http.Handler, _ int) bool {
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		for len(body) > 0 {
			n := min(len(body), 64<<10)
			if _, err := w.Write(body[:n]); err != nil {
				return true
			}
			w.(http.Flusher).Flush()
			body = body[n:]
			select {
			case <-time.After(20 * time.Millisecond):
			case <-r.Context().Done():
				return true
			}
		}
		return true
	}
	var mu sync.Mutex
	var partial int
	src, err := source.Open(context.Background(), ref)
	require.NoError(t, err)
	res, err := VerifyOptions{Progress: func(u Update) {
		mu.Lock()
		defer mu.Unlock()
		if !u.Finished && u.Done > 0 {
			partial++
		}
	}}.Verify(context.Background(), src.Image)
	require.NoError(t, err)
	assert.True(t, res.Decision.Admitted() || len(res.Decision.Errors()) > 0, "a verdict")
	assert.Positive(t, partial, "progress while a layer arrives")

	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	src, err = source.Open(ctx, ref)
	require.NoError(t, err)
	_, err = VerifyOptions{}.Verify(ctx, src.Image)
	require.Error(t, err)
	assert.Regexp(t, `layer \d of \d \(sha256:[0-9a-f]{64}\)`, err.Error())
}

// TestRegistryDropsTheConnectionMidLayer: the registry sends half of a
// layer and closes the connection. Verify fails naming the layer; a bake
// whose output write meets the cut leaves no file behind.
func TestRegistryDropsTheConnectionMidLayer(t *testing.T) {
	t.Parallel()
	l := newLoopback(t)
	base := registryBase(t)
	ref := l.push(t, "flink/drop:1", base)
	layers, err := base.Layers()
	require.NoError(t, err)
	big, err := layers[len(layers)-1].Digest()
	require.NoError(t, err)
	var dropFrom atomic.Int64 // the n-th request of the layer on is cut
	l.serve = func(w http.ResponseWriter, r *http.Request, next http.Handler, n int) bool {
		if !strings.HasSuffix(r.URL.Path, big.String()) || int64(n) < dropFrom.Load() {
			return false
		}
		rec := httptest.NewRecorder()
		next.ServeHTTP(rec, r)
		for k, v := range rec.Header() {
			w.Header()[k] = v
		}
		w.WriteHeader(rec.Code)
		body := rec.Body.Bytes()
		_, _ = w.Write(body[:len(body)/2])
		w.(http.Flusher).Flush()
		conn, _, err := w.(http.Hijacker).Hijack()
		if err == nil {
			conn.Close()
		}
		return true
	}

	src, err := source.Open(context.Background(), ref)
	require.NoError(t, err)
	_, err = VerifyOptions{}.Verify(context.Background(), src.Image)
	require.Error(t, err)
	assert.Contains(t, err.Error(), big.String(), "the error names the layer")
	assert.Regexp(t, `layer \d of \d`, err.Error())

	// The bake reads the layer whole once; writing the output reads it
	// again and meets the cut (sink's TestWritesAreAllOrNothing holds
	// what is left on disk then).
	dropFrom.Store(1 << 30)
	entrypoint, err := stampedTrue()
	require.NoError(t, err)
	src, err = source.Open(context.Background(), ref)
	require.NoError(t, err)
	baked, _, err := Bake(context.Background(), src.Image, BakeOptions{Entrypoint: entrypoint, Payloads: testPayloads("2.2")})
	require.NoError(t, err)
	l.mu.Lock()
	dropFrom.Store(int64(l.blobs["/v2/flink/drop/blobs/"+big.String()]))
	l.mu.Unlock()
	err = tarball.Write(name.MustParseReference("localhost/flink:baked"), baked, io.Discard)
	require.Error(t, err, "the base's layer is read again, and cut")
}

func parseRef(t *testing.T, s string) name.Reference {
	t.Helper()
	r, err := name.ParseReference(s)
	require.NoError(t, err)
	return r
}
