package webhook

import (
	"archive/tar"
	"archive/zip"
	"bufio"
	"bytes"
	"compress/gzip"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/tarball"
	"github.com/google/go-containerregistry/pkg/v1/types"
	kflate "github.com/klauspost/compress/flate"
	kgzip "github.com/klauspost/compress/gzip"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// Tests of record of what the webhook does with hostile clients: slow
// ones, oversized header blocks, bodies that are no review, HTTP/2 floods
// against the real TLS server, and images built to exhaust the reader
// (decompression bombs). docs/webhook-reference.md, "What a client can send", lists
// the bounds these tests hold.

// seen wraps the server's handler: the requests that reached it, how
// many at once at most, and the status each was answered with.
type seen struct {
	calls, now, most atomic.Int64
	mu               sync.Mutex
	codes            map[int]int
}

func (s *seen) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.calls.Add(1)
		raiseTo(&s.most, s.now.Add(1))
		defer s.now.Add(-1)
		rec := &statusOf{ResponseWriter: w, code: http.StatusOK}
		next.ServeHTTP(rec, r)
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.codes == nil {
			s.codes = map[int]int{}
		}
		s.codes[rec.code]++
	})
}

func (s *seen) answered() map[int]int {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[int]int{}
	for k, v := range s.codes {
		out[k] = v
	}
	return out
}

type statusOf struct {
	http.ResponseWriter
	code int
}

func (s *statusOf) WriteHeader(code int) { s.code = code; s.ResponseWriter.WriteHeader(code) }

// dialTLS opens a TLS connection to the server offering protos by ALPN.
func (s *server) dialTLS(t testing.TB, protos ...string) *tls.Conn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: 10 * time.Second}, "tcp", s.addr,
		&tls.Config{RootCAs: s.pki.caPool, ServerName: "127.0.0.1", NextProtos: protos, MinVersion: tls.VersionTLS12})
	require.NoError(t, err)
	t.Cleanup(func() { conn.Close() })
	if len(protos) > 0 {
		require.Equal(t, protos[0], conn.ConnectionState().NegotiatedProtocol)
	}
	return conn
}

// TestServerDefaults: the server as NewServer builds it from a Config
// that sets none of the bounds, and from one that sets the timeouts.
func TestServerDefaults(t *testing.T) {
	p := newPKI(t, t.TempDir(), "defaults")
	p.write(t, time.Now())
	certs, err := NewCertReloader(p.certFile, p.keyFile)
	require.NoError(t, err)
	srv, err := NewServer(Config{Cache: verdict.New(verdict.Options{})}, certs)
	require.NoError(t, err)
	assert.Equal(t, 5*time.Second, srv.ReadHeaderTimeout)
	assert.Equal(t, 15*time.Second, srv.ReadTimeout)
	assert.Equal(t, DefaultTimeout+10*time.Second, srv.WriteTimeout)
	assert.Equal(t, 90*time.Second, srv.IdleTimeout)
	assert.Equal(t, 64<<10, srv.MaxHeaderBytes)
	require.NotNil(t, srv.HTTP2)
	assert.Equal(t, 250, srv.HTTP2.MaxConcurrentStreams)
	assert.Equal(t, uint16(tls.VersionTLS12), srv.TLSConfig.MinVersion)

	srv, err = NewServer(Config{Cache: verdict.New(verdict.Options{}), ReadHeaderTimeout: 200 * time.Millisecond, ReadTimeout: time.Second}, certs)
	require.NoError(t, err)
	assert.Equal(t, 200*time.Millisecond, srv.ReadHeaderTimeout)
	assert.Equal(t, time.Second, srv.ReadTimeout)
}

// Short timeouts of the slow-client tests, and how long the slow clients
// would keep going if nobody cut them off (well past both).
const (
	slowHeaderTimeout = 200 * time.Millisecond
	slowReadTimeout   = 500 * time.Millisecond
	slowFor           = 6 * time.Second
	// cutWithin is the generous bound on when the server must have cut a
	// slow client: past both timeouts, well before slowFor (and before
	// the 5 s default header timeout, which a server that ignored the
	// configured one would apply).
	cutWithin = 3 * time.Second
)

// errStillOpen is drip's error when slowFor has passed.
var errStillOpen = errors.New("still open after " + slowFor.String())

// drip writes data to conn one byte every 50 ms (repeating the last
// line for ever once data is done) until a write fails, stop closes, or
// slowFor has passed.
func drip(conn net.Conn, data, then string, stop <-chan struct{}) error {
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	end := time.After(slowFor)
	for i := 0; ; i++ {
		b := then[i%len(then)]
		if i < len(data) {
			b = data[i]
		}
		if _, err := conn.Write([]byte{b}); err != nil {
			return err
		}
		select {
		case <-tick.C:
		case <-stop:
			return nil
		case <-end:
			return errStillOpen
		}
	}
}

// cut reads conn until the server closes it and returns what it sent
// and how long after start it closed; it gives up after slowFor.
func cut(conn net.Conn, start time.Time) (string, time.Duration, error) {
	_ = conn.SetReadDeadline(start.Add(slowFor + time.Second))
	b, err := io.ReadAll(conn)
	var nerr net.Error
	if errors.As(err, &nerr) && nerr.Timeout() {
		return string(b), time.Since(start), err
	}
	return string(b), time.Since(start), nil // EOF or reset: closed by the server
}

