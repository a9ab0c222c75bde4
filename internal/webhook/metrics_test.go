package webhook

import (
	"context"
	"net"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// scrape GETs url and parses the Prometheus text format.
func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Header.Get("Content-Type"), "text/plain")
	p := expfmt.NewTextParser(model.UTF8Validation)
	mfs, err := p.TextToMetricFamilies(resp.Body)
	require.NoError(t, err)
	return mfs
}

// value is the value of the metric of family name whose labels include
// want; ok is false when there is none.
func value(mfs map[string]*dto.MetricFamily, name string, want map[string]string) (float64, bool) {
	mf := mfs[name]
	if mf == nil {
		return 0, false
	}
next:
	for _, m := range mf.GetMetric() {
		have := map[string]string{}
		for _, l := range m.GetLabel() {
			have[l.GetName()] = l.GetValue()
		}
		for k, v := range want {
			if have[k] != v {
				continue next
			}
		}
		switch {
		case m.Counter != nil:
			return m.GetCounter().GetValue(), true
		case m.Gauge != nil:
			return m.GetGauge().GetValue(), true
		case m.Histogram != nil:
			return float64(m.GetHistogram().GetSampleCount()), true
		}
	}
	return 0, false
}

// TestMetrics: reviews of each outcome against the real server over TLS,
// then /metrics scraped over HTTP from the metrics server and parsed as
// Prometheus text: reviews by kind, operation and verdict, the latency
// histogram, registry requests and errors by cause, the verdict cache,
// the spool budget, the certificate's expiry.
func TestMetrics(t *testing.T) {
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good, "plain": imgs.plain})
	m := NewMetrics()
	budget := spool.New(1<<30, "--spool-budget")
	cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(LimitRequests(http.DefaultTransport, 32, m))},
		Read: readWith(budget, t.TempDir())})
	run := func(policy string) *server {
		return startServer(t, Config{Cache: cache, Metrics: m, FailurePolicy: policy}, nil)
	}
	fail, ignore := run(Fail), run(Ignore)
	m.Watch(Sources{Cache: cache, Budget: budget, Certs: fail.certs, RegistryMax: 32, ReviewReads: DefaultReviewReads, FailurePolicy: Fail})

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	msrv := MetricsServer(m)
	go func() { _ = msrv.Serve(ln) }()
	t.Cleanup(func() { _ = msrv.Close() })
	url := "http://" + ln.Addr().String() + "/metrics"

	review := func(s *server, img string, op admissionv1.Operation) *admissionv1.AdmissionResponse {
		return s.post(t, reviewOf(t, "FlinkDeployment", op, flinkDeployment(img, "v2_2", ""))).Response
	}
	require.True(t, review(fail, host+"/flink:good", admissionv1.Create).Allowed)
	require.True(t, review(fail, host+"/flink:good", admissionv1.Update).Allowed) // a cache hit
	require.False(t, review(fail, host+"/flink:plain", admissionv1.Create).Allowed)
	require.False(t, review(fail, host+"/flink:missing", admissionv1.Create).Allowed)
	require.True(t, review(ignore, host+"/flink:missing", admissionv1.Create).Allowed)
	resp, err := fail.client.Post(fail.url+"/validate", "application/json", strings.NewReader("{}"))
	require.NoError(t, err)
	resp.Body.Close()

	mfs := scrape(t, url)
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "CREATE", "verdict": VerdictAllowed}, 1},
		{"streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "UPDATE", "verdict": VerdictAllowed}, 1},
		{"streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "CREATE", "verdict": VerdictDenied}, 1},
		{"streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "CREATE", "verdict": VerdictFailurePolicyDenied}, 1},
		{"streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "CREATE", "verdict": VerdictFailurePolicyAllow}, 1},
		{"streamfusion_webhook_review_duration_seconds", map[string]string{"kind": "FlinkDeployment"}, 5},
		{"streamfusion_webhook_bad_requests_total", map[string]string{"code": "400"}, 1},
		{"streamfusion_webhook_image_failures_total", map[string]string{"cause": "registry"}, 4}, // JM and TM of each review of the missing image
		{"streamfusion_webhook_registry_errors_total", map[string]string{"cause": "status_404"}, 2},
		{"streamfusion_webhook_verdict_cache_misses_total", nil, 2},
		{"streamfusion_webhook_verdict_cache_content_hits_total", nil, 0},
		{"streamfusion_webhook_spool_budget_bytes", nil, 1 << 30},
		{"streamfusion_webhook_spool_bytes_in_use", nil, 0},
		{"streamfusion_webhook_reviews_in_flight", nil, 0},
		{"streamfusion_webhook_registry_requests_in_flight", nil, 0},
		{"streamfusion_webhook_registry_requests_max", nil, 32},
		{"streamfusion_webhook_failure_policy", map[string]string{"policy": Fail}, 1},
		{"streamfusion_webhook_certificate_expiry_timestamp_seconds", nil, float64(fail.certs.NotAfter().Unix())},
	} {
		got, ok := value(mfs, tc.name, tc.labels)
		if assert.True(t, ok, "%s%v is not exposed", tc.name, tc.labels) {
			assert.Equal(t, tc.want, got, "%s%v", tc.name, tc.labels)
		}
	}
	hits, _ := value(mfs, "streamfusion_webhook_verdict_cache_hits_total", nil)
	assert.GreaterOrEqual(t, hits, 1.0, "the UPDATE of the good image was a hit")
	for _, kind := range []string{"manifest", "blob"} {
		n, ok := value(mfs, "streamfusion_webhook_registry_requests_total", map[string]string{"kind": kind})
		assert.True(t, ok && n > 0, "%s requests counted", kind)
	}
	assert.NotNil(t, mfs["go_goroutines"], "the Go runtime's metrics")
	assert.NotNil(t, mfs["process_resident_memory_bytes"], "the process's metrics")
	assert.Greater(t, fail.certs.NotAfter(), time.Now())

	t.Run("a review under way is in flight", func(t *testing.T) {
		release := make(chan struct{})
		var hanging atomic.Bool
		hang := registryWith(t, func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if hanging.Load() && strings.Contains(r.URL.Path, "/manifests/") {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
				next.ServeHTTP(w, r)
			})
		}, map[string]v1Image{"good": imgs.good})
		hanging.Store(true)
		done := make(chan struct{})
		go func() {
			defer close(done)
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, fail.url+"/validate?timeout=10s",
				strings.NewReader(string(reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(hang+"/flink:good", "v2_2", "")))))
			req.Header.Set("Content-Type", "application/json")
			if resp, err := fail.client.Do(req); err == nil {
				resp.Body.Close()
			}
		}()
		assert.Eventually(t, func() bool {
			n, _ := value(scrape(t, url), "streamfusion_webhook_reviews_in_flight", nil)
			r, _ := value(scrape(t, url), "streamfusion_webhook_registry_requests_in_flight", nil)
			return n == 1 && r >= 1
		}, 5*time.Second, 20*time.Millisecond)
		close(release)
		<-done
	})

	t.Run("an image read past the deadline is counted by cause deadline", func(t *testing.T) {
		// By digest, on a registry that does not answer: the image is
		// being read when the review's deadline passes (judge's Late).
		release := make(chan struct{})
		hang := registryWith(t, func(next http.Handler) http.Handler {
			return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if strings.Contains(r.URL.Path, "/manifests/sha256:") {
					select {
					case <-release:
					case <-r.Context().Done():
					}
				}
				next.ServeHTTP(w, r)
			})
		}, map[string]v1Image{"jdk11": imgs.jdk11})
		t.Cleanup(func() { close(release) }) // before the registry closes (cleanups run last first)
		dg, err := imgs.jdk11.Digest()
		require.NoError(t, err)
		before, _ := value(scrape(t, url), "streamfusion_webhook_image_failures_total", map[string]string{"cause": "deadline"})
		r := fail.postWithin(t, reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(hang+"/flink@"+dg.String(), "v2_2", "")), "1100ms").Response
		require.False(t, r.Allowed)
		assert.Contains(t, r.Result.Message, "not verified within 200ms (the verification goes on")
		after, ok := value(scrape(t, url), "streamfusion_webhook_image_failures_total", map[string]string{"cause": "deadline"})
		assert.True(t, ok, "the deadline cause is exposed")
		assert.Equal(t, 2.0, after-before, "the JobManager's and the TaskManager's image")
	})
}
