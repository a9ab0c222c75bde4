package jobjar

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Defaults.
const (
	// DefaultMaxBytes bounds a JAR: 512 MiB, above the fattest job JARs
	// (a shaded job with its connectors is tens to a few hundred MiB).
	DefaultMaxBytes = 512 << 20
	// DefaultMaxRedirects is the operator's own bound (HttpArtifactFetcher).
	DefaultMaxRedirects = 5
	// defaultMaxKnown bounds the URIs whose validators are remembered.
	defaultMaxKnown = 1024
)

// Errors a caller tells apart.
var (
	// ErrTooLarge is a JAR over Options.MaxBytes.
	ErrTooLarge = errors.New("larger than the limit")
	// ErrStatus is a response other than 200 (or 304 to a conditional GET).
	ErrStatus = errors.New("unexpected HTTP status")
	// ErrAddress is a connection to an address refused by policy.
	ErrAddress = errors.New("address refused")
)

// StatusError is the status a server answered with.
type StatusError struct {
	URI    string
	Status int
}

func (e *StatusError) Error() string {
	return fmt.Sprintf("GET %s: %s: %d %s", e.URI, ErrStatus, e.Status, http.StatusText(e.Status))
}

func (e *StatusError) Unwrap() error { return ErrStatus }

// Gone says the server answered that the JAR is not there (404, 410): the
// operator cannot fetch it either.
func (e *StatusError) Gone() bool {
	return e.Status == http.StatusNotFound || e.Status == http.StatusGone
}

// Options configure a Fetcher.
type Options struct {
	// MaxBytes bounds a JAR (default DefaultMaxBytes).
	MaxBytes int64
	// MaxRedirects bounds the redirects followed (default DefaultMaxRedirects).
	MaxRedirects int
	// CAFile is a PEM bundle trusted besides the system roots.
	CAFile string
	// AnyHost allows connections to loopback, link-local, multicast and
	// unspecified addresses (tests; a JAR server on the webhook's own node).
	AnyHost bool
	// TempDir is where JARs are written ("": os.TempDir()).
	TempDir string
	// Budget bounds the bytes of TempDir in use: a JAR reserves its
	// Content-Length (MaxBytes when the server sends none) before its
	// body is read, until Close. nil: unbounded.
	Budget *spool.Budget
	// UserAgent of the requests.
	UserAgent string
	// MaxKnown bounds the URIs whose ETag or Last-Modified is remembered
	// (default 1024), oldest out first.
	MaxKnown int
}

// Stats count what a Fetcher did.
type Stats struct {
	// Requests are the GETs sent (redirects not counted), Downloads the
	// bodies read to the end, NotModified the 304 answers.
	Requests, Downloads, NotModified atomic.Int64
}

// Fetcher fetches JARs over http and https.
type Fetcher struct {
	opts   Options
	client *http.Client
	Stats  Stats

	mu    sync.Mutex
	known map[string]known
	order []string
}

// known is what a URI served last time.
type known struct {
	etag, lastModified, sha256 string
	size                       int64
}

// New returns a Fetcher.
func New(o Options) (*Fetcher, error) {
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxRedirects <= 0 {
		o.MaxRedirects = DefaultMaxRedirects
	}
	if o.MaxKnown <= 0 {
		o.MaxKnown = defaultMaxKnown
	}
	roots, err := x509.SystemCertPool()
	if err != nil {
		roots = x509.NewCertPool()
	}
	if o.CAFile != "" {
		pem, err := os.ReadFile(o.CAFile)
		if err != nil {
			return nil, fmt.Errorf("job JAR CA file: %w", err)
		}
		if !roots.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("job JAR CA file %s: no PEM certificate in it", o.CAFile)
		}
	}
	dialer := &net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}
	if !o.AnyHost {
		dialer.Control = refuseRestricted
	}
	tr := &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		TLSClientConfig:       &tls.Config{RootCAs: roots, MinVersion: tls.VersionTLS12},
		TLSHandshakeTimeout:   10 * time.Second,
		ResponseHeaderTimeout: 30 * time.Second,
		MaxIdleConnsPerHost:   2,
		IdleConnTimeout:       90 * time.Second,
		ForceAttemptHTTP2:     true,
	}
	f := &Fetcher{opts: o, known: map[string]known{}}
	f.client = &http.Client{Transport: tr, CheckRedirect: f.checkRedirect}
	return f, nil
}

// checkRedirect bounds the redirects, follows http and https only, and
// drops every header the first request carried for the jarURI's own host
// when a redirect leads to another host (net/http drops Authorization and
// Cookie itself; the session job's custom headers are dropped here).
func (f *Fetcher) checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) > f.opts.MaxRedirects {
		return fmt.Errorf("more than %d redirects", f.opts.MaxRedirects)
	}
	if req.URL.Scheme != "http" && req.URL.Scheme != "https" {
		return fmt.Errorf("redirect to %s: only http and https are followed", redact(req.URL))
	}
	if req.URL.Host != via[0].URL.Host {
		for k := range req.Header {
			if k != "User-Agent" {
				req.Header.Del(k)
			}
		}
	}
	return nil
}

