package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/KimMachineGun/automemlimit/memlimit"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
	"github.com/streamfusion/image-entrypoint/internal/webhook"
)

type webhookOptions struct {
	env           []string
	Listen        string
	TLSCert       string
	TLSKey        string
	Timeout       time.Duration
	ReadHeader    time.Duration
	ReadBody      time.Duration
	FailurePolicy string
	PullSecrets   string
	Platform      string
	CacheSize     int
	JSONLog       bool
	Kubeconfig    string
	Clusters      string
	jobJARFlags
	KeptImages    int
	KeptSize      string
	SpoolBudget   string
	RegistryMax   int
	ReviewReads   int
	MetricsListen string
}

// newWebhook declares the webhook command and its flags. It is long
// because it is one flag a line, each with its default and help.
func newWebhook(env []string) *cobra.Command {
	o := &webhookOptions{env: env}
	c := &cobra.Command{
		Use:   "webhook --tls-cert FILE --tls-key FILE [--listen ADDR] [--timeout D]",
		Short: "Serve a validating admission webhook that refuses Flink images the entrypoint would refuse",
		Long: `webhook serves POST /validate (admission.k8s.io/v1 AdmissionReview) for
FlinkDeployment, FlinkSessionJob and Pod CREATE and UPDATE, and GET /healthz,
over HTTPS. It verifies every Flink container's image as 'verify -f' does,
remembers verdicts by image digest, and denies with the message the
entrypoint would write to the termination message.

The certificate and key are reloaded when the files change. The server
answers within --timeout (keep it below the webhook configuration's
timeoutSeconds, 10 s by default); when an image cannot be verified in time
or read at all, it answers as --failure-policy says (set it like the
ValidatingWebhookConfiguration's failurePolicy): Fail denies, Ignore admits
with a warning.

Registry credentials: the Docker config (DOCKER_CONFIG) and pull secrets
mounted below --pull-secrets (DIR/NAME/.dockerconfigjson), the pod's
imagePullSecrets first.

FlinkSessionJobs are judged by the FlinkDeployment they run on, read through
the Kubernetes API (an informer's cache; get, list and watch on
flinkdeployments): with --clusters=api (the default) the server uses the
pod's ServiceAccount, or --kubeconfig; a session job on a refused cluster,
or on one that does not exist, is denied. --clusters=none admits session
jobs with a warning. GET /readyz fails while the serving certificate cannot
be read or the FlinkDeployments are not listed yet.

A session job's JAR (spec.job.jarURI) is what the operator fetches and
uploads to that cluster's JobManager: with --job-jars=fetch (the default)
an http or https jarURI is fetched within the review's deadline (at most
--job-jar-max-size; redirects to http and https only; the session job's
kubernetes.operator.user.artifacts.http.header sent to the jarURI's host
only; system roots plus --job-jar-ca-file; loopback, link-local,
multicast and unspecified addresses refused unless --job-jar-any-host)
and deep-checked on the cluster's images: linkage and shadowing errors
deny, remembered by image digest and JAR digest, the JAR revalidated
with its ETag or Last-Modified. The lib copies of the last --kept-images
images checked (at most --kept-images-size) stay in the temporary
directory, so a new JAR on a known cluster does not read its image again. local://, file:// and file system plugin
schemes (s3://...) are read by the operator in its own pod: admitted
with a warning that they are not judged.

Bounds: every file a review writes to the temporary directory (a large JAR
spooled while its layer is read, the deep check's copies, the kept images'
copies, a session job's JAR) is reserved from --spool-budget before it is
written (set the pod's emptyDir sizeLimit above it); a review whose files
do not fit in time is answered by the failure policy, naming the budget.
At most --registry-requests registry requests are under way at once, and
one review verifies at most --review-reads images at once (references to
one digest count once).

Metrics: GET /metrics on --metrics-listen (plain HTTP, Prometheus text
format): reviews by kind, operation and verdict, their latency, registry
requests and errors, the caches, the spool budget, the certificate's
expiry.`,
		Args: none,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c) },
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", ":8443", "address to listen on")
	f.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (PEM), reloaded when it changes")
	f.StringVar(&o.TLSKey, "tls-key", "", "TLS key file (PEM), reloaded when it changes")
	f.DurationVar(&o.Timeout, "timeout", webhook.DefaultTimeout, "answer within this time (below the API server's timeoutSeconds)")
	f.DurationVar(&o.ReadHeader, "read-header-timeout", webhook.DefaultReadHeaderTimeout, "a connection's TLS handshake and each request's header block must arrive within this (slow clients are cut)")
	f.DurationVar(&o.ReadBody, "read-timeout", webhook.DefaultReadTimeout, "each whole request, its body included, must arrive within this; at least --read-header-timeout")
	f.StringVar(&o.FailurePolicy, "failure-policy", webhook.Fail, "when an image cannot be verified: Fail (deny) or Ignore (admit with a warning)")
	f.StringVar(&o.PullSecrets, "pull-secrets", "", "directory of mounted image pull secrets (NAME/.dockerconfigjson)")
	f.StringVar(&o.Platform, "platform", "linux/amd64", "platform of a multi-platform image when the pod's node selector pins none")
	f.IntVar(&o.CacheSize, "cache-size", 4096, "verdicts kept in memory")
	f.BoolVar(&o.JSONLog, "log-json", false, "log JSON lines")
	f.StringVar(&o.Kubeconfig, "kubeconfig", "", "kubeconfig for the API (default: the pod's ServiceAccount)")
	f.StringVar(&o.Clusters, "clusters", "api", "how a FlinkSessionJob's FlinkDeployment is found: api (read through the Kubernetes API) or none")
	o.bind(f)
	f.IntVar(&o.KeptImages, "kept-images", image.DefaultViews, "images whose lib copies stay in the temporary directory for the next session-job JAR on them (0: none, each new JAR reads its image again)")
	f.StringVar(&o.KeptSize, "kept-images-size", "1Gi", "at most this much of those copies (a Kubernetes quantity: 512Mi, 1Gi)")
	f.StringVar(&o.SpoolBudget, "spool-budget", DefaultSpoolBudget, "the most bytes all reviews write to the temporary directory at once (a Kubernetes quantity; keep it below the directory's size limit)")
	f.IntVar(&o.RegistryMax, "registry-requests", DefaultRegistryRequests, "the most registry requests under way at once, all reviews together")
	f.IntVar(&o.ReviewReads, "review-reads", webhook.DefaultReviewReads, "the most images one review verifies at once")
	f.StringVar(&o.MetricsListen, "metrics-listen", ":9090", `address of the Prometheus metrics (GET /metrics, plain HTTP); "" serves none`)
	return c
}

