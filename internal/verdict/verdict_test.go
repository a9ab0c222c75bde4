package verdict

import (
	"context"
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// plainFlink is Flink 2.2.1 without StreamFusion: a refusal, which is a
// verdict as good as an admission for the cache.
func plainFlink(t *testing.T, arch string) v1.Image {
	t.Helper()
	d := testkit.Good("2.2.1")
	d.Payloads = nil
	img, err := imagekit.Base{Dist: d, User: "9999", Arch: arch}.Image()
	require.NoError(t, err)
	return img
}

// serve runs a loopback registry; user:pass is required when set.
func serve(t *testing.T, user, pass string) (string, *atomic.Int64) {
	t.Helper()
	var requests atomic.Int64
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if user != "" {
			u, p, ok := r.BasicAuth()
			if !ok || u != user || p != pass {
				w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
				http.Error(w, "unauthorized", http.StatusUnauthorized)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), &requests
}

func push(t *testing.T, ref string, img any, opts ...remote.Option) {
	t.Helper()
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	switch x := img.(type) {
	case v1.Image:
		require.NoError(t, remote.Write(r, x, opts...))
	case v1.ImageIndex:
		require.NoError(t, remote.WriteIndex(r, x, opts...))
	}
}

func TestDigestVerdicts(t *testing.T) {
	host, requests := serve(t, "", "")
	amd, arm := plainFlink(t, "amd64"), plainFlink(t, "arm64")
	idx := mutate.AppendManifests(mutate.IndexMediaType(empty.Index, types.OCIImageIndex),
		mutate.IndexAddendum{Add: amd, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "amd64"}}},
		mutate.IndexAddendum{Add: arm, Descriptor: v1.Descriptor{Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}}})
	push(t, host+"/flink:multi", idx)
	idxDigest, err := idx.Digest()
	require.NoError(t, err)
	armDigest, err := arm.Digest()
	require.NoError(t, err)

	c := New(Options{})
	ctx := context.Background()
	v, err := c.Verify(ctx, host+"/flink:multi", "linux/arm64", Credentials{})
	require.NoError(t, err)
	assert.False(t, v.Admitted)
	assert.Equal(t, armDigest.String(), v.Digest, "the platform's image, not the index")
	assert.Equal(t, "linux/arm64", v.Platform)
	assert.Equal(t, "2.2.1", v.Facts.Flink)
	assert.Contains(t, v.Message("taskmanager"), "StreamFusion refused to start taskmanager: ")
	assert.Equal(t, int64(1), c.Stats.Verified.Load())

	// The index's digest with the same platform, and the image's own digest,
	// are answered without a registry request.
	before := requests.Load()
	for _, ref := range []string{host + "/flink@" + idxDigest.String(), host + "/other@" + armDigest.String()} {
		v, err := c.Verify(ctx, ref, "linux/arm64", Credentials{})
		require.NoError(t, err, ref)
		assert.Equal(t, armDigest.String(), v.Digest)
		assert.Equal(t, ref, v.Ref, "named as asked")
	}
	assert.Equal(t, before, requests.Load(), "no registry request for a known digest")

	// The default platform is another image: a second verification.
	v, err = c.Verify(ctx, host+"/flink:multi", "", Credentials{})
	require.NoError(t, err)
	assert.Equal(t, "linux/amd64", v.Platform)
	assert.Equal(t, int64(2), c.Stats.Verified.Load())

	_, err = c.Verify(ctx, host+"/flink:multi", "linux/s390x", Credentials{})
	assert.ErrorIs(t, err, ErrNoPlatform)
	_, err = c.Verify(ctx, host+"/flink:absent", "", Credentials{})
	assert.ErrorIs(t, err, ErrResolve)
	_, err = c.Verify(ctx, "UPPER/Case:x", "", Credentials{})
	assert.ErrorIs(t, err, ErrResolve)
}

func TestEviction(t *testing.T) {
	c := New(Options{MaxEntries: 2})
	for _, d := range []string{"sha256:a", "sha256:b", "sha256:c"} {
		c.store(&Verdict{Digest: d}, d, "linux/amd64", "")
	}
	assert.Equal(t, 2, c.Len())
	assert.Nil(t, c.lookup("sha256:a", "linux/amd64", ""), "the oldest goes first")
	assert.NotNil(t, c.lookup("sha256:c", "linux/amd64", ""))
}

func TestPullSecretFiles(t *testing.T) {
	host, _ := serve(t, "flink", "s3cret")
	push(t, host+"/flink:private", plainFlink(t, "amd64"), remote.WithAuth(&authn.Basic{Username: "flink", Password: "s3cret"}))
	t.Setenv("DOCKER_CONFIG", t.TempDir()) // no credentials there

	dir := t.TempDir()
	write := func(secret, file, content string) {
		require.NoError(t, os.MkdirAll(filepath.Join(dir, secret), 0o755))
		require.NoError(t, os.WriteFile(filepath.Join(dir, secret, file), []byte(content), 0o600))
	}
	auth := func(u, p string) string { return base64.StdEncoding.EncodeToString([]byte(u + ":" + p)) }
	write("wrong", ".dockerconfigjson", `{"auths":{"`+host+`":{"auth":"`+auth("flink", "nope")+`"}}}`)
	write("regcred", ".dockerconfigjson", `{"auths":{"`+host+`":{"auth":"`+auth("flink", "s3cret")+`"}}}`)
	write("legacy", ".dockercfg", `{"`+host+`":{"auth":"`+auth("flink", "s3cret")+`"}}`)
	s := Secrets{Dir: dir}
	ref := host + "/flink:private"
	ctx := context.Background()

	_, err := New(Options{}).Verify(ctx, ref, "", Credentials{})
	require.Error(t, err, "no credentials: refused by the registry")
	assert.Contains(t, err.Error(), "401")

	for _, tc := range []struct {
		name    string
		secrets []string
		ok      bool
	}{
		{"the pod's secret first", []string{"regcred"}, true},
		{"legacy dockercfg", []string{"legacy"}, true},
		{"a wrong secret named first wins", []string{"wrong"}, false},
		{"no names: every file in order (legacy sorts first)", nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := New(Options{}).Verify(ctx, ref, "", s.Credentials(tc.secrets))
			if !tc.ok {
				require.Error(t, err)
				assert.Contains(t, err.Error(), "401")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, "2.2.1", v.Facts.Flink)
		})
	}
	assert.NotEqual(t, s.Credentials([]string{"a"}).Key, s.Credentials([]string{"b"}).Key, "registry clients are not shared across secrets")
}

