package webhook

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
)

// fault is what the fault-injecting handler does to a registry request;
// nil serves it as the registry does. A fault's request is one the
// registry would answer: layers are the blobs of the image's layers.
type fault func(w http.ResponseWriter, r *http.Request, next http.Handler) bool

// injector is a fault-injecting handler in front of a loopback registry.
// The fault applies to the requests it matches until cleared; clearing it
// also releases every request it holds.
type injector struct {
	mu      sync.Mutex
	fault   fault
	release chan struct{}
	layers  map[string]bool // digests of the image's layer blobs
}

func (in *injector) set(f fault) {
	in.mu.Lock()
	defer in.mu.Unlock()
	in.fault, in.release = f, make(chan struct{})
}

func (in *injector) clear() {
	in.mu.Lock()
	defer in.mu.Unlock()
	if in.release != nil {
		close(in.release)
	}
	in.fault, in.release = nil, nil
}

func (in *injector) wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		in.mu.Lock()
		f := in.fault
		in.mu.Unlock()
		if f == nil || !f(w, r, next) {
			next.ServeHTTP(w, r)
		}
	})
}

// held is the fault's release channel: closed when the fault is cleared.
func (in *injector) held() <-chan struct{} {
	in.mu.Lock()
	defer in.mu.Unlock()
	return in.release
}

func (in *injector) isLayer(r *http.Request) bool {
	if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") {
		return false
	}
	return in.layers[r.URL.Path[strings.LastIndex(r.URL.Path, "/")+1:]]
}

// layerBody serves a layer blob through change (its bytes as the registry
// has them, with their true Content-Length).
func layerBody(w http.ResponseWriter, r *http.Request, next http.Handler, change func([]byte) []byte) {
	rec := httptest.NewRecorder()
	next.ServeHTTP(rec, r)
	body := rec.Body.Bytes()
	w.Header().Set("Content-Type", rec.Header().Get("Content-Type"))
	w.Header().Set("Content-Length", fmt.Sprint(len(body)))
	w.WriteHeader(rec.Code)
	_, _ = w.Write(change(bytes.Clone(body)))
}

// TestRegistryFaults holds, as tests of record, what the webhook does when
// the registry misbehaves: for each of nine faults, under failure policy
// Fail and Ignore, the review is answered within its deadline in the
// policy's direction, naming what went wrong; then the fault is cleared
// and the same image is admitted (nothing the fault caused was kept).
func TestRegistryFaults(t *testing.T) {
	imgs := shared(t)
	layers, err := imgs.good.Layers()
	require.NoError(t, err)
	digests := map[string]bool{}
	for _, l := range layers {
		d, err := l.Digest()
		require.NoError(t, err)
		digests[d.String()] = true
	}
	// The server's own timeout: long enough for a cold verification on
	// a loaded machine, so that a fault surfaces as itself.
	const timeout = 4 * time.Second
	for _, tc := range []struct {
		name   string
		fault  func(in *injector) fault
		reason string // in the answer
	}{
		{"registry down (every connection closed)", func(_ *injector) fault {
			return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				conn, _, err := w.(http.Hijacker).Hijack()
				if err == nil {
					conn.Close()
				}
				return true
			}
		}, "EOF"},
		{"slower than the timeout", func(in *injector) fault {
			return func(_ http.ResponseWriter, r *http.Request, _ http.Handler) bool {
				select {
				case <-time.After(timeout + time.Second):
				case <-in.held():
				case <-r.Context().Done():
				}
				return false
			}
		}, "not verified within"},
		{"stalled in the middle of a layer", func(in *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				if !in.isLayer(r) {
					return false
				}
				layerBody(w, r, next, func(b []byte) []byte {
					_, _ = w.Write(b[:len(b)/2])
					w.(http.Flusher).Flush()
					select {
					case <-in.held():
					case <-r.Context().Done():
					}
					return b[len(b)/2:]
				})
				return true
			}
		}, "not verified within"},
		{"500", func(_ *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
				if !strings.Contains(r.URL.Path, "/manifests/") {
					return false
				}
				http.Error(w, `{"errors":[{"code":"UNKNOWN","message":"the registry broke"}]}`, http.StatusInternalServerError)
				return true
			}
		}, "500"},
		{"401", func(_ *injector) fault {
			return func(w http.ResponseWriter, _ *http.Request, _ http.Handler) bool {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusUnauthorized)
				_, _ = io.WriteString(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`)
				return true
			}
		}, "401 Unauthorized"},
		{"truncated layer", func(in *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				if !in.isLayer(r) {
					return false
				}
				layerBody(w, r, next, func(b []byte) []byte { return b[:len(b)/2] })
				return true
			}
		}, "unexpected EOF"},
		{"missing blob", func(in *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, _ http.Handler) bool {
				if !in.isLayer(r) {
					return false
				}
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(http.StatusNotFound)
				_, _ = io.WriteString(w, `{"errors":[{"code":"BLOB_UNKNOWN","message":"blob unknown to registry"}]}`)
				return true
			}
		}, "BLOB_UNKNOWN"},
		{"corrupt gzip", func(in *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				if !in.isLayer(r) {
					return false
				}
				layerBody(w, r, next, func(b []byte) []byte {
					for i := 16; i < min(len(b), 64); i++ {
						b[i] ^= 0xff
					}
					return b
				})
				return true
			}
		}, "layer"},
		{"tampered layer (one byte changed)", func(in *injector) fault {
			return func(w http.ResponseWriter, r *http.Request, next http.Handler) bool {
				if !in.isLayer(r) {
					return false
				}
				layerBody(w, r, next, func(b []byte) []byte { b[len(b)-9] ^= 0x01; return b })
				return true
			}
		}, "layer"},
	} {
		for _, policy := range []string{Fail, Ignore} {
			t.Run(tc.name+", "+policy, func(t *testing.T) {
				t.Parallel()
				in := &injector{layers: digests}
				host := registryWith(t, in.wrap, map[string]v1Image{"good": imgs.good})
				s := startServer(t, Config{Timeout: timeout, FailurePolicy: policy}, http.DefaultTransport)
				body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(host+"/flink:good", "v2_2", ""))

				in.set(tc.fault(in))
				begin := time.Now()
				out := s.post(t, body).Response
				took := time.Since(begin)
				assert.Less(t, took, timeout+time.Second, "answered within the server's timeout, before the API server's (10s)")
				assert.Equal(t, policy == Ignore, out.Allowed, "%s", text(out))
				msg := text(out)
				assert.Contains(t, msg, "verify this object (failure policy "+policy+")", "the failure policy answered, not a verdict")
				assert.Contains(t, msg, tc.reason)
				t.Logf("answered in %s: %s", took.Round(time.Millisecond), msg)

				in.clear()
				var last *admissionv1.AdmissionResponse
				assert.Eventually(t, func() bool {
					last = s.post(t, body).Response
					return last.Allowed && len(last.Warnings) == 0
				}, 30*time.Second, 100*time.Millisecond, "admitted once the registry recovers")
				if last != nil && !last.Allowed {
					t.Logf("last answer: %s", text(last))
				}
			})
		}
	}
}
