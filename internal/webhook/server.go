package webhook

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"mime"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// Failure policies, as the ValidatingWebhookConfiguration names them.
const (
	Fail   = "Fail"
	Ignore = "Ignore"
)

// Limits.
const (
	// DefaultTimeout is below the API server's 10 s default.
	DefaultTimeout = 8 * time.Second
	// DefaultReviewReads is how many images of one review are verified
	// at once.
	DefaultReviewReads = judge.DefaultReads
	// maxBody bounds a review: the API server caps an object at 3 MiB and a
	// review of an UPDATE carries two.
	maxBody = 7 << 20
	// maxMessage bounds a denial's message (each container's part is a
	// termination message of at most 4 KiB).
	maxMessage = 12 << 10
	// margin is what an answer needs after the deadline: encode and write.
	margin = 100 * time.Millisecond
	// DefaultReadHeaderTimeout bounds a connection's TLS handshake and a
	// request's header block; DefaultReadTimeout the whole request, body
	// included. A client slower than that is cut off.
	DefaultReadHeaderTimeout = 5 * time.Second
	DefaultReadTimeout       = 15 * time.Second
	// MaxHeaderBytes bounds a request's header block (HTTP/1.1: a larger
	// one is answered 431; HTTP/2: the header list size the server
	// advertises, and its CONTINUATION frames past it close the
	// connection). The API server sends a few hundred bytes.
	MaxHeaderBytes = 64 << 10
	// MaxConcurrentStreams bounds one HTTP/2 connection's requests under
	// way, so its handlers running at once (the net/http default, made
	// explicit: streams opened and reset past it wait or end the
	// connection, they start no handler).
	MaxConcurrentStreams = 250
)

// Config is the webhook's configuration.
type Config struct {
	Cache         *verdict.Cache
	Secrets       verdict.Secrets
	Timeout       time.Duration // default DefaultTimeout
	FailurePolicy string        // Fail (default) or Ignore
	// ReadHeaderTimeout bounds the TLS handshake and the header block of
	// each request (default DefaultReadHeaderTimeout); ReadTimeout the
	// whole request, its body included (default DefaultReadTimeout).
	ReadHeaderTimeout, ReadTimeout time.Duration
	// Clusters finds a FlinkSessionJob's FlinkDeployment; nil: session
	// jobs are admitted with a warning.
	Clusters judge.Clusters
	// Jobs fetches a session job's JAR (an http or https jarURI) for the
	// deep check against its cluster's images (Cache.VerifyJob); nil: the
	// JAR is not judged, and a warning says so.
	Jobs *jobjar.Fetcher
	// ReviewReads bounds the images one review verifies at once
	// (default DefaultReviewReads); the registry requests of all reviews
	// are bounded by the Cache's transport (LimitRequests).
	ReviewReads int
	// Metrics count reviews and what they cost; nil: not counted.
	Metrics *Metrics
	// Ready are the readiness checks of GET /readyz (the serving
	// certificate, the clusters' cache), each nil when ready.
	Ready []func() error
	Log   zerolog.Logger

	// judge judges the reviews' objects: Cache, Secrets, Clusters, Jobs
	// and ReviewReads, as Validate found them.
	judge judge.Judge
}

// Validate checks the configuration and fills defaults.
func (c *Config) Validate() error {
	if c.Cache == nil {
		return errors.New("webhook: no verdict cache")
	}
	if c.Timeout <= 0 {
		c.Timeout = DefaultTimeout
	}
	if c.ReviewReads <= 0 {
		c.ReviewReads = DefaultReviewReads
	}
	if c.ReadHeaderTimeout <= 0 {
		c.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if c.ReadTimeout <= 0 {
		c.ReadTimeout = DefaultReadTimeout
	}
	switch c.FailurePolicy {
	case "":
		c.FailurePolicy = Fail
	case Fail, Ignore:
	default:
		return fmt.Errorf("failure policy %q: want %s or %s", c.FailurePolicy, Fail, Ignore)
	}
	c.judge = judge.Judge{Cache: c.Cache, Secrets: c.Secrets, Clusters: c.Clusters, Jobs: c.Jobs, Reads: c.ReviewReads}
	return nil
}

// Handler serves /validate, /healthz (the process answers) and /readyz
// (the serving certificate and key read and parse, and the FlinkDeployments
// are listed): a pod whose certificate Secret is unreadable leaves the
// Service's endpoints instead of failing every handshake of the API server.
func Handler(c Config) (http.Handler, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", c.validate)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain")
		_, _ = io.WriteString(w, "ok\n")
	})
	mux.HandleFunc("GET /readyz", c.readyz)
	return mux, nil
}

