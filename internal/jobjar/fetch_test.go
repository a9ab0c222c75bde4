package jobjar

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func newFetcher(t *testing.T, o Options) *Fetcher {
	t.Helper()
	o.AnyHost = true // httptest listens on loopback
	if o.TempDir == "" {
		o.TempDir = t.TempDir()
	}
	f, err := New(o)
	require.NoError(t, err)
	return f
}

func mustURL(t testing.TB, s string) *url.URL {
	t.Helper()
	u, err := Parse(s)
	require.NoError(t, err)
	return u
}

func hexSum(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	left, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Empty(t, left, "temporary files left behind")
}

func TestFetchWritesAndHashes(t *testing.T) {
	body := []byte(strings.Repeat("PK\x03\x04 a job JAR ", 5000))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write(body) }))
	defer srv.Close()
	f := newFetcher(t, Options{})
	j, err := f.Fetch(context.Background(), mustURL(t, srv.URL+"/jobs/my-job-1.0.jar?token=secret"), nil, true)
	require.NoError(t, err)
	got, err := os.ReadFile(j.Path)
	require.NoError(t, err)
	assert.Equal(t, body, got)
	assert.Equal(t, hexSum(body), j.SHA256)
	assert.Equal(t, int64(len(body)), j.Size)
	assert.Equal(t, "my-job-1.0.jar", j.Name)
	require.NoError(t, j.Close())
	assert.NoFileExists(t, got2path(j))
	assert.Equal(t, int64(1), f.Stats.Downloads.Load())
}

func got2path(j *JAR) string { return j.Path }

func TestSizeLimit(t *testing.T) {
	big := make([]byte, 4096)
	declared := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Length", "4096")
		_, _ = w.Write(big)
	}))
	defer declared.Close()
	chunked := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		for range 4 { // no Content-Length: the body itself passes the limit
			_, _ = w.Write(big[:1024])
			w.(http.Flusher).Flush()
		}
	}))
	defer chunked.Close()
	dir := t.TempDir()
	f := newFetcher(t, Options{MaxBytes: 3000, TempDir: dir})
	_, err := f.Fetch(context.Background(), mustURL(t, declared.URL+"/big.jar"), nil, false)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "the server says 4 KiB, the limit is 2.9 KiB")
	_, err = f.Fetch(context.Background(), mustURL(t, chunked.URL+"/big.jar"), nil, false)
	require.ErrorIs(t, err, ErrTooLarge)
	assert.Contains(t, err.Error(), "more than 2.9 KiB read, the limit is 2.9 KiB")
	assert.Equal(t, int64(0), f.Stats.Downloads.Load())
	assertEmpty(t, dir)

	exact := newFetcher(t, Options{MaxBytes: 4096})
	j, err := exact.Fetch(context.Background(), mustURL(t, chunked.URL+"/exact.jar"), nil, false)
	require.NoError(t, err, "a JAR of exactly the limit is fetched")
	assert.Equal(t, int64(4096), j.Size)
	_ = j.Close()
}

func TestDeadline(t *testing.T) {
	release := make(chan struct{})
	defer close(release)
	hang := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Length", "100")
		_, _ = w.Write([]byte("PK"))
		w.(http.Flusher).Flush()
		select { // a body that never ends
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer hang.Close()
	dir := t.TempDir()
	f := newFetcher(t, Options{TempDir: dir})
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	_, err := f.Fetch(ctx, mustURL(t, hang.URL+"/slow.jar"), nil, false)
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Contains(t, err.Error(), "read the body after 2 bytes")
	assertEmpty(t, dir)
}

func TestStatus(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/broken.jar" {
			http.Error(w, "boom", http.StatusBadGateway)
			return
		}
		http.NotFound(w, r)
	}))
	defer srv.Close()
	f := newFetcher(t, Options{})
	_, err := f.Fetch(context.Background(), mustURL(t, srv.URL+"/gone.jar?sig=abc"), nil, false)
	var se *StatusError
	require.ErrorAs(t, err, &se)
	assert.True(t, se.Gone())
	assert.Equal(t, "GET "+srv.URL+"/gone.jar?...: unexpected HTTP status: 404 Not Found", err.Error(), "the query (a presigned URL's signature) is not repeated")
	_, err = f.Fetch(context.Background(), mustURL(t, srv.URL+"/broken.jar"), nil, false)
	require.ErrorAs(t, err, &se)
	assert.False(t, se.Gone())
	assert.Equal(t, http.StatusBadGateway, se.Status)
}

