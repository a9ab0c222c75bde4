package main

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/spf13/cobra"

	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
	"github.com/streamfusion/image-entrypoint/internal/webhook"
)

type webhookOptions struct {
	env           []string
	Listen        string
	TLSCert       string
	TLSKey        string
	Timeout       time.Duration
	FailurePolicy string
	PullSecrets   string
	Platform      string
	CacheSize     int
	JSONLog       bool
}

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
imagePullSecrets first.`,
		Args: none,
		RunE: func(c *cobra.Command, _ []string) error { return o.run(c) },
	}
	f := c.Flags()
	f.StringVar(&o.Listen, "listen", ":8443", "address to listen on")
	f.StringVar(&o.TLSCert, "tls-cert", "", "TLS certificate file (PEM), reloaded when it changes")
	f.StringVar(&o.TLSKey, "tls-key", "", "TLS key file (PEM), reloaded when it changes")
	f.DurationVar(&o.Timeout, "timeout", webhook.DefaultTimeout, "answer within this time (below the API server's timeoutSeconds)")
	f.StringVar(&o.FailurePolicy, "failure-policy", webhook.Fail, "when an image cannot be verified: Fail (deny) or Ignore (admit with a warning)")
	f.StringVar(&o.PullSecrets, "pull-secrets", "", "directory of mounted image pull secrets (NAME/.dockerconfigjson)")
	f.StringVar(&o.Platform, "platform", "linux/amd64", "platform of a multi-platform image when the pod's node selector pins none")
	f.IntVar(&o.CacheSize, "cache-size", 4096, "verdicts kept in memory")
	f.BoolVar(&o.JSONLog, "log-json", false, "log JSON lines")
	return c
}

func (o *webhookOptions) run(c *cobra.Command) error {
	if o.TLSCert == "" || o.TLSKey == "" {
		return usagef("%s needs --tls-cert and --tls-key (the API server calls webhooks over HTTPS only)", c.CommandPath())
	}
	if o.Timeout <= 0 || o.Timeout > 30*time.Second {
		return usagef("--timeout %s: want more than 0 and at most 30s (the API server's largest timeoutSeconds)", o.Timeout)
	}
	want, err := parsePlatform(o.Platform)
	if err != nil {
		return err
	}
	opts := verdict.Options{Remote: remoteOptions, MaxEntries: o.CacheSize}
	opts.Read.Cache = readOptions(c, o.env).Cache
	if want != nil {
		opts.Platform = *want
	}
	certs, err := webhook.NewCertReloader(o.TLSCert, o.TLSKey)
	if err != nil {
		return usagef("%v", err)
	}
	log := report.Logger(c.ErrOrStderr(), o.JSONLog, "info")
	cfg := webhook.Config{Cache: verdict.New(opts), Secrets: verdict.Secrets{Dir: o.PullSecrets},
		Timeout: o.Timeout, FailurePolicy: o.FailurePolicy, Log: log}
	srv, err := webhook.NewServer(cfg, certs)
	if err != nil {
		return usagef("%v", err)
	}
	ln, err := net.Listen("tcp", o.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w", o.Listen, err)
	}
	log.Info().Str("listen", ln.Addr().String()).Dur("timeout", o.Timeout).Str("failurePolicy", o.FailurePolicy).Msg("webhook serving /validate and /healthz")
	if err := webhook.Serve(c.Context(), srv, ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
