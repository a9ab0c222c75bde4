package webhook

import (
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// Metrics are the webhook's Prometheus metrics, on a registry of their
// own (with the Go runtime's and the process's): reviews by kind,
// operation and verdict, their latency, the registry requests and their
// errors by cause, the caches, the spool budget, the certificate's
// expiry. A nil *Metrics counts nothing.
type Metrics struct {
	Registry *prometheus.Registry

	reviews       *prometheus.CounterVec
	duration      *prometheus.HistogramVec
	inFlight      prometheus.Gauge
	badRequests   *prometheus.CounterVec
	imageFailures *prometheus.CounterVec
	regRequests   *prometheus.CounterVec
	regErrors     *prometheus.CounterVec
	regInFlight   prometheus.Gauge
}

// Verdict labels of streamfusion_webhook_reviews_total.
const (
	VerdictAllowed             = "allowed"
	VerdictDenied              = "denied"
	VerdictFailurePolicyAllow  = "failure_policy_allowed"
	VerdictFailurePolicyDenied = "failure_policy_denied"
)

// Causes of streamfusion_webhook_image_failures_total: why an image of a
// review was not judged.
const (
	causeDeadline      = "deadline"       // not verified within the review's deadline
	causeSpoolBudget   = "spool_budget"   // the spool budget refused or did not grant in time
	causeRegistryLimit = "registry_limit" // no registry request slot in time
	causeRegistry      = "registry"       // the registry answered with an error, or not at all
	causeOther         = "other"
)

const namespace = "streamfusion_webhook"

// NewMetrics returns the metrics, registered.
func NewMetrics() *Metrics {
	m := &Metrics{
		Registry: prometheus.NewRegistry(),
		reviews: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "reviews_total",
			Help: "Admission reviews answered, by object kind, operation and verdict (allowed, denied, failure_policy_allowed, failure_policy_denied)."},
			[]string{"kind", "operation", "verdict"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: namespace, Name: "review_duration_seconds",
			Help:    "Time from a review's request to its answer, by object kind.",
			Buckets: []float64{0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30}},
			[]string{"kind"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "reviews_in_flight",
			Help: "Admission reviews being answered."}),
		badRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "bad_requests_total",
			Help: "Requests to /validate answered with an HTTP error (not an AdmissionReview), by status code."},
			[]string{"code"}),
		imageFailures: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "image_failures_total",
			Help: "Images of reviews that could not be judged (the failure policy answered), by cause (deadline, spool_budget, registry_limit, registry, other)."},
			[]string{"cause"}),
		regRequests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "registry_requests_total",
			Help: "Requests sent to image registries, by what they asked for (manifest, blob, token, other)."},
			[]string{"kind"}),
		regErrors: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: namespace, Name: "registry_errors_total",
			Help: "Registry requests that failed, by cause (status_401, status_404, status_5xx, status_other, timeout, canceled, connection, body)."},
			[]string{"cause"}),
		regInFlight: prometheus.NewGauge(prometheus.GaugeOpts{Namespace: namespace, Name: "registry_requests_in_flight",
			Help: "Registry requests sent and not yet read to the end."}),
	}
	m.Registry.MustRegister(m.reviews, m.duration, m.inFlight, m.badRequests, m.imageFailures, m.regRequests, m.regErrors, m.regInFlight,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// Sources are what the metrics read at each scrape; each may be nil.
type Sources struct {
	Cache         *verdict.Cache
	Budget        *spool.Budget
	Views         *image.Views
	Jobs          *jobjar.Fetcher
	Certs         *CertReloader
	RegistryMax   int // LimitRequests' bound, 0: none
	ReviewReads   int
	FailurePolicy string
}

// Watch registers the gauges and counters read from s at scrape time.
func (m *Metrics) Watch(s Sources) {
	gauge := func(name, help string, f func() float64) {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: name, Help: help}, f))
	}
	counter := func(name, help string, f func() float64) {
		m.Registry.MustRegister(prometheus.NewCounterFunc(prometheus.CounterOpts{Namespace: namespace, Name: name, Help: help}, f))
	}
	if c := s.Cache; c != nil {
		counter("verdict_cache_hits_total", "Images answered from a kept verdict.", func() float64 { return float64(c.Stats.Hits.Load()) })
		counter("verdict_cache_misses_total", "Images verified (no kept verdict): layers read, or their facts taken from the layer-facts cache.", func() float64 { return float64(c.Stats.Verified.Load()) })
		counter("verdict_cache_content_hits_total", "Images (or session jobs' JARs on them) answered, for a digest never verified, from the verdict of an image of the same content: a rebuild that changed only labels or timestamps. Counted in the hits too.", func() float64 { return float64(c.Stats.Content.Load()) })
		counter("verdict_cache_evictions_total", "Verdicts pushed out by --cache-size.", func() float64 { return float64(c.Stats.Evicted.Load()) })
		counter("registry_resolves_total", "Tags resolved to a digest (one manifest HEAD each).", func() float64 { return float64(c.Stats.Resolved.Load()) })
		gauge("verdict_cache_entries", "Verdicts kept (an image by its digest, and by index digest and platform).", func() float64 { return float64(c.Len()) })
		gauge("verifications_running", "Image verifications under way, those no review waits for any more included.", func() float64 { return float64(c.Running()) })
	}
	if b := s.Budget; b != nil {
		gauge("spool_bytes_in_use", "Bytes of the temporary directory reserved by reviews now (spooled JARs, the deep check's copies, kept images, job JARs).", func() float64 { return float64(b.InUse()) })
		gauge("spool_budget_bytes", "The spool budget (--spool-budget).", func() float64 { return float64(b.Total()) })
		gauge("spool_bytes_peak", "The most bytes reserved at once since the start.", func() float64 { return float64(b.Peak()) })
		gauge("spool_waiting", "Reservations waiting for room in the spool budget.", func() float64 { return float64(b.Waiting()) })
		counter("spool_refused_total", "Reservations the spool budget refused (larger than it, or not granted in time).", func() float64 { return float64(b.Refused()) })
	}
	if v := s.Views; v != nil {
		gauge("kept_images", "Images whose lib copies are kept for session jobs' JARs.", func() float64 { n, _ := v.Len(); return float64(n) })
		gauge("kept_images_bytes", "Bytes of the kept images' lib copies.", func() float64 { _, b := v.Len(); return float64(b) })
		gauge("kept_images_max_bytes", "The bound on those bytes (--kept-images-size).", func() float64 { return float64(v.MaxBytes()) })
	}
	if j := s.Jobs; j != nil {
		counter("job_jar_requests_total", "GETs of session jobs' JARs.", func() float64 { return float64(j.Stats.Requests.Load()) })
		counter("job_jar_downloads_total", "Session jobs' JARs read (cache misses).", func() float64 { return float64(j.Stats.Downloads.Load()) })
		counter("job_jar_not_modified_total", "Session jobs' JARs answered 304 (cache hits).", func() float64 { return float64(j.Stats.NotModified.Load()) })
	}
	if c := s.Certs; c != nil {
		gauge("certificate_expiry_timestamp_seconds", "When the serving certificate in use expires (Unix time).", func() float64 {
			t := c.NotAfter()
			if t.IsZero() {
				return 0
			}
			return float64(t.Unix())
		})
	}
	if s.RegistryMax > 0 {
		limit := float64(s.RegistryMax)
		gauge("registry_requests_max", "The bound on registry requests at once (--registry-requests).", func() float64 { return limit })
	}
	if s.ReviewReads > 0 {
		reads := float64(s.ReviewReads)
		gauge("review_reads_max", "The bound on images one review verifies at once (--review-reads).", func() float64 { return reads })
	}
	if s.FailurePolicy != "" {
		m.Registry.MustRegister(prometheus.NewGaugeFunc(prometheus.GaugeOpts{Namespace: namespace, Name: "failure_policy",
			Help: "The failure policy the server applies (1 for the one in force).", ConstLabels: prometheus.Labels{"policy": s.FailurePolicy}},
			func() float64 { return 1 }))
	}
}