// TestSlowClients: with a 200 ms header timeout and a 500 ms read
// timeout, a client that never starts its TLS handshake, one that sends
// its headers a byte at a time and one that sends its body a byte at a
// time are each cut off (the connection closed) well before they are
// done, past the timeout that applies to them; the first two never reach
// the handler (the second is answered 400 by net/http), the third's
// review is answered with an error (400, the body could not be read),
// never judged.
func TestSlowClients(t *testing.T) {
	var h seen
	s := startWrapped(t, Config{ReadHeaderTimeout: slowHeaderTimeout, ReadTimeout: slowReadTimeout}, nil, h.wrap)
	body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment("127.0.0.1:1/flink:never", "v2_2", ""))

	t.Run("no TLS handshake", func(t *testing.T) {
		conn, err := net.Dial("tcp", s.addr)
		require.NoError(t, err)
		defer conn.Close()
		start := time.Now()
		got, took, err := cut(conn, start)
		require.NoError(t, err, "the server kept a silent connection open")
		assert.Empty(t, got)
		assert.Less(t, took, cutWithin)
		assert.GreaterOrEqual(t, took, slowHeaderTimeout/2)
		t.Logf("closed after %s", took.Round(time.Millisecond))
	})
	t.Run("headers a byte at a time", func(t *testing.T) {
		before := h.calls.Load()
		conn := s.dialTLS(t, "http/1.1")
		start := time.Now()
		stop := make(chan struct{})
		wrote := make(chan error, 1)
		go func() {
			wrote <- drip(conn, "POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\n", "X-Slow: a\r\n", stop)
		}()
		got, took, err := cut(conn, start)
		close(stop)
		require.NoError(t, err, "the server kept reading headers for %s", slowFor)
		assert.NotErrorIs(t, <-wrote, errStillOpen)
		// net/http answers 400 itself (a TLS read's timeout is no
		// plain net.Error to it); the handler never sees the request.
		if got != "" {
			assert.True(t, strings.HasPrefix(got, "HTTP/1.1 400 Bad Request\r\n"), "%q", got)
		}
		assert.Less(t, took, cutWithin)
		// The server's header clock starts when it has the client's
		// Finished, which the client sends before its handshake returns and
		// start is taken: on a loaded machine start comes some milliseconds
		// late (196 ms measured under the race detector in CI), so the
		// bound is half the timeout, as for the silent connection.
		assert.GreaterOrEqual(t, took, slowHeaderTimeout/2)
		assert.Equal(t, before, h.calls.Load(), "the handler never ran")
		t.Logf("closed after %s, answered %q", took.Round(time.Millisecond), strings.SplitN(got, "\r\n", 2)[0])
	})
	t.Run("body a byte at a time", func(t *testing.T) {
		before := h.answered()
		conn := s.dialTLS(t, "http/1.1")
		start := time.Now()
		stop := make(chan struct{})
		wrote := make(chan error, 1)
		head := fmt.Sprintf("POST /validate HTTP/1.1\r\nHost: webhook\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", len(body))
		go func() {
			if _, err := io.WriteString(conn, head); err != nil {
				wrote <- err
				return
			}
			wrote <- drip(conn, string(body), " ", stop)
		}()
		got, took, err := cut(conn, start)
		close(stop)
		assert.NotErrorIs(t, <-wrote, errStillOpen)
		require.NoError(t, err, "the server kept reading the body for %s", slowFor)
		assert.Less(t, took, cutWithin)
		assert.GreaterOrEqual(t, took, slowReadTimeout*4/5) // its clock starts before start, as for the headers
		if got != "" {
			resp, err := http.ReadResponse(bufio.NewReader(strings.NewReader(got)), nil)
			require.NoError(t, err, "%q", got)
			b, _ := io.ReadAll(resp.Body)
			assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "%s", b)
			assert.Contains(t, string(b), "read the review")
		}
		after := h.answered()
		assert.Equal(t, before[http.StatusOK], after[http.StatusOK], "no review was answered")
		assert.Equal(t, before[http.StatusBadRequest]+1, after[http.StatusBadRequest], "the handler answered 400: %v", after)
		t.Logf("closed after %s, answered %q", took.Round(time.Millisecond), strings.SplitN(got, "\r\n", 2)[0])
	})
	t.Run("HTTP/2 body a byte at a time", func(t *testing.T) {
		before := h.answered()
		c := s.dialH2(t)
		block := c.block([2]string{":method", "POST"}, [2]string{":scheme", "https"}, [2]string{":authority", "webhook"},
			[2]string{":path", "/validate"}, [2]string{"content-type", "application/json"}, [2]string{"content-length", fmt.Sprint(len(body))})
		start := time.Now()
		require.NoError(t, c.writeHeaders(1, block, false))
		ended := make(chan h2event, 1)
		go func() {
			ended <- c.waitFor(t, func(e h2event) bool { return e.status != "" || e.reset || e.goAway || e.closed }, slowFor)
		}()
		var ev h2event
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
	drip:
		for i := 0; ; i++ {
			select {
			case ev = <-ended:
				break drip
			case <-tick.C:
				require.Less(t, time.Since(start), slowFor, "the server kept reading the body for %s", slowFor)
				_ = c.write(func() error { return c.fr.WriteData(1, false, body[i%len(body):i%len(body)+1]) })
			}
		}
		took := time.Since(start)
		t.Logf("stream ended after %s: status %q, reset %v, GOAWAY %v, %s", took.Round(time.Millisecond), ev.status, ev.reset, ev.goAway, ev.code)
		assert.Less(t, took, cutWithin)
		assert.GreaterOrEqual(t, took, slowReadTimeout)
		if ev.status != "" {
			assert.Equal(t, "400", ev.status)
		}
		after := h.answered()
		assert.Equal(t, before[http.StatusOK], after[http.StatusOK], "no review was answered")
	})
}

// TestOversizedHeaders: a header block larger than MaxHeaderBytes (and
// net/http's 4 KiB of slack) is answered 431, over HTTP/1.1 and HTTP/2,
// without reaching the handler; one of half that size is served.
func TestOversizedHeaders(t *testing.T) {
	var h seen
	s := startWrapped(t, Config{}, nil, h.wrap)
	// 4 KiB fields: 18 of them (72 KiB) are past the bound, 8 (32 KiB) not.
	fields := func(n int) [][2]string {
		var out [][2]string
		for i := range n {
			out = append(out, [2]string{fmt.Sprintf("x-big-%02d", i), strings.Repeat("a", 4<<10)})
		}
		return out
	}
	t.Run("HTTP/1.1", func(t *testing.T) {
		for _, tc := range []struct {
			n    int
			code int
		}{{18, http.StatusRequestHeaderFieldsTooLarge}, {8, http.StatusOK}} {
			before := h.calls.Load()
			req, err := http.NewRequest(http.MethodGet, s.url+"/healthz", nil)
			require.NoError(t, err)
			for _, f := range fields(tc.n) {
				req.Header.Set(f[0], f[1])
			}
			resp, err := s.client.Do(req) // HTTP/1.1: its own TLS config, no h2
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			assert.Equal(t, "HTTP/1.1", resp.Proto)
			assert.Equal(t, tc.code, resp.StatusCode, "%d KiB of headers", tc.n*4)
			ran := h.calls.Load() - before
			if tc.code == http.StatusOK {
				assert.Equal(t, int64(1), ran, "served by the handler")
			} else {
				assert.Zero(t, ran, "the handler never ran")
			}
		}
	})
	t.Run("HTTP/2", func(t *testing.T) {
		for _, tc := range []struct {
			n    int
			code string
		}{{18, "431"}, {8, "200"}} {
			before := h.calls.Load()
			c := s.dialH2(t)
			block := c.block(append([][2]string{{":method", "GET"}, {":scheme", "https"}, {":authority", "webhook"}, {":path", "/healthz"}}, fields(tc.n)...)...)
			require.NoError(t, c.writeHeaders(1, block, true))
			ev := c.waitFor(t, func(e h2event) bool { return e.status != "" || e.goAway || e.closed }, 10*time.Second)
			assert.Equal(t, tc.code, ev.status, "%d KiB of headers: %+v", tc.n*4, ev)
			if tc.code == "431" {
				assert.Equal(t, before, h.calls.Load(), "the handler never ran")
			}
		}
	})
}