// readyz answers 200 when every readiness check passes, else 503 naming
// the first that fails.
func (c *Config) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain")
	for _, check := range c.Ready {
		if err := check(); err != nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = io.WriteString(w, "not ready: "+err.Error()+"\n")
			return
		}
	}
	_, _ = io.WriteString(w, "ok\n")
}

// NewServer returns an HTTPS server for the handler, its certificate from
// certs (reloaded as the files change). /readyz checks the certificate
// files and, with Clusters, the FlinkDeployments' cache.
func NewServer(c Config, certs *CertReloader) (*http.Server, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	c.Ready = append(c.Ready[:len(c.Ready):len(c.Ready)], certs.Ready)
	if c.Clusters != nil {
		c.Ready = append(c.Ready, c.Clusters.Ready)
	}
	h, err := Handler(c)
	if err != nil {
		return nil, err
	}
	return &http.Server{
		Handler:           h,
		TLSConfig:         &tls.Config{GetCertificate: certs.GetCertificate, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: c.ReadHeaderTimeout,
		ReadTimeout:       c.ReadTimeout,
		WriteTimeout:      c.Timeout + 10*time.Second,
		IdleTimeout:       90 * time.Second,
		MaxHeaderBytes:    MaxHeaderBytes,
		HTTP2:             &http.HTTP2Config{MaxConcurrentStreams: MaxConcurrentStreams},
		ErrorLog:          log.New(c.Log, "", 0), // TLS handshake errors and the like
	}, nil
}

// Serve runs srv on ln until ctx ends, then shuts it down gracefully.
func Serve(ctx context.Context, srv *http.Server, ln net.Listener) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.ServeTLS(ln, "", "") }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
		defer cancel()
		err := srv.Shutdown(sctx)
		if serr := <-errc; !errors.Is(serr, http.ErrServerClosed) {
			err = errors.Join(err, serr)
		}
		return err
	}
}

// badRequest answers a request that is not an AdmissionReview; the API
// server then applies its failurePolicy.
func (c *Config) badRequest(w http.ResponseWriter, code int, format string, args ...any) {
	c.Metrics.badRequest(code)
	http.Error(w, "streamfusion webhook: "+fmt.Sprintf(format, args...), code)
}

func (c *Config) validate(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	done := c.Metrics.started()
	defer done()
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		c.badRequest(w, http.StatusMethodNotAllowed, "%s /validate: POST an admission.k8s.io/v1 AdmissionReview", r.Method)
		return
	}
	if mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type")); err != nil || mt != "application/json" {
		c.badRequest(w, http.StatusUnsupportedMediaType, "Content-Type %q: want application/json", r.Header.Get("Content-Type"))
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			c.badRequest(w, http.StatusRequestEntityTooLarge, "the review is larger than %d bytes", maxBody)
			return
		}
		c.badRequest(w, http.StatusBadRequest, "read the review: %v", err)
		return
	}
	var review admissionv1.AdmissionReview
	if err := json.Unmarshal(body, &review); err != nil {
		c.badRequest(w, http.StatusBadRequest, "not an AdmissionReview: %v", err)
		return
	}
	if review.APIVersion != "admission.k8s.io/v1" || review.Kind != "AdmissionReview" {
		c.badRequest(w, http.StatusBadRequest, "apiVersion %q kind %q: want admission.k8s.io/v1 AdmissionReview", review.APIVersion, review.Kind)
		return
	}
	if review.Request == nil || review.Request.UID == "" {
		c.badRequest(w, http.StatusBadRequest, "the AdmissionReview has no request or no request.uid")
		return
	}
	limit := c.deadline(r)
	ctx, cancel := context.WithTimeout(r.Context(), limit-margin)
	defer cancel()
	resp := c.review(ctx, review.Request, limit)
	resp.UID = review.Request.UID
	all := resp.Warnings
	resp.Warnings = boundWarnings(all)
	out := admissionv1.AdmissionReview{TypeMeta: review.TypeMeta, Response: resp}
	w.Header().Set("Content-Type", "application/json")
	if err := json.NewEncoder(w).Encode(out); err != nil {
		c.Log.Warn().Err(err).Msg("write the admission response")
	}
	req := review.Request
	c.Metrics.reviewed(req, resp, time.Since(start))
	ev := c.Log.Info()
	if !resp.Allowed {
		ev = c.Log.Warn().Str("message", resp.Result.Message)
	}
	if len(resp.Warnings) < len(all) {
		ev = ev.Strs("warnings", dedupe(all)) // every one, where the answer has room for some
	}
	ev.Str("uid", string(req.UID)).Str("kind", req.Kind.Kind).Str("namespace", req.Namespace).Str("name", req.Name).
		Str("operation", string(req.Operation)).Bool("allowed", resp.Allowed).Dur("took", time.Since(start)).Msg("review")
}

