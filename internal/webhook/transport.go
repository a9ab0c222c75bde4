package webhook

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
)

// The registry transport's bound: every review's registry requests go
// through one LimitRequests, whose slots and failures the metrics count.

// ErrRegistryBusy is a registry request that found no free slot of
// LimitRequests' bound before its context ended.
var ErrRegistryBusy = errors.New("no registry request slot free")

// LimitRequests returns a transport that sends at most limit requests at
// once through next (a request holds its slot until its body is closed
// or read to the end) and counts them, and their errors, in m (may be
// nil). limit <= 0: no bound.
func LimitRequests(next http.RoundTripper, limit int, m *Metrics) http.RoundTripper {
	l := &limited{next: next, m: m}
	if limit > 0 {
		l.slots = make(chan struct{}, limit)
	}
	return l
}

type limited struct {
	next  http.RoundTripper
	slots chan struct{}
	m     *Metrics
}

func (l *limited) RoundTrip(r *http.Request) (*http.Response, error) {
	if l.slots != nil {
		select {
		case l.slots <- struct{}{}:
		case <-r.Context().Done():
			l.fail("canceled")
			return nil, fmt.Errorf("%w: all %d were in use until %w (the webhook's --registry-requests)", ErrRegistryBusy, cap(l.slots), context.Cause(r.Context()))
		}
	}
	if l.m != nil {
		l.m.regRequests.WithLabelValues(requestKind(r)).Inc()
		l.m.regInFlight.Inc()
	}
	release := sync.OnceFunc(func() {
		if l.slots != nil {
			<-l.slots
		}
		if l.m != nil {
			l.m.regInFlight.Dec()
		}
	})
	resp, err := l.next.RoundTrip(r)
	if err != nil {
		release()
		l.fail(transportCause(err))
		return nil, err
	}
	if resp.StatusCode >= 400 {
		l.fail(statusCause(resp.StatusCode))
	}
	resp.Body = &releasing{ReadCloser: resp.Body, release: release, fail: l.fail}
	return resp, nil
}

func (l *limited) fail(cause string) {
	if l.m != nil {
		l.m.regErrors.WithLabelValues(cause).Inc()
	}
}

// releasing gives back a request's slot when its body is closed or read
// to the end, and counts a body that broke off.
type releasing struct {
	io.ReadCloser
	release func()
	fail    func(string)
}

func (b *releasing) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	switch {
	case errors.Is(err, io.EOF):
		b.release()
	case err != nil:
		b.fail("body")
		b.release()
	}
	return n, err
}

func (b *releasing) Close() error {
	err := b.ReadCloser.Close()
	b.release()
	return err
}

func requestKind(r *http.Request) string {
	switch p := r.URL.Path; {
	case strings.Contains(p, "/manifests/"):
		return "manifest"
	case strings.Contains(p, "/blobs/"):
		return "blob"
	case r.URL.Query().Has("scope") || r.URL.Query().Has("service") || strings.Contains(p, "token"):
		return "token"
	}
	return "other"
}

func statusCause(code int) string {
	switch {
	case code == http.StatusUnauthorized:
		return "status_401"
	case code == http.StatusNotFound:
		return "status_404"
	case code >= 500:
		return "status_5xx"
	}
	return "status_other"
}

func transportCause(err error) string {
	var ne net.Error
	switch {
	case errors.Is(err, context.Canceled):
		return "canceled"
	case errors.Is(err, context.DeadlineExceeded), errors.Is(err, os.ErrDeadlineExceeded), errors.As(err, &ne) && ne.Timeout():
		return "timeout"
	}
	return "connection"
}