// h2client speaks HTTP/2 frames on a TLS connection (ALPN h2), as a
// hostile client would: nothing is checked on the way out. Frames read
// are reported as events.
type h2client struct {
	conn   *tls.Conn
	mu     sync.Mutex // writes
	w      *bufio.Writer
	fr     *http2.Framer
	enc    *hpack.Encoder
	buf    bytes.Buffer
	events chan h2event
	sent   atomic.Int64 // bytes written
}

// h2event is a frame the server sent, or the connection's end.
type h2event struct {
	stream  uint32
	status  string // :status of a response's HEADERS
	reset   bool   // RST_STREAM
	goAway  bool
	code    http2.ErrCode // of RST_STREAM or GOAWAY
	closed  bool          // the connection ended (err)
	err     error
	lastID  uint32 // GOAWAY's last stream
	at      time.Time
	sentNow int64 // bytes the client had written by then
}

func (s *server) dialH2(t testing.TB) *h2client {
	t.Helper()
	conn := s.dialTLS(t, "h2")
	c := &h2client{conn: conn, events: make(chan h2event, 1<<16)}
	c.w = bufio.NewWriterSize(&countingWriter{w: conn, n: &c.sent}, 64<<10)
	c.fr = http2.NewFramer(c.w, conn)
	c.fr.ReadMetaHeaders = hpack.NewDecoder(4096, nil)
	c.enc = hpack.NewEncoder(&c.buf)
	_, err := c.w.WriteString(http2.ClientPreface)
	require.NoError(t, err)
	require.NoError(t, c.write(func() error { return c.fr.WriteSettings() }))
	go c.read()
	return c
}

type countingWriter struct {
	w io.Writer
	n *atomic.Int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if c.n != nil {
		c.n.Add(int64(n))
	}
	return n, err
}

// write runs f (framer writes) and flushes, under the write lock.
func (c *h2client) write(f func() error) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if err := f(); err != nil {
		return err
	}
	return c.w.Flush()
}

func (c *h2client) read() {
	defer close(c.events)
	for {
		f, err := c.fr.ReadFrame()
		ev := h2event{at: time.Now(), sentNow: c.sent.Load()}
		if err != nil {
			ev.closed, ev.err = true, err
			c.events <- ev
			return
		}
		ev.stream = f.Header().StreamID
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				_ = c.write(func() error { return c.fr.WriteSettingsAck() })
			}
			continue
		case *http2.MetaHeadersFrame:
			ev.status = f.PseudoValue("status")
		case *http2.RSTStreamFrame:
			ev.reset, ev.code = true, f.ErrCode
		case *http2.GoAwayFrame:
			ev.goAway, ev.code, ev.lastID = true, f.ErrCode, f.LastStreamID
		default:
			continue
		}
		select {
		case c.events <- ev:
		default: // nobody listens this far back
		}
	}
}

// waitFor returns the first event that match says, failing the test
// after within.
func (c *h2client) waitFor(t testing.TB, match func(h2event) bool, within time.Duration) h2event {
	t.Helper()
	end := time.After(within)
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				t.Fatalf("the connection ended before the event")
			}
			if match(ev) {
				return ev
			}
		case <-end:
			t.Fatalf("no such event within %s", within)
		}
	}
}

// block encodes header fields as an HPACK block (literals, never indexed:
// the server's table does not grow).
func (c *h2client) block(fields ...[2]string) []byte {
	c.buf.Reset()
	for _, f := range fields {
		_ = c.enc.WriteField(hpack.HeaderField{Name: f[0], Value: f[1], Sensitive: true})
	}
	return bytes.Clone(c.buf.Bytes())
}

// writeHeaders sends a header block as HEADERS and CONTINUATION frames of
// at most 16 KiB.
func (c *h2client) writeHeaders(stream uint32, block []byte, endStream bool) error {
	const frame = 16 << 10
	return c.write(func() error {
		first := block[:min(len(block), frame)]
		rest := block[len(first):]
		if err := c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: stream, BlockFragment: first, EndStream: endStream, EndHeaders: len(rest) == 0}); err != nil {
			return err
		}
		for len(rest) > 0 {
			n := min(len(rest), frame)
			if err := c.fr.WriteContinuation(stream, n == len(rest), rest[:n]); err != nil {
				return err
			}
			rest = rest[n:]
		}
		return nil
	})
}

// endless reads n bytes of c without holding them; read counts them.
type endless struct {
	c    byte
	n    int64
	read atomic.Int64
}

func (e *endless) Read(p []byte) (int, error) {
	left := e.n - e.read.Load()
	if left <= 0 {
		return 0, io.EOF
	}
	p = p[:min(int64(len(p)), left)]
	for i := range p {
		p[i] = e.c
	}
	e.read.Add(int64(len(p)))
	return len(p), nil
}