// run is the webhook command: its flags checked, the spool, transport,
// verdict cache, job JAR fetcher, kept views and metrics built, then the
// server. It is long because it is that wiring, in the order it runs, each
// step a call.
func (o *webhookOptions) run(c *cobra.Command) error {
	if o.TLSCert == "" || o.TLSKey == "" {
		return usagef("%s needs --tls-cert and --tls-key (the API server calls webhooks over HTTPS only)", c.CommandPath())
	}
	if o.Timeout <= 0 || o.Timeout > 30*time.Second {
		return usagef("--timeout %s: want more than 0 and at most 30s (the API server's largest timeoutSeconds)", o.Timeout)
	}
	if o.ReadHeader <= 0 || o.ReadBody < o.ReadHeader {
		return usagef("--read-header-timeout %s, --read-timeout %s: want both more than 0, the whole request's at least the header's", o.ReadHeader, o.ReadBody)
	}
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	budget, err := parseQuantity("--spool-budget", o.SpoolBudget)
	if err != nil {
		return err
	}
	if o.RegistryMax <= 0 || o.ReviewReads <= 0 {
		return usagef("--registry-requests %d, --review-reads %d: want 1 or more", o.RegistryMax, o.ReviewReads)
	}
	if kept, err := parseQuantity("--kept-images-size", o.KeptSize); err == nil && o.KeptImages > 0 && kept >= budget {
		return usagef("--kept-images-size %s is not below --spool-budget %s: the kept images' copies are part of the budget and would leave reviews no room; fix: raise --spool-budget or lower --kept-images-size", o.KeptSize, o.SpoolBudget)
	}
	spooled := spool.New(budget, "--spool-budget")
	metrics := webhook.NewMetrics()
	base := remote.DefaultTransport.(*http.Transport).Clone()
	transport := webhook.LimitRequests(base, o.RegistryMax, metrics)
	opts := verdict.Options{Remote: append([]remote.Option{remote.WithTransport(transport)}, remoteOptions...), MaxEntries: o.CacheSize}
	opts.Read.Cache = readOptions(c, o.env).Cache
	opts.Read.Budget = spooled
	if want != nil {
		opts.Platform = *want
	}
	certs, err := webhook.NewCertReloader(o.TLSCert, o.TLSKey)
	if err != nil {
		return usagef("%v", err)
	}
	log := report.Logger(c.ErrOrStderr(), o.JSONLog, "info")
	serverMemoryLimit(log, memlimit.FromCgroup)
	jobs, err := o.fetcher(spooled, "streamfusion-webhook")
	if err != nil {
		return err
	}
	views, err := o.keptViews()
	if err != nil {
		return err
	}
	opts.Deep = verdict.ImageDeep
	if views != nil {
		defer views.Close()
		opts.Deep = verdict.ViewsDeep(views)
	}
	cfg := webhook.Config{Cache: verdict.New(opts), Secrets: verdict.Secrets{Dir: o.PullSecrets},
		Timeout: o.Timeout, ReadHeaderTimeout: o.ReadHeader, ReadTimeout: o.ReadBody, FailurePolicy: o.FailurePolicy, Log: log, Jobs: jobs, ReviewReads: o.ReviewReads, Metrics: metrics}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	metrics.Watch(webhook.Sources{Cache: cfg.Cache, Budget: spooled, Views: views, Jobs: jobs, Certs: certs,
		RegistryMax: o.RegistryMax, ReviewReads: o.ReviewReads, FailurePolicy: o.FailurePolicy})
	switch o.Clusters {
	case "api":
		clusters, err := o.apiClusters(c)
		if err != nil {
			return err
		}
		cfg.Clusters = clusters
	case "none":
	default:
		return usagef("--clusters %q: want api or none", o.Clusters)
	}
	srv, err := webhook.NewServer(cfg, certs)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	defer func() { _ = ln.Close() }()
	var mln net.Listener
	if o.MetricsListen != "" {
		if mln, err = net.Listen("tcp", o.MetricsListen); err != nil {
			return fmt.Errorf("listen on %s (--metrics-listen): %w", o.MetricsListen, err)
		}
		msrv := webhook.MetricsServer(metrics)
		go func() { _ = msrv.Serve(mln) }()
		defer func() { _ = msrv.Close() }()
		log.Info().Str("listen", mln.Addr().String()).Msg("metrics on GET /metrics")
	}
	b := buildOf()
	log.Info().Str("version", b.Version).Str("commit", b.Commit).Bool("modified", b.Modified).Str("go", b.Go).
		Str("listen", ln.Addr().String()).Dur("timeout", o.Timeout).Str("failurePolicy", o.FailurePolicy).
		Str("spoolBudget", spool.Bytes(budget)).Int("registryRequests", o.RegistryMax).Int("reviewReads", o.ReviewReads).
		Msg("webhook serving /validate, /healthz and /readyz")
	if err := webhook.Serve(c.Context(), srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// Defaults of the webhook's bounds: the spool budget (1536Mi) stays well
// below the chart's emptyDir, whose sizeLimit is the budget and half as
// much again (2304Mi), and above the default --kept-images-size (1Gi).
const (
	DefaultSpoolBudget      = "1536Mi"
	DefaultRegistryRequests = 32
)

// parseQuantity reads a flag's Kubernetes quantity (1Gi, 512Mi) as bytes.
func parseQuantity(flag, s string) (int64, error) {
	q, err := resource.ParseQuantity(s)
	if err != nil || q.Value() <= 0 {
		return 0, usagef("%s %q: want a positive quantity such as 1Gi", flag, s)
	}
	return q.Value(), nil
}

// keptViews keeps the images' lib copies across session jobs' JARs as
// the flags ask; nil with --kept-images=0.
func (o *webhookOptions) keptViews() (*image.Views, error) {
	if o.KeptImages < 0 {
		return nil, usagef("--kept-images %d: want 0 or more", o.KeptImages)
	}
	q, err := resource.ParseQuantity(o.KeptSize)
	if err != nil || q.Value() <= 0 {
		return nil, usagef("--kept-images-size %q: want a positive quantity such as 1Gi", o.KeptSize)
	}
	if o.KeptImages == 0 {
		return nil, nil
	}
	return image.NewViews(o.KeptImages, q.Value()), nil
}

// apiClusters starts the FlinkDeployments' informer with the kubeconfig or
// the pod's ServiceAccount. The server starts serving at once; /readyz
// says when the first list is in.
func (o *webhookOptions) apiClusters(c *cobra.Command) (*judge.APIClusters, error) {
	var cfg *rest.Config
	var err error
	if o.Kubeconfig != "" {
		cfg, err = clientcmd.BuildConfigFromFlags("", o.Kubeconfig)
	} else {
		cfg, err = rest.InClusterConfig()
	}
	if err != nil {
		return nil, usagef("--clusters=api: no Kubernetes API access (%v); give --kubeconfig, run in a pod with its ServiceAccount token mounted, or --clusters=none", err)
	}
	cfg.UserAgent = "streamfusion-webhook"
	client, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", cfg.Host, err)
	}
	return judge.NewAPIClusters(c.Context(), client)
}