func TestRedirects(t *testing.T) {
	body := []byte("PK the job")
	var seen atomic.Value // the header the other host saw
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		seen.Store(fmt.Sprintf("token=%q auth=%q", r.Header.Get("X-Token"), r.Header.Get("Authorization")))
		_, _ = w.Write(body)
	}))
	defer other.Close()
	var sameHostToken atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var n int
		switch r.URL.Path {
		case "/away.jar":
			http.Redirect(w, r, other.URL+"/there.jar", http.StatusFound)
		case "/file.jar":
			http.Redirect(w, r, "file:///etc/passwd", http.StatusFound)
		case "/final.jar":
			sameHostToken.Store(r.Header.Get("X-Token"))
			_, _ = w.Write(body)
		default:
			_, _ = fmt.Sscanf(r.URL.Path, "/hop%d.jar", &n)
			if n == 0 {
				http.Redirect(w, r, "/final.jar", http.StatusTemporaryRedirect)
				return
			}
			http.Redirect(w, r, fmt.Sprintf("/hop%d.jar", n-1), http.StatusMovedPermanently)
		}
	}))
	defer srv.Close()
	f := newFetcher(t, Options{})
	h := http.Header{"X-Token": {"tenant-secret"}, "Authorization": {"Bearer tenant"}}

	j, err := f.Fetch(context.Background(), mustURL(t, srv.URL+"/hop4.jar"), h, false)
	require.NoError(t, err, "5 redirects are followed")
	assert.Equal(t, "hop4.jar", j.Name, "named from the jarURI, not the redirect")
	assert.Equal(t, "tenant-secret", sameHostToken.Load(), "headers stay on the jarURI's host")
	_ = j.Close()

	_, err = f.Fetch(context.Background(), mustURL(t, srv.URL+"/hop5.jar"), h, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "more than 5 redirects")

	j, err = f.Fetch(context.Background(), mustURL(t, srv.URL+"/away.jar"), h, false)
	require.NoError(t, err)
	assert.Equal(t, `token="" auth=""`, seen.Load(), "no header of the jarURI's host reaches another host")
	_ = j.Close()

	_, err = f.Fetch(context.Background(), mustURL(t, srv.URL+"/file.jar"), h, false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "redirect to file:///etc/passwd: only http and https are followed")
}

func TestConditionalFetch(t *testing.T) {
	for _, validator := range []string{"ETag", "Last-Modified"} {
		t.Run(validator, func(t *testing.T) {
			body := []byte("PK version 1")
			var full, notModified atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				switch validator {
				case "ETag":
					w.Header().Set("ETag", `"v1"`)
					if r.Header.Get("If-None-Match") == `"v1"` {
						notModified.Add(1)
						w.WriteHeader(http.StatusNotModified)
						return
					}
				default:
					w.Header().Set("Last-Modified", "Fri, 04 Dec 2026 08:00:00 GMT")
					if r.Header.Get("If-Modified-Since") == "Fri, 04 Dec 2026 08:00:00 GMT" {
						notModified.Add(1)
						w.WriteHeader(http.StatusNotModified)
						return
					}
				}
				full.Add(1)
				_, _ = w.Write(body)
			}))
			defer srv.Close()
			f := newFetcher(t, Options{})
			u := mustURL(t, srv.URL+"/job.jar")
			first, err := f.Fetch(context.Background(), u, nil, true)
			require.NoError(t, err)
			require.NotEmpty(t, first.Path)
			_ = first.Close()

			second, err := f.Fetch(context.Background(), u, nil, true)
			require.NoError(t, err)
			assert.Empty(t, second.Path, "a 304 has no file")
			assert.Equal(t, hexSum(body), second.SHA256, "the digest served before")
			assert.Equal(t, int64(1), full.Load())
			assert.Equal(t, int64(1), notModified.Load())
			assert.Equal(t, int64(1), f.Stats.NotModified.Load())

			third, err := f.Fetch(context.Background(), u, nil, false)
			require.NoError(t, err, "unconditional: the bytes again")
			assert.NotEmpty(t, third.Path)
			assert.Equal(t, int64(2), full.Load())
			_ = third.Close()
		})
	}
}