// TestHostileBodies: requests to /validate whose body is no review are
// answered 4xx, each within the review timeout, whatever the body: the
// server reads at most maxBody (7 MiB) of it, does not inflate it, and
// judges nothing. Two hostile reviews are answered as reviews.
func TestHostileBodies(t *testing.T) {
	var h seen
	s := startWrapped(t, Config{}, nil, h.wrap)
	const v1 = `"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"`
	nested := func(depth int) string { return strings.Repeat("[", depth) + strings.Repeat("]", depth) }
	valid := reviewOf(t, "Pod", admissionv1.Create, map[string]any{"apiVersion": "v1", "kind": "Pod"})
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(valid)
	_ = zw.Close()
	manyKeys := func(n int) string {
		var b strings.Builder
		b.WriteString(`{` + v1 + `,"request":{"uid":"u","object":{`)
		for i := range n {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"k%d":0`, i)
		}
		b.WriteString(`}}}`)
		return b.String()
	}
	for _, tc := range []struct {
		name     string
		ctype    string
		encoding string
		body     func() io.Reader
		size     int64 // Content-Length; -1: chunked
		code     int
		text     string
	}{
		{name: "not JSON", body: str("{kind: x"), code: 400, text: "not an AdmissionReview"},
		{name: "binary", body: str("\x00\xff\xfe\x01PK\x03\x04"), code: 400, text: "not an AdmissionReview"},
		{name: "over the body limit, with its length", body: func() io.Reader { return &endless{c: ' ', n: maxBody + 1} }, size: maxBody + 1,
			code: 413, text: "larger than 7340032 bytes"},
		{name: "1 GiB, chunked", body: func() io.Reader { return &endless{c: ' ', n: 1 << 30} }, size: -1, code: 413, text: "larger than"},
		{name: "gzip-encoded review", encoding: "gzip", body: func() io.Reader { return bytes.NewReader(gz.Bytes()) }, code: 400, text: "not an AdmissionReview"},
		{name: "no Content-Type", ctype: "-", body: str(string(valid)), code: 415, text: "want application/json"},
		{name: "YAML", ctype: "application/yaml", body: str(string(valid)), code: 415, text: "want application/json"},
		{name: "nested 100,000 deep", body: str(`{` + v1 + `,"request":{"uid":"u","object":` + nested(100_000) + `}}`), code: 400, text: "exceeded max depth"},
		{name: "nested 100,000 deep at the top", body: str(nested(100_000)), code: 400, text: "exceeded max depth"},
		{name: "no request", body: str(`{` + v1 + `}`), code: 400, text: "no request"},
		{name: "no uid", body: str(`{` + v1 + `,"request":{"operation":"CREATE"}}`), code: 400, text: "no request.uid"},
		{name: "apiVersion v1beta1", body: str(`{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`),
			code: 400, text: "want admission.k8s.io/v1 AdmissionReview"},
		{name: "another kind", body: str(`{"apiVersion":"admission.k8s.io/v1","kind":"ConversionReview","request":{"uid":"u"}}`),
			code: 400, text: "want admission.k8s.io/v1 AdmissionReview"},
		// Reviews, answered as such: an object of 600,000 keys is no
		// workload (admitted); a Pod whose args nest 9,000 deep (below
		// encoding/json's 10,000) cannot be read (the failure policy).
		{name: "600,000 keys in the object", body: str(manyKeys(600_000)), code: 200, text: `"allowed":true`},
		{name: "a Pod nested 9,000 deep", body: str(`{` + v1 + `,"request":{"uid":"u","operation":"CREATE","kind":{"version":"v1","kind":"Pod"},"object":` +
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"x","args":` + nested(9000) + `}]}}}}`),
			code: 200, text: "the Pod object cannot be read"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := tc.body()
			req, err := http.NewRequest(http.MethodPost, s.url+"/validate", body)
			require.NoError(t, err)
			req.ContentLength = tc.size
			if tc.size == 0 {
				req.ContentLength = -1
				if b, ok := body.(*strings.Reader); ok {
					req.ContentLength = b.Size()
				}
			}
			switch tc.ctype {
			case "":
				req.Header.Set("Content-Type", "application/json")
			case "-":
			default:
				req.Header.Set("Content-Type", tc.ctype)
			}
			if tc.encoding != "" {
				req.Header.Set("Content-Encoding", tc.encoding)
			}
			start := time.Now()
			resp, err := s.client.Do(req)
			took := time.Since(start)
			if e, ok := body.(*endless); ok {
				t.Logf("the client sent %d bytes", e.read.Load())
				assert.Less(t, e.read.Load(), int64(maxBody+16<<20), "the server stopped reading past its limit")
			}
			if err != nil && tc.size == -1 {
				// The server answered and closed while the client still wrote:
				// the transport may report the write's error instead.
				t.Logf("%s: %v", took, err)
				return
			}
			require.NoError(t, err)
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			assert.Equal(t, tc.code, resp.StatusCode, "%s", b)
			assert.Contains(t, string(b), tc.text)
			assert.Less(t, took, DefaultTimeout, "answered within the review timeout")
			t.Logf("%d in %s: %s", resp.StatusCode, took.Round(time.Millisecond), strings.TrimSpace(string(b[:min(len(b), 160)])))
		})
	}
}

func str(s string) func() io.Reader { return func() io.Reader { return strings.NewReader(s) } }

// heapWatch samples the heap every 10 ms until stopped: the most it
// grew above where it was when the watch began.
type heapWatch struct {
	base uint64
	peak atomic.Uint64
	stop chan struct{}
	done chan struct{}
}

func watchHeap() *heapWatch {
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	w := &heapWatch{base: m.HeapAlloc, stop: make(chan struct{}), done: make(chan struct{})}
	w.peak.Store(m.HeapAlloc)
	go func() {
		defer close(w.done)
		tick := time.NewTicker(10 * time.Millisecond)
		defer tick.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-tick.C:
				var m runtime.MemStats
				runtime.ReadMemStats(&m)
				if m.HeapAlloc > w.peak.Load() {
					w.peak.Store(m.HeapAlloc)
				}
			}
		}
	}()
	return w
}

// end stops the watch: the peak growth, and what stays after a GC.
func (w *heapWatch) end() (peak, kept int64) {
	close(w.stop)
	<-w.done
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	return int64(w.peak.Load() - w.base), int64(m.HeapAlloc) - int64(w.base)
}

func mib(n int64) string { return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20)) }

// resetStorm opens n streams on one HTTP/2 connection, each a POST to
// /validate with the fields given, reset (RST_STREAM CANCEL) as soon as
// it is opened, and waits for the connection's end or a second of quiet.
func resetStorm(t *testing.T, s *server, n int, fields ...[2]string) (opened int, goAway *h2event, werr error) {
	t.Helper()
	c := s.dialH2(t)
	block := c.block(append([][2]string{{":method", "POST"}, {":scheme", "https"}, {":authority", "webhook"},
		{":path", "/validate"}, {"content-type", "application/json"}}, fields...)...)
	for i := range n {
		id := uint32(2*i + 1)
		c.mu.Lock()
		werr = c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: id, BlockFragment: block, EndHeaders: true})
		if werr == nil {
			werr = c.fr.WriteRSTStream(id, http2.ErrCodeCancel)
		}
		if werr == nil && i%100 == 99 {
			werr = c.w.Flush()
		}
		c.mu.Unlock()
		if werr != nil {
			break
		}
		opened++
	}
	if werr == nil {
		werr = c.write(func() error { return nil })
	}
	for {
		select {
		case ev, ok := <-c.events:
			if !ok {
				return opened, goAway, werr
			}
			if ev.goAway {
				goAway = &ev
			}
			if ev.closed {
				return opened, goAway, werr
			}
		case <-time.After(time.Second):
			return opened, goAway, werr
		}
	}
}

