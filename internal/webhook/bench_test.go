package webhook

import (
	"bytes"
	"github.com/rs/zerolog"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
)

// BenchmarkWarmReview is a FlinkDeployment review over TLS (keep-alive)
// whose image verdict is known: by tag (one manifest HEAD to a loopback
// registry per review) and by digest (no registry request). It reports the
// 50th and 99th percentile of the round trip as the API server sees it.
//
//	go test -run '^$' -bench WarmReview -benchtime 2000x ./internal/webhook/
func BenchmarkWarmReview(b *testing.B) {
	imgs := shared(b)
	host := registryWith(b, nil, map[string]v1Image{"good": imgs.good})
	d, err := imgs.good.Digest()
	if err != nil {
		b.Fatal(err)
	}
	s := startServer(b, Config{}, http.DefaultTransport)
	for _, ref := range []struct{ name, image string }{
		{"tag", host + "/flink:good"},
		{"digest", host + "/flink@" + d.String()},
	} {
		b.Run(ref.name, func(b *testing.B) {
			body := reviewOf(b, "FlinkDeployment", admissionv1.Create, flinkDeployment(ref.image, "v2_2", ""))
			if out := s.post(b, body); !out.Response.Allowed { // warms the cache
				b.Fatal(out.Response.Result.Message)
			}
			took := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for b.Loop() {
				start := time.Now()
				out := s.post(b, body)
				took = append(took, time.Since(start))
				if !out.Response.Allowed {
					b.Fatal("denied")
				}
			}
			b.StopTimer()
			slices.Sort(took)
			p := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
			b.ReportMetric(p(0.50), "p50-ms")
			b.ReportMetric(p(0.99), "p99-ms")
			b.ReportMetric(0, "ns/op")
		})
	}
}

// BenchmarkColdReview is a review of an image no verdict is known for: the
// manifest, the config and every layer read from a loopback registry and
// the entrypoint's rules run (no layer cache). The test image is small
// (Flink's lib as the test kit writes it, a few MB); a real Flink image's
// layers make this slower, which is what a layer cache below image.Verify
// would remove for known base layers.
//
//	go test -run '^$' -bench ColdReview -benchtime 20x ./internal/webhook/
func BenchmarkColdReview(b *testing.B) {
	imgs := shared(b)
	host := registryWith(b, nil, map[string]v1Image{"good": imgs.good})
	body := reviewOf(b, "FlinkDeployment", admissionv1.Create, flinkDeployment(host+"/flink:good", "v2_2", ""))
	for b.Loop() {
		h, err := Handler(Config{Cache: verdict.New(verdict.Options{}), Log: zerolog.Nop()})
		if err != nil {
			b.Fatal(err)
		}
		req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK || !bytes.Contains(rec.Body.Bytes(), []byte(`"allowed":true`)) {
			b.Fatalf("%d %s", rec.Code, rec.Body)
		}
	}
}
