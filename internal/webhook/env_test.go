package webhook

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/rs/zerolog"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

var entrypointBin []byte // the real entrypoint, linux/amd64, for baking

func TestMain(m *testing.M) {
	if os.Getenv(loadHelperEnv) != "" { // a helper process of BenchmarkLoad: no images to bake
		os.Exit(m.Run())
	}
	dir, err := os.MkdirTemp("", "webhook-test-")
	if err != nil {
		panic(err)
	}
	out := filepath.Join(dir, "entrypoint")
	build := osexec.Command("go", "build", "-trimpath", "-o", out, "../../cmd/entrypoint")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the entrypoint: %v\n%s", err, b)
		os.Exit(1)
	}
	if entrypointBin, err = os.ReadFile(out); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// images are built once per test binary: a baked Flink 2.2.1 on JDK 17,
// the same on JDK 11, and plain Flink 2.2.1 (refused: no StreamFusion, no
// entrypoint).
type images struct{ good, jdk11, plain v1.Image }

func build(t testing.TB) images {
	t.Helper()
	base := func(jdk string) v1.Image {
		d := testkit.Good("2.2.1")
		d.Payloads, d.JDK = nil, jdk
		img, err := imagekit.Base{Dist: d, User: "9999"}.Image()
		require.NoError(t, err)
		return img
	}
	var files []image.File
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	bake := func(b v1.Image) v1.Image {
		img, _, err := image.Bake(context.Background(), b, image.BakeOptions{Entrypoint: entrypointBin, Payloads: files})
		require.NoError(t, err)
		return img
	}
	plain := base("17.0.15")
	return images{good: bake(plain), jdk11: bake(base("11.0.25")), plain: plain}
}

// counting is an http.RoundTripper that counts registry reads.
type counting struct {
	next             http.RoundTripper
	blobs, manifests atomic.Int64
}

func (c *counting) RoundTrip(r *http.Request) (*http.Response, error) {
	if r.Method == http.MethodGet && strings.Contains(r.URL.Path, "/blobs/") {
		c.blobs.Add(1)
	}
	if strings.Contains(r.URL.Path, "/manifests/") {
		c.manifests.Add(1)
	}
	return c.next.RoundTrip(r)
}

// registryWith serves imgs by tag on loopback; the handler may be wrapped.
func registryWith(t testing.TB, wrap func(http.Handler) http.Handler, imgs map[string]v1.Image) string {
	t.Helper()
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for tag, img := range imgs {
		ref, err := name.ParseReference(host + "/flink:" + tag)
		require.NoError(t, err)
		require.NoError(t, remote.Write(ref, img))
	}
	return host
}

// pki is a CA made in the test and a server certificate it signed.
type pki struct {
	caPool            *x509.CertPool
	caPEM             []byte
	certPEM, keyPEM   []byte
	certFile, keyFile string
}

func newPKI(t testing.TB, dir, cn string) pki {
	t.Helper()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	caTpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: cn + " test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign}
	caDER, err := x509.CreateCertificate(rand.Reader, caTpl, caTpl, &caKey.PublicKey, caKey)
	require.NoError(t, err)
	ca, err := x509.ParseCertificate(caDER)
	require.NoError(t, err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	tpl := &x509.Certificate{SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "streamfusion-webhook.flink.svc"},
		DNSNames:    []string{"streamfusion-webhook.flink.svc", "localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:   time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}
	der, err := x509.CreateCertificate(rand.Reader, tpl, ca, &key.PublicKey, caKey)
	require.NoError(t, err)
	kder, err := x509.MarshalECPrivateKey(key)
	require.NoError(t, err)
	p := pki{caPool: x509.NewCertPool(),
		certPEM:  pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyPEM:   pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}),
		certFile: filepath.Join(dir, "tls.crt"), keyFile: filepath.Join(dir, "tls.key")}
	p.caPool.AddCert(ca)
	p.caPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER})
	return p
}

func (p pki) write(t testing.TB, mod time.Time) {
	t.Helper()
	require.NoError(t, os.WriteFile(p.certFile, p.certPEM, 0o600))
	require.NoError(t, os.WriteFile(p.keyFile, p.keyPEM, 0o600))
	require.NoError(t, os.Chtimes(p.certFile, mod, mod))
	require.NoError(t, os.Chtimes(p.keyFile, mod, mod))
}

func (p pki) client() *http.Client {
	return &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{RootCAs: p.caPool, MinVersion: tls.VersionTLS12}, MaxIdleConnsPerHost: 200}}
}