// TestHTTP2RapidReset: one connection opens 20,000 streams, each a POST
// to /validate reset as soon as it is opened (the "rapid reset" of
// CVE-2023-44487). The server bounds the handlers that run at once, not
// the handlers run: /validate ends as soon as its stream is reset (its
// body read fails), so each reset stream costs at most one short handler
// (thousands run; whether the server also ends the connection depends on
// how fast their goroutines end, so either is accepted). A handler slowed down (one that does not end on reset)
// shows the bound that holds then: at most MaxConcurrentStreams (250)
// run at once and at most that many run at all before the server ends the
// connection (GOAWAY ENHANCE_YOUR_CALM, once more than 4 x 250 reset
// streams wait for a handler). Either way the server stays responsive: a
// review on a new HTTP/2 connection is answered and admitted, and the
// heap keeps nothing of the attack.
func TestHTTP2RapidReset(t *testing.T) {
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good})
	var h seen
	slow := func(next http.Handler) http.Handler {
		return h.wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if r.Header.Get("x-test-slow") != "" {
				time.Sleep(2 * time.Second)
			}
			next.ServeHTTP(w, r)
		}))
	}
	s := startWrapped(t, Config{}, http.DefaultTransport, slow)
	const streams = 20_000
	for _, tc := range []struct {
		name   string
		fields [][2]string
		most   int64 // handlers run, at most
	}{
		{"the handler as it is", nil, streams},
		{"a handler that does not end on reset", [][2]string{{"x-test-slow", "1"}}, MaxConcurrentStreams},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := h.calls.Load()
			h.most.Store(0)
			heap := watchHeap()
			start := time.Now()
			opened, goAway, werr := resetStorm(t, s, streams, tc.fields...)
			// The handlers end, and no queued one starts any more: the
			// last subtest's connection must not run into the next's count
			// (under -race its queue drains for seconds).
			last, since := int64(-1), time.Now()
			require.Eventually(t, func() bool {
				if c := h.calls.Load(); c != last || h.now.Load() != 0 {
					last, since = c, time.Now()
					return false
				}
				return time.Since(since) > 500*time.Millisecond
			}, 60*time.Second, 10*time.Millisecond, "the handlers end")
			took := time.Since(start)
			peak, kept := heap.end()
			ran := h.calls.Load() - before
			ended := "none"
			if goAway != nil {
				ended = fmt.Sprintf("%s, last stream %d", goAway.code, goAway.lastID)
			}
			t.Logf("%d streams opened and reset in %s (write error: %v); handlers: %d run, at most %d at once; GOAWAY: %s; heap: peak +%s, after GC +%s",
				opened, took.Round(time.Millisecond), werr, ran, h.most.Load(), ended, mib(peak), mib(kept))
			assert.LessOrEqual(t, h.most.Load(), int64(MaxConcurrentStreams), "handlers at once")
			assert.LessOrEqual(t, ran, tc.most, "handlers run")
			if tc.fields != nil {
				require.NotNil(t, goAway, "the server ended the connection")
				assert.Equal(t, http2.ErrCodeEnhanceYourCalm, goAway.code)
			}
			assert.Less(t, kept, int64(64<<20), "heap kept after the attack")
		})
	}

	// Responsive: a review on a new HTTP/2 connection.
	client := s.pki.client()
	client.Transport.(*http.Transport).ForceAttemptHTTP2 = true
	body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(host+"/flink:good", "v2_2", ""))
	resp, err := client.Post(s.url+"/validate", "application/json", bytes.NewReader(body))
	require.NoError(t, err)
	defer resp.Body.Close()
	assert.Equal(t, "HTTP/2.0", resp.Proto)
	var out admissionv1.AdmissionReview
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.NotNil(t, out.Response)
	assert.True(t, out.Response.Allowed, "%+v", out.Response.Result)
}

// TestHTTP2ContinuationFlood: a HEADERS frame without END_HEADERS
// followed by CONTINUATION frames that never end it (CVE-2023-45288),
// 16 KiB each, up to 64 MiB. The server ends the connection (GOAWAY
// PROTOCOL_ERROR) once the header block is past what MaxHeaderBytes
// allows, before the client has sent 512 KiB; the handler never runs, the
// heap does not grow with what was sent, and the server answers a new
// connection.
func TestHTTP2ContinuationFlood(t *testing.T) {
	var h seen
	s := startWrapped(t, Config{}, nil, h.wrap)
	c := s.dialH2(t)
	head := c.block([2]string{":method", "POST"}, [2]string{":scheme", "https"}, [2]string{":authority", "webhook"},
		[2]string{":path", "/validate"}, [2]string{"content-type", "application/json"})
	// A CONTINUATION's fragment: 16 fields of 1,000 bytes, each a literal
	// the server must decode (and drop) to keep its HPACK state.
	var fields [][2]string
	for i := range 16 {
		fields = append(fields, [2]string{fmt.Sprintf("x-flood-%02d", i), strings.Repeat("f", 1000)})
	}
	frag := c.block(fields...)
	const limit = 64 << 20
	heap := watchHeap()
	start := time.Now()
	require.NoError(t, c.write(func() error {
		return c.fr.WriteHeaders(http2.HeadersFrameParam{StreamID: 1, BlockFragment: head, EndStream: true})
	}))
	var end *h2event
	var werr error
	for c.sent.Load() < limit && end == nil && werr == nil {
		werr = c.write(func() error { return c.fr.WriteContinuation(1, false, frag) })
		// Lockstep: the next frame goes once the server has read this one
		// (its TLS records are at least what was sent), so what was sent
		// when the connection ended is what the server had read, however
		// loaded the machine; a server that stops reading ends the wait.
		for wait := time.Now(); s.read.Load() < c.sent.Load() && time.Since(wait) < 2*time.Second && end == nil; {
			select {
			case ev, ok := <-c.events:
				if ok && (ev.goAway || ev.closed) {
					end = &ev
				}
			case <-time.After(200 * time.Microsecond):
			}
		}
		select {
		case ev, ok := <-c.events:
			if ok && (ev.goAway || ev.closed) {
				end = &ev
			}
		default:
		}
	}
	if end == nil {
		end = ptr(c.waitFor(t, func(e h2event) bool { return e.goAway || e.closed }, 10*time.Second))
	}
	took := time.Since(start)
	peak, kept := heap.end()
	t.Logf("connection ended after %s: GOAWAY %v %s (err %v), the client had sent %d KiB (write error: %v); heap: peak +%s, after GC +%s",
		took.Round(time.Millisecond), end.goAway, end.code, end.err, end.sentNow>>10, werr, mib(peak), mib(kept))
	if end.goAway {
		assert.Equal(t, http2.ErrCodeProtocol, end.code)
	}
	assert.Less(t, end.sentNow, int64(512<<10), "the server read on past its header bound")
	assert.Zero(t, h.calls.Load(), "the handler never ran")
	assert.Less(t, peak, int64(32<<20), "heap growth while flooded")

	// The server answers a new connection.
	c2 := s.dialH2(t)
	require.NoError(t, c2.writeHeaders(1, c2.block([2]string{":method", "GET"}, [2]string{":scheme", "https"},
		[2]string{":authority", "webhook"}, [2]string{":path", "/healthz"}), true))
	ev := c2.waitFor(t, func(e h2event) bool { return e.status != "" || e.goAway || e.closed }, 10*time.Second)
	assert.Equal(t, "200", ev.status)
}

