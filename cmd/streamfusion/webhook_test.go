package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// selfSigned writes a certificate for 127.0.0.1 and its key.
func selfSigned(t *testing.T) (certFile, keyFile string, pool *x509.CertPool) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "webhook test"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)}, NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, tpl, &key.PublicKey, key)
	require.NoError(t, err)
	cert, err := x509.ParseCertificate(der)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "tls.crt"), filepath.Join(dir, "tls.key")
	require.NoError(t, os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600))
	require.NoError(t, os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), 0o600))
	pool = x509.NewCertPool()
	pool.AddCert(cert)
	return certFile, keyFile, pool
}

func TestWebhookCommand(t *testing.T) {
	certFile, keyFile, pool := selfSigned(t)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no certificate", []string{"webhook"}, "needs --tls-cert and --tls-key"},
		{"timeout over the API server's maximum", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--timeout", "31s"}, "at most 30s"},
		{"no header timeout", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--read-header-timeout=0s"}, "--read-header-timeout 0s"},
		{"request timeout below the header's", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--read-header-timeout=10s", "--read-timeout=5s"}, "the whole request's at least the header's"},
		{"unknown failure policy", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--failure-policy", "Maybe"}, `failure policy "Maybe"`},
		{"unreadable key", []string{"webhook", "--tls-cert", certFile, "--tls-key", certFile}, "TLS certificate"},
		{"arguments", []string{"webhook", "extra"}, "takes no arguments"},
		{"unknown clusters source", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters", "etcd"}, `--clusters "etcd"`},
		{"negative kept images", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters=none", "--kept-images=-1"}, "--kept-images -1"},
		{"kept images size not a quantity", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters=none", "--kept-images-size=lots"}, `--kept-images-size "lots"`},
		{"spool budget not a quantity", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters=none", "--spool-budget=lots"}, `--spool-budget "lots"`},
		{"kept images as large as the budget", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters=none", "--spool-budget=1Gi", "--kept-images-size=1Gi"}, "--kept-images-size 1Gi is not below --spool-budget 1Gi"},
		{"no registry requests", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--clusters=none", "--registry-requests=0"}, "--registry-requests 0"},
		{"no API access", []string{"webhook", "--tls-cert", certFile, "--tls-key", keyFile, "--kubeconfig", filepath.Join(t.TempDir(), "none")}, "no Kubernetes API access"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, _, stderr := cli(t, nil, tc.args...)
			assert.Equal(t, 64, code, stderr)
			assert.Contains(t, stderr, tc.want)
		})
	}

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	mln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	metricsAddr := mln.Addr().String()
	require.NoError(t, mln.Close())
	ctx, cancel := context.WithCancel(context.Background())
	var stderr bytes.Buffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"webhook", "--listen", addr, "--tls-cert", certFile, "--tls-key", keyFile, "--timeout", "3s", "--clusters=none",
			"--metrics-listen", metricsAddr, "--spool-budget=1200Mi", "--registry-requests=12", "--read-header-timeout=300ms"}, nil, io.Discard, &stderr)
	}()
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}}}
	var body string
	for range 100 {
		resp, err := client.Get("https://" + addr + "/healthz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			body = string(b)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	assert.Equal(t, "ok\n", body)
	get := func(path string) (int, string) {
		resp, err := client.Get("https://" + addr + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	// --read-header-timeout reaches the server: a client that never
	// starts TLS is cut at 300 ms, not the default 5 s.
	slow, err := net.Dial("tcp", addr)
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, slow.SetReadDeadline(time.Now().Add(4*time.Second)))
	_, err = slow.Read(make([]byte, 1))
	slow.Close()
	assert.ErrorIs(t, err, io.EOF, "the server closed the silent connection")
	assert.Less(t, time.Since(start), 3*time.Second, "cut at --read-header-timeout")
	code, text := get("/readyz")
	assert.Equal(t, http.StatusOK, code, text)
	// The serving pair becomes unreadable (its Secret deleted): the last
	// good pair still serves, and the pod says it is not ready.
	keyData, err := os.ReadFile(keyFile)
	require.NoError(t, err)
	require.NoError(t, os.Remove(keyFile))
	code, text = get("/readyz")
	assert.Equal(t, http.StatusServiceUnavailable, code)
	assert.Contains(t, text, "not ready: serving certificate")
	require.NoError(t, os.WriteFile(keyFile, keyData, 0o600))
	code, text = get("/readyz")
	assert.Equal(t, http.StatusOK, code, text)
	resp, err := client.Post("https://"+addr+"/validate", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	// The metrics of the command as run, scraped over plain HTTP.
	mresp, err := http.Get("http://" + metricsAddr + "/metrics")
	require.NoError(t, err)
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(mresp.Body)
	mresp.Body.Close()
	require.NoError(t, err)
	gauge := func(name string) float64 {
		require.Contains(t, mfs, name)
		m := mfs[name].GetMetric()[0]
		if m.Counter != nil {
			return m.GetCounter().GetValue()
		}
		return m.GetGauge().GetValue()
	}
	assert.Equal(t, float64(1200<<20), gauge("streamfusion_webhook_spool_budget_bytes"))
	assert.Equal(t, 12.0, gauge("streamfusion_webhook_registry_requests_max"))
	assert.Equal(t, 1.0, gauge("streamfusion_webhook_bad_requests_total"))
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	require.NoError(t, err)
	assert.Equal(t, float64(pair.Leaf.NotAfter.Unix()), gauge("streamfusion_webhook_certificate_expiry_timestamp_seconds"))
	cancel()
	select {
	case code := <-done:
		assert.Equal(t, 0, code, stderr.String())
	case <-time.After(15 * time.Second):
		t.Fatal("the webhook did not stop when its context ended")
	}
	assert.Contains(t, stderr.String(), "webhook serving /validate, /healthz and /readyz")
}

// --kept-images=0 keeps no image's copies (each JAR reads its image
// again); otherwise the bounds are the flags'.
func TestKeptViews(t *testing.T) {
	o := &webhookOptions{KeptImages: 0, KeptSize: "1Gi"}
	v, err := o.keptViews()
	require.NoError(t, err)
	assert.Nil(t, v)
	o = &webhookOptions{KeptImages: 3, KeptSize: "512Mi"}
	v, err = o.keptViews()
	require.NoError(t, err)
	require.NotNil(t, v)
	defer v.Close()
	assert.Equal(t, 3, v.Max())
	assert.Equal(t, int64(512<<20), v.MaxBytes())
}
