package webhook

import (
	"crypto/tls"
	"fmt"
	"os"
	"sync"
	"time"
)

// CertReloader serves a certificate and key from files and reloads them
// when either file changes (size or modification time, as a Secret
// volume's atomic update or cert-manager's renewal changes them). A pair
// that does not load (a half-written rotation) leaves the old one in use
// and is tried again at the next handshake.
type CertReloader struct {
	certFile, keyFile string

	mu       sync.Mutex
	cert     *tls.Certificate
	certStat fileStamp
	keyStat  fileStamp
	reloads  int
}

// Reloads counts the successful loads after the first.
func (r *CertReloader) Reloads() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reloads
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewCertReloader loads the pair once; an unusable pair is an error.
func NewCertReloader(certFile, keyFile string) (*CertReloader, error) {
	r := &CertReloader{certFile: certFile, keyFile: keyFile}
	if err := r.load(); err != nil {
		return nil, err
	}
	return r, nil
}

func stamp(p string) (fileStamp, error) {
	info, err := os.Stat(p)
	if err != nil {
		return fileStamp{}, err
	}
	return fileStamp{info.ModTime(), info.Size()}, nil
}

// load must be called with mu held (or before the reloader is shared).
func (r *CertReloader) load() error {
	cs, err := stamp(r.certFile)
	if err != nil {
		return fmt.Errorf("TLS certificate: %w", err)
	}
	ks, err := stamp(r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS key: %w", err)
	}
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("TLS certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	if r.cert != nil {
		r.reloads++
	}
	r.cert, r.certStat, r.keyStat = &pair, cs, ks
	return nil
}

// GetCertificate is tls.Config's hook.
func (r *CertReloader) GetCertificate(*tls.ClientHelloInfo) (*tls.Certificate, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	cs, err1 := stamp(r.certFile)
	ks, err2 := stamp(r.keyFile)
	if err1 == nil && err2 == nil && (cs != r.certStat || ks != r.keyStat) {
		_ = r.load() // on failure the old pair stays in use
	}
	return r.cert, nil
}

// Ready reads the certificate and key files as they are now: nil when they
// load as a pair whose certificate is within its validity. Serving goes on
// with the last good pair meanwhile, but a pod whose Secret cannot be read
// (deleted, a rotation that left a broken pair) is not ready, so the
// Service stops sending it the API server's calls and a fresh replica can
// take over.
func (r *CertReloader) Ready() error {
	pair, err := tls.LoadX509KeyPair(r.certFile, r.keyFile)
	if err != nil {
		return fmt.Errorf("serving certificate %s and key %s: %w", r.certFile, r.keyFile, err)
	}
	now := time.Now()
	if leaf := pair.Leaf; leaf != nil && (now.Before(leaf.NotBefore) || now.After(leaf.NotAfter)) {
		return fmt.Errorf("serving certificate %s: valid from %s to %s, not now (%s)", r.certFile,
			leaf.NotBefore.UTC().Format(time.RFC3339), leaf.NotAfter.UTC().Format(time.RFC3339), now.UTC().Format(time.RFC3339))
	}
	return nil
}

// NotAfter is the end of the serving certificate's validity (zero when
// none is loaded).
func (r *CertReloader) NotAfter() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.cert == nil || r.cert.Leaf == nil {
		return time.Time{}
	}
	return r.cert.Leaf.NotAfter
}