// refuseRestricted refuses, after name resolution, addresses a webhook
// has no business fetching a tenant's URL from.
func refuseRestricted(_, address string, _ syscall.RawConn) error {
	host, _, err := net.SplitHostPort(address)
	if err != nil {
		return fmt.Errorf("%w: %s: %w", ErrAddress, address, err)
	}
	ip := net.ParseIP(host)
	if ip == nil {
		return fmt.Errorf("%w: %s is not an IP address", ErrAddress, host)
	}
	if ip.IsLoopback() || ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast() || ip.IsMulticast() || ip.IsUnspecified() || ip.IsInterfaceLocalMulticast() {
		return fmt.Errorf("%w: %s is a loopback, link-local, multicast or unspecified address", ErrAddress, ip)
	}
	return nil
}

// JAR is a fetched JAR. Path is "" when the server answered 304 to a
// conditional GET: the digest is the one it served before.
type JAR struct {
	URI    string
	Name   string // the file name, from the jarURI's path (Name)
	Path   string
	SHA256 string // hex
	Size   int64

	release func() // the budget's reservation for the file
}

// Close removes the file.
func (j *JAR) Close() error {
	if j == nil || j.Path == "" {
		return nil
	}
	err := os.Remove(j.Path)
	j.Path = ""
	if j.release != nil {
		j.release()
	}
	return err
}

// Fetch GETs the JAR at u with the headers h (sent to u's host only),
// within ctx. With conditional, a URI fetched before is asked with its
// ETag or Last-Modified, and a 304 returns the known digest without a
// file. The caller closes the JAR.
func (f *Fetcher) Fetch(ctx context.Context, u *url.URL, h http.Header, conditional bool) (*JAR, error) {
	uri := u.String()
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("fetch %s: scheme %q: only http and https are fetched", redact(u), u.Scheme)
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, uri, nil)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", redact(u), err)
	}
	for k, vs := range h {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	if f.opts.UserAgent != "" {
		req.Header.Set("User-Agent", f.opts.UserAgent)
	}
	f.mu.Lock()
	k, isKnown := f.known[uri]
	f.mu.Unlock()
	if conditional && isKnown {
		if k.etag != "" {
			req.Header.Set("If-None-Match", k.etag)
		} else if k.lastModified != "" {
			req.Header.Set("If-Modified-Since", k.lastModified)
		}
	}
	f.Stats.Requests.Add(1)
	resp, err := f.client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", redact(u), scrub(err))
	}
	defer resp.Body.Close()
	name := Name(u)
	switch {
	case resp.StatusCode == http.StatusNotModified && conditional && isKnown:
		f.Stats.NotModified.Add(1)
		return &JAR{URI: uri, Name: name, SHA256: k.sha256, Size: k.size}, nil
	case resp.StatusCode != http.StatusOK:
		return nil, &StatusError{URI: redact(u), Status: resp.StatusCode}
	}
	if resp.ContentLength > f.opts.MaxBytes {
		return nil, fmt.Errorf("fetch %s: %w: the server says %s, the limit is %s", redact(u), ErrTooLarge, Size(resp.ContentLength), Size(f.opts.MaxBytes))
	}
	want := resp.ContentLength
	if want < 0 {
		want = f.opts.MaxBytes
	}
	release, err := f.opts.Budget.Reserve(ctx, want, "the job JAR "+redact(u))
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", redact(u), err)
	}
	j, err := f.spool(resp.Body, u)
	if err != nil {
		release()
		return nil, err
	}
	j.release = release
	j.Name = name
	f.Stats.Downloads.Add(1)
	f.remember(uri, known{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"), sha256: j.SHA256, size: j.Size})
	return j, nil
}

// spool writes the body to a temporary file while hashing it.
func (f *Fetcher) spool(body io.Reader, u *url.URL) (*JAR, error) {
	tmp, err := os.CreateTemp(f.opts.TempDir, "jobjar-*.jar")
	if err != nil {
		return nil, fmt.Errorf("fetch %s: %w", redact(u), err)
	}
	h := sha256.New()
	n, err := io.Copy(io.MultiWriter(tmp, h), io.LimitReader(body, f.opts.MaxBytes+1))
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	switch {
	case err != nil:
		err = fmt.Errorf("fetch %s: read the body after %s: %w", redact(u), Size(n), scrub(err))
	case n > f.opts.MaxBytes:
		err = fmt.Errorf("fetch %s: %w: more than %s read, the limit is %s", redact(u), ErrTooLarge, Size(f.opts.MaxBytes), Size(f.opts.MaxBytes))
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return nil, err
	}
	return &JAR{URI: u.String(), Path: tmp.Name(), SHA256: hex.EncodeToString(h.Sum(nil)), Size: n}, nil
}

// remember keeps a URI's validators; a response without either is not
// kept (nothing to ask with next time).
func (f *Fetcher) remember(uri string, k known) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if k.etag == "" && k.lastModified == "" {
		delete(f.known, uri)
		return
	}
	if _, ok := f.known[uri]; !ok {
		f.order = append(f.order, uri)
	}
	f.known[uri] = k
	for len(f.order) > f.opts.MaxKnown {
		delete(f.known, f.order[0])
		f.order = f.order[1:]
	}
}

// MaxBytes is the size limit in force.
func (f *Fetcher) MaxBytes() int64 { return f.opts.MaxBytes }

// Size renders a byte count for messages: "512 MiB", "1.5 KiB", "17 bytes".
func Size(n int64) string {
	if n < 1024 {
		return strconv.FormatInt(n, 10) + " bytes"
	}
	v, unit := float64(n)/1024, "KiB"
	for _, u := range []string{"MiB", "GiB", "TiB"} {
		if v < 1024 {
			break
		}
		v, unit = v/1024, u
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64) + " " + unit
}
