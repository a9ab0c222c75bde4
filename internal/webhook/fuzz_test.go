package webhook

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/rs/zerolog"

	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// offline is a transport that reaches no registry: fuzzed images must never
// become network requests. (A fake: the fuzzer checks the handler, not
// registries.)
type offline struct{}

func (offline) RoundTrip(*http.Request) (*http.Response, error) { return nil, errors.New("offline") }

// FuzzValidate posts arbitrary bodies to /validate: never a panic, and an
// answer that is 200 (a review), 400 or 413.
func FuzzValidate(f *testing.F) {
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","object":{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkDeployment","metadata":{"name":"x"},"spec":{"image":"r.example/f:1","flinkVersion":"v2_2"}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"CREATE","object":{"kind":"Pod","spec":{"containers":[{"name":"c","image":"f","args":["taskmanager"]}]}}}}`))
	f.Add([]byte(`{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u","operation":"DELETE"}}`))
	f.Add([]byte(`null`))
	h, err := Handler(Config{Cache: verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(offline{})}}), Log: zerolog.Nop()})
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		req := httptest.NewRequest(http.MethodPost, "/validate", bytes.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusOK, http.StatusBadRequest, http.StatusRequestEntityTooLarge:
		default:
			t.Fatalf("status %d for %q: %s", rec.Code, body, rec.Body)
		}
	})
}