func ptr[T any](v T) *T { return &v }

// tarLayer is an uncompressed layer of the files given (path: content),
// in that order.
func tarLayer(t testing.TB, files ...any) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	for i := 0; i < len(files); i += 2 {
		data := files[i+1].([]byte)
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(files[i].(string), "/"), Mode: 0o644, Size: int64(len(data)),
			Typeflag: tar.TypeReg, ModTime: time.Unix(1700000000, 0)}))
		_, err := tw.Write(data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	return static.NewLayer(b.Bytes(), types.OCIUncompressedLayer)
}

// zeroBomb is a gzip layer (about 1 MiB) holding one file of size zero
// bytes at path: what a registry serves and the reader inflates.
func zeroBomb(t testing.TB, path string, size int64) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	zw, err := kgzip.NewWriterLevel(&b, kgzip.BestSpeed)
	require.NoError(t, err)
	tw := tar.NewWriter(zw)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(path, "/"), Mode: 0o644, Size: size, Typeflag: tar.TypeReg,
		ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}))
	_, err = io.Copy(tw, io.LimitReader(zeros{}, size))
	require.NoError(t, err)
	require.NoError(t, tw.Close())
	require.NoError(t, zw.Close())
	gz := b.Bytes()
	l, err := tarball.LayerFromOpener(func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(gz)), nil })
	require.NoError(t, err)
	return l
}

// lyingJAR is a JAR whose entries declare sizes they do not have: each
// says it inflates to 3 GiB (a ZIP64 size) and holds a few bytes; its
// manifest is a valid one, its class a few bytes of zeros.
func lyingJAR(t testing.TB) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for _, e := range []struct{ name, data string }{
		{"META-INF/MANIFEST.MF", "Manifest-Version: 1.0\r\nImplementation-Version: 1.0\r\n\r\n"},
		{"com/example/Liar.class", "\x00\x00\x00\x00"},
	} {
		raw := deflated(t, []byte(e.data))
		w, err := zw.CreateRaw(&zip.FileHeader{Name: e.name, Method: zip.Deflate, CRC32: crc32.ChecksumIEEE([]byte(e.data)),
			CompressedSize64: uint64(len(raw)), UncompressedSize64: 3 << 30})
		require.NoError(t, err)
		_, err = w.Write(raw)
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// manifestBomb is a JAR whose manifest inflates to 256 MiB (a line of
// 'a' that never ends; about 256 KiB deflated) and declares it does in
// its directory, or, lying, declares 200 bytes.
func manifestBomb(t testing.TB, lying bool) []byte {
	t.Helper()
	const size = 256 << 20
	var raw bytes.Buffer
	fw, err := kflate.NewWriter(&raw, kflate.BestSpeed)
	require.NoError(t, err)
	sum := crc32.NewIEEE()
	_, err = io.Copy(io.MultiWriter(fw, sum), &endless{c: 'a', n: size})
	require.NoError(t, err)
	require.NoError(t, fw.Close())
	declared := uint64(size)
	if lying {
		declared = 200
	}
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	w, err := zw.CreateRaw(&zip.FileHeader{Name: "META-INF/MANIFEST.MF", Method: zip.Deflate, CRC32: sum.Sum32(),
		CompressedSize64: uint64(raw.Len()), UncompressedSize64: declared})
	require.NoError(t, err)
	_, err = w.Write(raw.Bytes())
	require.NoError(t, err)
	require.NoError(t, zw.Close())
	return b.Bytes()
}

// manyEntriesJAR is a JAR of n empty stored entries (class files by name).
func manyEntriesJAR(t testing.TB, n int) []byte {
	t.Helper()
	var b bytes.Buffer
	zw := zip.NewWriter(&b)
	for i := range n {
		_, err := zw.CreateHeader(&zip.FileHeader{Name: fmt.Sprintf("com/example/many/p%03d/C%06d.class", i%1000, i), Method: zip.Store})
		require.NoError(t, err)
	}
	require.NoError(t, zw.Close())
	return b.Bytes()
}

func deflated(t testing.TB, data []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	fw, err := kflate.NewWriter(&b, kflate.BestCompression)
	require.NoError(t, err)
	_, err = fw.Write(data)
	require.NoError(t, err)
	require.NoError(t, fw.Close())
	return b.Bytes()
}

// truncatedJARLayer is a layer whose tar header says the JAR at path is
// claimed bytes long while the layer ends after held bytes of it.
func truncatedJARLayer(t testing.TB, path string, claimed, held int64) v1.Layer {
	t.Helper()
	var b bytes.Buffer
	tw := tar.NewWriter(&b)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(path, "/"), Mode: 0o644, Size: claimed, Typeflag: tar.TypeReg,
		ModTime: time.Unix(1700000000, 0)}))
	_, err := io.Copy(tw, io.LimitReader(zeros{}, held))
	require.NoError(t, err)
	return static.NewLayer(b.Bytes(), types.OCIUncompressedLayer) // no end: the tar stops in the middle of the file
}