// gatedRegistry is a loopback registry holding plain Flink at ref whose
// manifest HEADs wait for release; heads counts them and cancelled those
// whose client went away.
type gatedRegistry struct {
	host, ref        string
	release          chan struct{}
	armed            atomic.Bool // HEADs wait only once armed (after the push, which sends its own)
	heads, cancelled atomic.Int64
	once             sync.Once
}

func serveGated(t *testing.T) *gatedRegistry {
	t.Helper()
	g := &gatedRegistry{release: make(chan struct{})}
	reg := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodHead && strings.Contains(r.URL.Path, "/manifests/") && g.armed.Load() {
			g.heads.Add(1)
			select {
			case <-g.release:
			case <-r.Context().Done():
				g.cancelled.Add(1)
				return
			}
		}
		reg.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	t.Cleanup(g.open) // first: srv.Close waits for the HEADs held
	g.host = strings.TrimPrefix(srv.URL, "http://")
	g.ref = g.host + "/flink:2.2.1"
	push(t, g.ref, plainFlink(t, "amd64"))
	g.armed.Store(true)
	return g
}

// open lets every HEAD through, now and later.
func (g *gatedRegistry) open() { g.once.Do(func() { close(g.release) }) }

// waiters is how many callers wait for the tag's HEAD now.
func (c *Cache) waiters(tag string) int {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	for k, h := range c.heads {
		if strings.HasSuffix(k, tag) {
			return h.waiters
		}
	}
	return 0
}

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("not within 10 s: %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Reviews of one tag at once share one manifest HEAD: under load each
// would otherwise hold a registry connection of its own for the same
// answer (issue 31's throughput at 128 in flight).
func TestConcurrentTagResolutionsShareOneHead(t *testing.T) {
	g := serveGated(t)
	ref := g.ref
	c := New(Options{})
	const n = 40
	errs := make(chan error, n)
	for range n {
		go func() {
			_, err := c.Verify(context.Background(), ref, "", Credentials{})
			errs <- err
		}()
	}
	waitFor(t, fmt.Sprintf("%d callers waiting for one HEAD", n), func() bool { return c.waiters(ref) == n })
	g.open()
	for range n {
		require.NoError(t, <-errs)
	}
	assert.Equal(t, int64(1), g.heads.Load(), "one manifest HEAD for %d concurrent resolutions of one tag", n)
	assert.Equal(t, int64(1), c.Stats.Resolved.Load())
	assert.Equal(t, int64(1), c.Stats.Verified.Load())

	// Another set of credentials is another registry session: its own HEAD.
	_, err := c.Verify(context.Background(), ref, "", Credentials{Key: "other", Keychain: authn.DefaultKeychain})
	require.NoError(t, err)
	assert.Equal(t, int64(2), g.heads.Load())
}

// A caller that stops waiting leaves the shared HEAD to the others; the
// last one to stop cancels it, as its own request would have been.
func TestSharedHeadOutlivesOneCaller(t *testing.T) {
	g := serveGated(t)
	ref := g.ref
	c := New(Options{})

	short, stop := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := c.Verify(short, ref, "", Credentials{}); first <- err }()
	waitFor(t, "the first caller waiting", func() bool { return c.waiters(ref) == 1 })
	second := make(chan error, 1)
	go func() { _, err := c.Verify(context.Background(), ref, "", Credentials{}); second <- err }()
	waitFor(t, "the second caller joining", func() bool { return c.waiters(ref) == 2 })
	waitFor(t, "the HEAD at the registry", func() bool { return g.heads.Load() == 1 })
	stop()
	var pe *PendingError
	require.ErrorAs(t, <-first, &pe)
	assert.Contains(t, pe.Error(), "resolving the tag")
	g.open()
	require.NoError(t, <-second, "the HEAD went on for the caller still waiting")
	assert.Equal(t, int64(1), g.heads.Load())
	assert.Zero(t, g.cancelled.Load())

	// Alone, a caller that stops cancels the request.
	g2 := serveGated(t)
	ref2 := g2.ref
	ctx, stop2 := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { _, err := c.Verify(ctx, ref2, "", Credentials{}); done <- err }()
	waitFor(t, "the caller waiting", func() bool { return c.waiters(ref2) == 1 })
	waitFor(t, "its HEAD at the registry", func() bool { return g2.heads.Load() == 1 })
	stop2()
	require.ErrorAs(t, <-done, &pe)
	waitFor(t, "the registry seeing the HEAD cancelled", func() bool { return g2.cancelled.Load() == 1 })
	assert.Zero(t, c.waiters(ref2), "no flight left behind: a later caller starts a new HEAD")
}