// maxWarnings bounds an answer's warnings: the API server passes on 4,096
// runes of warnings in all (k8s.io/apiserver's warning recorder, which
// drops repeated texts and, past that, clips each to 256 runes and drops
// the rest). Counted in bytes, which are never fewer than runes.
const maxWarnings = 4 << 10

// boundWarnings is warnings once each (the containers of a Pod that share
// an image share its warnings), within maxWarnings: a warning that does
// not fit ends the list, and a last one says how many were left out and
// where they all are.
func boundWarnings(warnings []string) []string {
	ws := dedupe(warnings)
	const room = 160 // for the last one
	total := 0
	for i, w := range ws {
		if total+len(w) > maxWarnings-room {
			if w = report.Clip(w, maxWarnings-room-total); len(w) > 80 && i == len(ws)-1 {
				return append(ws[:i:i], w) // the last one, clipped
			}
			return append(ws[:i:i], fmt.Sprintf("... and %d more StreamFusion warnings, beyond what the API server shows: the webhook's log and `streamfusion audit --json` list every one", len(ws)-i))
		}
		total += len(w)
	}
	return ws
}

// dedupe is ss without repeats, in first-seen order.
func dedupe(ss []string) []string {
	if len(ss) == 0 {
		return nil
	}
	seen := make(map[string]bool, len(ss))
	out := make([]string, 0, len(ss))
	for _, s := range ss {
		if !seen[s] {
			seen[s] = true
			out = append(out, s)
		}
	}
	return out
}

// deadline is the configured timeout, shortened to the API server's own
// when it passes one in the query (?timeout=10s).
func (c *Config) deadline(r *http.Request) time.Duration {
	d := c.Timeout
	if q, err := time.ParseDuration(r.URL.Query().Get("timeout")); err == nil && q > 0 && q-time.Second < d {
		d = q - time.Second
	}
	return max(d, 2*margin)
}

// review decides one request.
func (c *Config) review(ctx context.Context, req *admissionv1.AdmissionRequest, limit time.Duration) *admissionv1.AdmissionResponse {
	if req.Operation != admissionv1.Create && req.Operation != admissionv1.Update || req.SubResource != "" {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	res, err := deploy.ParseObject(req.Object.Raw)
	if errors.Is(err, deploy.ErrNoWorkload) {
		return &admissionv1.AdmissionResponse{Allowed: true}
	}
	if err != nil {
		return c.failure(fmt.Sprintf("the %s object cannot be read: %v", req.Kind.Kind, err))
	}
	if res.Namespace == "" {
		res.Namespace = req.Namespace
	}
	if res.Kind == "FlinkSessionJob" {
		return c.answer(c.judge.SessionJob(ctx, res, limit))
	}
	return c.answer(c.judge.Object(ctx, res, limit))
}

// answer is the review's answer to an outcome: a refusal denies, an
// object that could not be judged is answered by the failure policy, with
// the outcome's warnings either way. Each image that could not be judged
// is counted by cause.
func (c *Config) answer(o judge.Outcome) *admissionv1.AdmissionResponse {
	for _, iv := range o.Images {
		switch {
		case iv.Late:
			c.Metrics.imageFailure(causeDeadline)
		case iv.Err != nil:
			c.Metrics.imageFailure(causeOf(iv.Err))
		}
	}
	switch {
	case o.Refused:
		return deny(http.StatusForbidden, metav1.StatusReasonForbidden, o.Message, o.Warnings)
	case o.Unverified:
		r := c.failure(o.Message)
		r.Warnings = append(r.Warnings, o.Warnings...)
		return r
	}
	return &admissionv1.AdmissionResponse{Allowed: true, Warnings: o.Warnings}
}

// failure answers in the configured failure direction. The audit
// annotation failure-policy says that the policy decided (the API
// server's audit log shows it, prefixed with the webhook's name).
func (c *Config) failure(msg string) *admissionv1.AdmissionResponse {
	var r *admissionv1.AdmissionResponse
	if c.FailurePolicy == Ignore {
		r = &admissionv1.AdmissionResponse{Allowed: true, Warnings: []string{"StreamFusion did not verify this object (failure policy Ignore): " + msg}}
	} else {
		r = deny(http.StatusInternalServerError, metav1.StatusReasonInternalError, "StreamFusion could not verify this object (failure policy Fail): "+msg, nil)
	}
	r.AuditAnnotations = map[string]string{auditFailurePolicy: c.FailurePolicy}
	return r
}

// auditFailurePolicy is the audit annotation of an answer the failure
// policy decided.
const auditFailurePolicy = "failure-policy"

func deny(code int32, reason metav1.StatusReason, msg string, warnings []string) *admissionv1.AdmissionResponse {
	return &admissionv1.AdmissionResponse{Allowed: false, Warnings: warnings, Result: &metav1.Status{
		Status: metav1.StatusFailure, Code: code, Reason: reason, Message: report.Clip(msg, maxMessage)}}
}
