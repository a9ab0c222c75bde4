package webhook

import (
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
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// concurrency counts the requests a handler is serving, and the most at once.
type concurrency struct {
	now, most, total atomic.Int64
	delay            time.Duration // before each request is served
}

func (c *concurrency) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		raiseTo(&c.most, c.now.Add(1))
		defer c.now.Add(-1)
		c.total.Add(1)
		if c.delay > 0 {
			time.Sleep(c.delay)
		}
		next.ServeHTTP(w, r)
	})
}

// raiseTo sets a to v when v is larger.
func raiseTo(a *atomic.Int64, v int64) {
	for {
		if m := a.Load(); v <= m || a.CompareAndSwap(m, v) {
			return
		}
	}
}

// inFlight counts the requests a transport has sent and not finished (the
// body closed or read to its end), and the most at once.
type inFlight struct {
	next      http.RoundTripper
	now, most atomic.Int64
}

func (c *inFlight) RoundTrip(r *http.Request) (*http.Response, error) {
	raiseTo(&c.most, c.now.Add(1))
	resp, err := c.next.RoundTrip(r)
	if err != nil {
		c.now.Add(-1)
		return nil, err
	}
	resp.Body = &releasing{ReadCloser: resp.Body, release: sync.OnceFunc(func() { c.now.Add(-1) }), fail: func(string) {}}
	return resp, nil
}

// TestThousandsOfImagesInOneReview: a Pod listing 3,000 distinct images
// (each its own digest and environment, sharing the good image's layers) is answered
// within the review's deadline, with at most --registry-requests requests
// at the registry at once (6 here, while the review may verify 64 images
// at once, each reading two layers at a time); the images it could not verify in time are named in
// a bounded message. References to one digest count once.
func TestThousandsOfImagesInOneReview(t *testing.T) {
	const images, maxRequests, reviewReads = 3000, 6, 64
	var seen concurrency
	srv := httptest.NewServer(seen.wrap(registry.New(registry.Logger(log.New(io.Discard, "", 0)))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	todo := map[name.Reference]remote.Taggable{}
	good := shared(t).good
	base, err := good.ConfigFile()
	require.NoError(t, err)
	for i := range images {
		cfg := base.DeepCopy()
		// an environment variable of its own: a label alone would be the
		// same content, one verdict (verdict.Cache keeps it by content)
		cfg.Config.Env = append(cfg.Config.Env, fmt.Sprintf("N=%d", i))
		img, err := mutate.ConfigFile(good, cfg)
		require.NoError(t, err)
		ref, err := name.ParseReference(fmt.Sprintf("%s/flink:n%d", host, i))
		require.NoError(t, err)
		todo[ref] = img
	}
	require.NoError(t, remote.MultiWrite(todo))
	seen.most.Store(0)
	seen.total.Store(0)
	seen.delay = 20 * time.Millisecond // a registry some way off: requests overlap

	var containers []any
	for i := range images {
		containers = append(containers, map[string]any{"name": fmt.Sprintf("tm%d", i), "image": fmt.Sprintf("%s/flink:n%d", host, i), "args": []any{"taskmanager"}})
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "wide", "namespace": "flink"},
		"spec": map[string]any{"containers": containers}}

	// What the limit bounds, counted below it: requests from the sending
	// of their headers to the end of their bodies (at the registry, a
	// handler may still be returning when its client has read the last
	// byte and sent the next request).
	sent := &inFlight{next: http.DefaultTransport}
	transport := LimitRequests(sent, maxRequests, nil)
	cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(transport)}})
	s := startServer(t, Config{Cache: cache, Timeout: 3 * time.Second, ReviewReads: reviewReads}, nil)
	begin := time.Now()
	out := s.post(t, reviewOf(t, "Pod", admissionv1.Create, pod)).Response
	took := time.Since(begin)
	assert.Less(t, took, 9*time.Second, "answered before the API server's timeout (10s, less a second)")
	require.False(t, out.Allowed)
	assert.Contains(t, out.Result.Message, "could not verify this object (failure policy Fail)")
	assert.Contains(t, out.Result.Message, "not verified within 3s")
	assert.LessOrEqual(t, len(out.Result.Message), maxMessage+64, "a bounded message")
	most := sent.most.Load()
	assert.LessOrEqual(t, most, int64(maxRequests), "registry requests at once")
	assert.LessOrEqual(t, seen.most.Load(), int64(maxRequests+2), "requests at the registry at once")
	assert.Positive(t, seen.total.Load())
	assert.LessOrEqual(t, cache.Running(), int64(reviewReads), "verifications the review started and left running")
	assert.Less(t, cache.Stats.Verified.Load(), int64(images), "the images not started by the deadline are not verified")
	t.Logf("%d images: answered in %s, %d registry requests, at most %d at once (%d at the registry), %d images verified",
		images, took.Round(time.Millisecond), seen.total.Load(), most, seen.most.Load(), cache.Stats.Verified.Load())

	t.Run("references to one digest are one image", func(t *testing.T) {
		dg, err := good.Digest()
		require.NoError(t, err)
		for _, repo := range []string{"flink", "other/flink"} {
			ref, err := name.ParseReference(host + "/" + repo + ":good")
			require.NoError(t, err)
			require.NoError(t, remote.Write(ref, good))
		}
		var cts []any
		for i, repo := range []string{"flink", "other/flink", "flink", "other/flink"} {
			cts = append(cts, map[string]any{"name": fmt.Sprintf("tm%d", i), "image": fmt.Sprintf("%s/%s@%s", host, repo, dg), "args": []any{"taskmanager"}})
		}
		pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "same", "namespace": "flink"},
			"spec": map[string]any{"containers": cts}}
		c := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}})
		s := startServer(t, Config{Cache: c}, nil)
		out := s.post(t, reviewOf(t, "Pod", admissionv1.Create, pod)).Response
		require.True(t, out.Allowed, "%+v", out.Result)
		assert.Equal(t, int64(1), c.Stats.Verified.Load(), "one verification")
		assert.Equal(t, int64(1), c.Stats.Hits.Load(), "one look-up for four references to one digest")
	})
}