// server is a webhook served over TLS on loopback.
type server struct {
	url    string
	pki    pki
	certs  *CertReloader
	cache  *verdict.Cache
	client *http.Client
	addr   string       // host:port
	srv    *http.Server // as NewServer built it, its handler wrapped
	// read counts the bytes the server read from its connections (TLS
	// records, as they arrive), so a flood test can pace itself to what
	// the server took in rather than to what the kernel buffered.
	read *atomic.Int64
}

// countingListener counts the bytes its connections read.
type countingListener struct {
	net.Listener
	n *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, n: l.n}, nil
}

type countingConn struct {
	net.Conn
	n *atomic.Int64
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.n.Add(int64(n))
	return n, err
}

func startServer(t testing.TB, cfg Config, rt http.RoundTripper) *server {
	t.Helper()
	return startWrapped(t, cfg, rt, nil)
}

// startWrapped is startServer with the server's handler wrapped (nil: as
// it is), so a test sees the requests that reach it.
func startWrapped(t testing.TB, cfg Config, rt http.RoundTripper, wrap func(http.Handler) http.Handler) *server {
	t.Helper()
	p := newPKI(t, t.TempDir(), "first")
	p.write(t, time.Now().Add(-time.Minute))
	certs, err := NewCertReloader(p.certFile, p.keyFile)
	require.NoError(t, err)
	if cfg.Cache == nil {
		cfg.Cache = verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(rt)}})
	}
	cfg.Log = zerolog.Nop()
	srv, err := NewServer(cfg, certs)
	require.NoError(t, err)
	if wrap != nil {
		srv.Handler = wrap(srv.Handler)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	read := new(atomic.Int64)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- Serve(ctx, srv, countingListener{Listener: ln, n: read}) }()
	t.Cleanup(func() { cancel(); <-done })
	return &server{url: "https://" + ln.Addr().String(), pki: p, certs: certs, cache: cfg.Cache, client: p.client(),
		addr: ln.Addr().String(), srv: srv, read: read}
}

// reviewOf builds an AdmissionReview v1 for obj.
func reviewOf(t testing.TB, kind string, op admissionv1.Operation, obj any) []byte {
	t.Helper()
	raw, err := json.Marshal(obj)
	require.NoError(t, err)
	gvk := metav1.GroupVersionKind{Group: "flink.apache.org", Version: "v1beta1", Kind: kind}
	res := strings.ToLower(kind) + "s"
	if kind == "Pod" {
		gvk = metav1.GroupVersionKind{Version: "v1", Kind: kind}
	}
	r := admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request: &admissionv1.AdmissionRequest{UID: types.UID(fmt.Sprintf("uid-%d", time.Now().UnixNano())), Kind: gvk,
			Resource: metav1.GroupVersionResource{Group: gvk.Group, Version: gvk.Version, Resource: res},
			Name:     "basic", Namespace: "flink", Operation: op, Object: runtime.RawExtension{Raw: raw}},
	}
	b, err := json.Marshal(r)
	require.NoError(t, err)
	return b
}

// post sends a review and decodes the answer; it fails the test on any
// status but 200.
func (s *server) post(t testing.TB, body []byte) *admissionv1.AdmissionReview {
	t.Helper()
	return s.postWithin(t, body, "10s")
}

// postWithin posts a review with the API server's timeout (its
// timeoutSeconds) in the URL.
func (s *server) postWithin(t testing.TB, body []byte, timeout string) *admissionv1.AdmissionReview {
	t.Helper()
	resp, err := s.client.Post(s.url+"/validate?timeout="+timeout, "application/json", strings.NewReader(string(body)))
	require.NoError(t, err)
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, resp.StatusCode, string(data))
	var out admissionv1.AdmissionReview
	require.NoError(t, json.Unmarshal(data, &out))
	require.NotNil(t, out.Response)
	return &out
}

func flinkDeployment(img, version, tmImage string) map[string]any {
	spec := map[string]any{"image": img, "flinkVersion": version, "serviceAccount": "flink"}
	if tmImage != "" {
		spec["taskManager"] = map[string]any{"podTemplate": map[string]any{"spec": map[string]any{
			"containers": []any{map[string]any{"name": "flink-main-container", "image": tmImage}}}}}
	}
	return map[string]any{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
		"metadata": map[string]any{"name": "basic", "namespace": "flink"}, "spec": spec}
}

type v1Image = v1.Image

func writeFileAt(p string, data []byte, mod time.Time) error {
	if err := os.WriteFile(p, data, 0o600); err != nil {
		return err
	}
	return os.Chtimes(p, mod, mod)
}