// Handler serves the metrics in Prometheus' text (or OpenMetrics) format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{Registry: m.Registry})
}

// MetricsServer serves GET /metrics over plain HTTP (a port of its own:
// the API server calls only the HTTPS port).
func MetricsServer(m *Metrics) *http.Server {
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.Handler())
	return &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second, ReadTimeout: 15 * time.Second, WriteTimeout: 30 * time.Second, IdleTimeout: 90 * time.Second}
}

func (m *Metrics) started() func() {
	if m == nil {
		return func() {}
	}
	m.inFlight.Inc()
	return m.inFlight.Dec
}

func (m *Metrics) badRequest(code int) {
	if m != nil {
		m.badRequests.WithLabelValues(strconv.Itoa(code)).Inc()
	}
}

func (m *Metrics) imageFailure(cause string) {
	if m != nil {
		m.imageFailures.WithLabelValues(cause).Inc()
	}
}

func (m *Metrics) reviewed(req *admissionv1.AdmissionRequest, resp *admissionv1.AdmissionResponse, took time.Duration) {
	if m == nil {
		return
	}
	v := VerdictAllowed
	_, policy := resp.AuditAnnotations[auditFailurePolicy]
	switch {
	case policy && resp.Allowed:
		v = VerdictFailurePolicyAllow
	case policy:
		v = VerdictFailurePolicyDenied
	case !resp.Allowed:
		v = VerdictDenied
	}
	m.reviews.WithLabelValues(req.Kind.Kind, string(req.Operation), v).Inc()
	m.duration.WithLabelValues(req.Kind.Kind).Observe(took.Seconds())
}

// causeOf names why an image was not judged.
func causeOf(err error) string {
	var pending *verdict.PendingError
	switch {
	case errors.Is(err, spool.ErrBudget), errors.As(err, &pending) && strings.Contains(pending.Doing, "spool budget"):
		return causeSpoolBudget
	case errors.Is(err, ErrRegistryBusy):
		return causeRegistryLimit
	case errors.As(err, &pending):
		return causeDeadline
	case errors.Is(err, verdict.ErrResolve):
		return causeRegistry
	}
	return causeOther
}
