package verdict

import (
	"context"
	"encoding/base64"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

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