// imagesOn pushes, for each label, the good image with the label's layer
// on top to a loopback registry that serves generated layers
// (*bigJARLayer) from their generators.
func imagesOn(t testing.TB, layers map[string]v1.Layer) map[string]string {
	t.Helper()
	blobs := &bigBlobs{mem: registry.NewInMemoryBlobHandler(), big: map[v1.Hash]*bigJARLayer{}}
	for _, l := range layers {
		if g, ok := l.(*bigJARLayer); ok {
			blobs.big[g.digest] = g
		}
	}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(blobs)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	refs := map[string]string{}
	for label, layer := range layers {
		img, err := mutate.Append(shared(t).good, mutate.Addendum{Layer: layer})
		require.NoError(t, err)
		ref, err := name.ParseReference(host + "/flink:" + label)
		require.NoError(t, err)
		require.NoError(t, remote.Write(ref, img))
		refs[label] = ref.String()
	}
	return refs
}

// TestDecompressionBombs: images built to exhaust the reader, each
// reviewed alone by a server with the default spool budget (1.5 GiB) and
// review timeout (8 s), under failure policy Fail. Each is answered
// within the review timeout as the case says, with the heap's growth
// while it is read under 128 MiB (generous: what is read is streamed or
// bounded; a reader that held a bomb's inflated bytes would pass it) and
// the spool budget's peak at most the budget; nothing is reserved after.
func TestDecompressionBombs(t *testing.T) {
	const lib = "/opt/flink/lib/"
	const perFile = 2 << 30 // a layer's file, at most (internal/image)
	begin := time.Now()
	layers := map[string]v1.Layer{
		"under-limit":      newBigJARLayer(t, lib+"huge-udfs.jar", perFile-4096),
		"over-limit":       newBigJARLayer(t, lib+"huge-udfs.jar", perFile+1),
		"truncated":        truncatedJARLayer(t, lib+"claims-100m.jar", 100<<20, 1<<20),
		"lying-sizes":      tarLayer(t, lib+"liar.jar", lyingJAR(t)),
		"manifest-bomb":    tarLayer(t, lib+"manifest-bomb.jar", manifestBomb(t, false)),
		"manifest-lies":    tarLayer(t, lib+"manifest-bomb.jar", manifestBomb(t, true)),
		"zeros-outside":    zeroBomb(t, "/opt/data/zeros.bin", 1<<30),
		"zeros-jar-in-lib": zeroBomb(t, lib+"zeros.jar", 512<<20),
		"many-entries":     tarLayer(t, lib+"many-classes.jar", manyEntriesJAR(t, 300_000)),
	}
	refs := imagesOn(t, layers)
	t.Logf("images built and pushed in %s", time.Since(begin).Round(time.Millisecond))
	const policy = "failure policy Fail"
	for _, tc := range []struct {
		label   string
		allowed bool
		policy  bool     // answered by the failure policy (else judged)
		text    []string // in the answer
		// slow: a machine too loaded to inflate it within the review
		// timeout answers by the failure policy instead (not verified
		// within), which is as good.
		slow bool
	}{
		// A JAR just under the per-file limit: larger than the whole budget,
		// refused before a byte is spooled.
		{"under-limit", false, true, []string{lib + "huge-udfs.jar needs 2.0Gi on disk while it is read, more than the whole budget of 1.5Gi (--spool-budget)"}, false},
		// Just over it: an unsafe layer, refused by the rules, unread.
		{"over-limit", false, false, []string{"unsafe layer entry: " + lib + "huge-udfs.jar is 2147483649 bytes, more than this tool reads"}, false},
		// The tar says 100 MiB, the layer ends after 1 MiB: the image cannot
		// be read; the 100 MiB reserved are given back.
		{"truncated", false, true, []string{lib + "claims-100m.jar: spool: unexpected EOF"}, false},
		// Entries that declare 3 GiB each: refused unread.
		{"lying-sizes", false, false, []string{lib + "liar.jar: cannot read this JAR", "META-INF/MANIFEST.MF declares 3221225472 bytes, more than the 16777216 this tool reads"}, false},
		// A manifest that inflates to the 256 MiB it declares: refused unread.
		{"manifest-bomb", false, false, []string{"META-INF/MANIFEST.MF declares 268435456 bytes, more than the 16777216 this tool reads"}, false},
		// One that declares 200 bytes: 200 bytes are read (no StreamFusion
		// content: admitted).
		{"manifest-lies", true, false, nil, false},
		// 1 GiB of zeros in a 1 MiB gzip layer, outside lib: inflated and
		// passed over, nothing kept.
		{"zeros-outside", true, false, nil, true},
		// 512 MiB of zeros as a JAR in lib: spooled inside the budget, then
		// refused as no ZIP.
		{"zeros-jar-in-lib", false, false, []string{lib + "zeros.jar: cannot read this JAR: found not a valid ZIP archive"}, true},
		// 300,000 entries: admitted.
		{"many-entries", true, false, nil, false},
	} {
		t.Run(tc.label, func(t *testing.T) {
			budget := spool.New(1536<<20, "--spool-budget")
			cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}, Read: readWith(budget, t.TempDir())})
			s := startServer(t, Config{Cache: cache, FailurePolicy: Fail}, nil)
			body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(refs[tc.label], "v2_2", ""))
			heap := watchHeap()
			start := time.Now()
			out := s.post(t, body).Response
			took := time.Since(start)
			peak, kept := heap.end()
			msg := text(out)
			t.Logf("%s: allowed %v in %s; heap: peak +%s, after GC +%s; spool peak %s; answer: %.300s",
				tc.label, out.Allowed, took.Round(time.Millisecond), mib(peak), mib(kept), spool.Bytes(budget.Peak()), msg)
			if tc.slow && strings.Contains(msg, "not verified within") {
				assert.Contains(t, msg, policy)
				assert.False(t, out.Allowed)
				tc.allowed, tc.policy, tc.text = false, true, nil
			}
			assert.Equal(t, tc.allowed, out.Allowed, "%s", msg)
			if tc.policy {
				assert.Contains(t, msg, policy)
			} else {
				assert.NotContains(t, msg, "failure policy")
			}
			for _, want := range tc.text {
				assert.Contains(t, msg, want)
			}
			assert.LessOrEqual(t, took, DefaultTimeout+time.Second, "answered within the review timeout")
			assert.Less(t, peak, int64(128<<20), "heap growth while the image was read")
			assert.LessOrEqual(t, budget.Peak(), int64(1536<<20))
			assert.Eventually(t, func() bool { return cache.Running() == 0 && budget.InUse() == 0 }, 30*time.Second, 10*time.Millisecond,
				"nothing reserved once the verification ends")
		})
	}
}