func TestRestrictedAddresses(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("PK")) }))
	defer srv.Close()
	f, err := New(Options{TempDir: t.TempDir()})
	require.NoError(t, err)
	_, err = f.Fetch(context.Background(), mustURL(t, srv.URL+"/job.jar"), nil, false)
	require.ErrorIs(t, err, ErrAddress)
	assert.Contains(t, err.Error(), "127.0.0.1 is a loopback, link-local, multicast or unspecified address")
	for _, addr := range []string{"169.254.169.254:80", "[fe80::1]:443", "0.0.0.0:80", "[::1]:80", "224.0.0.1:80"} {
		assert.ErrorIs(t, refuseRestricted("tcp", addr, nil), ErrAddress, addr)
	}
	for _, addr := range []string{"10.0.0.7:80", "192.168.1.2:8080", "93.184.216.34:443", "[2001:db8::1]:443"} {
		assert.NoError(t, refuseRestricted("tcp", addr, nil), addr)
	}
}

func TestCAFile(t *testing.T) {
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("PK over TLS")) }))
	defer srv.Close()
	u := mustURL(t, srv.URL+"/job.jar")
	plain := newFetcher(t, Options{})
	_, err := plain.Fetch(context.Background(), u, nil, false)
	require.Error(t, err, "the test server's CA is not a system root")
	assert.Contains(t, err.Error(), "certificate")

	ca := filepath.Join(t.TempDir(), "ca.pem")
	require.NoError(t, os.WriteFile(ca, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw}), 0o600))
	trusted := newFetcher(t, Options{CAFile: ca})
	j, err := trusted.Fetch(context.Background(), u, nil, false)
	require.NoError(t, err)
	_ = j.Close()

	_, err = New(Options{CAFile: filepath.Join(t.TempDir(), "missing.pem")})
	require.Error(t, err)
	require.NoError(t, os.WriteFile(ca, []byte("not PEM"), 0o600))
	_, err = New(Options{CAFile: ca})
	assert.ErrorContains(t, err, "no PEM certificate")
}

func TestParse(t *testing.T) {
	for raw, want := range map[string]string{
		"https://jobs.example/a/b/TopSpeed.jar": "",
		"HTTP://jobs.example/x.jar":             "",
		"local:///opt/flink/usrlib/job.jar":     "",
		"s3://bucket/job.jar":                   "",
		"/opt/flink/job.jar":                    "no scheme",
		"https:///job.jar":                      "needs a host",
		"http://[::1/x.jar":                     "missing ']'",
	} {
		u, err := Parse(raw)
		if want == "" {
			require.NoError(t, err, raw)
			assert.Equal(t, strings.ToLower(u.Scheme), u.Scheme)
			continue
		}
		assert.ErrorContains(t, err, want, raw)
	}
	for raw, want := range map[string]string{
		"https://h/a/TopSpeedWindowing-2.2.0.jar": "TopSpeedWindowing-2.2.0.jar",
		"https://h/download?id=7":                 "job.jar",
		"https://h/a/..":                          "job.jar",
		"https://h/a/.hidden.jar":                 "job.jar",
		"https://h/a/x%2Fy.jar":                   "y.jar", // the decoded path's last segment
	} {
		assert.Equal(t, want, Name(mustURL(t, raw)), raw)
	}
	assert.Equal(t, "https://u:xxxxx@h/a.jar?...", Redact(mustURL(t, "https://u:pw@h/a.jar?X-Amz-Signature=s#f")))
}

func TestParseHeaders(t *testing.T) {
	h, err := ParseHeaders("Authorization: Bearer abc, X-Tenant:blue")
	require.NoError(t, err)
	assert.Equal(t, http.Header{"Authorization": {"Bearer abc"}, "X-Tenant": {"blue"}}, h)
	h, err = ParseHeaders(" ")
	require.NoError(t, err)
	assert.Empty(t, h)
	for in, want := range map[string]string{
		"Authorization":        "entry 1: no ':'",
		"A:b,Bad Name:c":       "entry 2: not a header name",
		"A:line\nX-Injected:1": "entry 1: the value of A holds a character",
	} {
		_, err := ParseHeaders(in)
		assert.ErrorContains(t, err, want, in)
		assert.NotContains(t, err.Error(), "Bearer")
	}
	assert.True(t, errors.Is(&StatusError{Status: 404}, ErrStatus))
}