// webhookProc is `streamfusion webhook` running as a process of its own.
type webhookProc struct {
	cmd *osexec.Cmd
	out bytes.Buffer
}

// startWebhook starts the binary on addr, with its layer-facts cache
// and temporary directory in dir (kept across restarts).
func startWebhook(t *testing.T, bin, dir, addr string, p pki) *webhookProc {
	t.Helper()
	w := &webhookProc{cmd: osexec.Command(bin, "webhook", "--listen", addr, "--tls-cert", p.certFile, "--tls-key", p.keyFile,
		"--clusters=none", "--metrics-listen=", "--log-json")}
	w.cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"), "TMPDIR="+filepath.Join(dir, "tmp"),
		"DOCKER_CONFIG="+filepath.Join(dir, "docker"))
	w.cmd.Stdout, w.cmd.Stderr = &w.out, &w.out
	require.NoError(t, os.MkdirAll(filepath.Join(dir, "tmp"), 0o700))
	require.NoError(t, w.cmd.Start())
	t.Cleanup(func() {
		if w.cmd.ProcessState == nil {
			_ = w.cmd.Process.Kill()
			_ = w.cmd.Wait()
		}
	})
	return w
}

// ready polls GET /readyz until it answers 200: how long that took.
func ready(t *testing.T, c *http.Client, url string, w *webhookProc) time.Duration {
	t.Helper()
	start := time.Now()
	for time.Since(start) < 60*time.Second {
		resp, err := c.Get(url + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return time.Since(start)
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("not ready within 60s:\n%s", w.out.String())
	return 0
}

// TestKilledUnderLoad: `streamfusion webhook` as built, serving reviews
// from 16 clients at once (killed 300 ms after the 16th answer) (of images it has not seen: verifications under
// way, the layer-facts cache being written), is killed (SIGKILL) and
// started again on the same address and directories: it is ready (GET
// /readyz) within 30 s, and answers every review after correctly (the
// good images admitted, the plain one refused with the entrypoint's
// message), whatever the killed process left in its caches.
func TestKilledUnderLoad(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the command")
	}
	imgs := shared(t)
	dir := t.TempDir()
	bin := filepath.Join(dir, "streamfusion")
	build := osexec.Command("go", "build", "-o", bin, "../../cmd/streamfusion")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "%s", out)
	const labels = 64
	tagged := map[string]v1Image{"plain": imgs.plain}
	for i := range labels {
		cfg, err := imgs.good.ConfigFile()
		require.NoError(t, err)
		cfg = cfg.DeepCopy()
		cfg.Config.Env = append(cfg.Config.Env, fmt.Sprintf("TEST=%d", i)) // an image of its own (a label alone is the same content)
		img, err := mutate.ConfigFile(imgs.good, cfg)
		require.NoError(t, err)
		tagged[fmt.Sprintf("good-%d", i)] = img
	}
	host := registryWith(t, nil, tagged)
	p := newPKI(t, dir, "killed")
	p.write(t, time.Now().Add(-time.Minute))
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	url := "https://" + addr
	client := p.client()
	review := func(img string) (*admissionv1.AdmissionResponse, error) {
		body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(img, "v2_2", ""))
		resp, err := client.Post(url+"/validate?timeout=10s", "application/json", bytes.NewReader(body))
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		var r admissionv1.AdmissionReview
		if err := json.NewDecoder(resp.Body).Decode(&r); err != nil || r.Response == nil {
			return nil, fmt.Errorf("status %d: %v", resp.StatusCode, err)
		}
		return r.Response, nil
	}
	check := func(t *testing.T, img string, a *admissionv1.AdmissionResponse) {
		t.Helper()
		if strings.HasSuffix(img, ":plain") {
			assert.False(t, a.Allowed, "%s", img)
			assert.Contains(t, text(a), "StreamFusion refused to start kubernetes-jobmanager", img)
		} else {
			assert.True(t, a.Allowed, "%s: %s", img, text(a))
		}
	}

	start := time.Now()
	w := startWebhook(t, bin, dir, addr, p)
	first := ready(t, client, url, w)

	// Load: 16 clients, each reviewing images in turn, until the kill.
	var answered, failed atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for c := range 16 {
		wg.Go(func() {
			for i := c; ; i += 16 {
				select {
				case <-stop:
					return
				default:
				}
				img := fmt.Sprintf("%s/flink:good-%d", host, i%labels)
				if i%5 == 0 {
					img = host + "/flink:plain"
				}
				a, err := review(img)
				if err != nil {
					failed.Add(1)
					time.Sleep(20 * time.Millisecond) // the server is down
					continue
				}
				answered.Add(1)
				check(t, img, a)
			}
		})
	}
	// Kill it once reviews are being answered, with more under way.
	require.Eventually(t, func() bool { return answered.Load() >= 16 }, 60*time.Second, 10*time.Millisecond, "reviews answered before the kill")
	time.Sleep(300 * time.Millisecond)
	require.NoError(t, w.cmd.Process.Signal(syscall.SIGKILL))
	_ = w.cmd.Wait()
	killedAfter := time.Since(start)
	beforeKill := answered.Load()
	var cached int
	_ = filepath.WalkDir(filepath.Join(dir, "cache"), func(_ string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			cached++
		}
		return nil
	})

	restart := time.Now()
	w = startWebhook(t, bin, dir, addr, p)
	second := ready(t, client, url, w)
	close(stop)
	wg.Wait()
	t.Logf("ready after %s; killed after %s with %d reviews answered, %d files in the layer-facts cache; ready again after %s (%d requests failed: cut, or refused while down)",
		first.Round(time.Millisecond), killedAfter.Round(time.Millisecond), beforeKill, cached, second.Round(time.Millisecond), failed.Load())
	assert.Less(t, second, 30*time.Second, "time to ready after the kill")

	// After the restart every review is answered, and correctly.
	var after sync.WaitGroup
	for i := range labels + 1 {
		img := fmt.Sprintf("%s/flink:good-%d", host, i)
		if i == labels {
			img = host + "/flink:plain"
		}
		after.Go(func() {
			a, err := review(img)
			if assert.NoError(t, err, img) {
				check(t, img, a)
			}
		})
	}
	after.Wait()
	t.Logf("%d reviews answered after the restart in %s", labels+1, time.Since(restart).Round(time.Millisecond))
}
