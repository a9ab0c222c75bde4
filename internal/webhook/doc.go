// Package webhook is a Kubernetes validating admission webhook that refuses,
// at `kubectl apply`, the FlinkDeployments, FlinkSessionJobs and Pods whose
// Flink images the StreamFusion entrypoint would refuse at start, and the
// clusters whose images disagree (internal/deploy's set checks).
//
// It answers POST /validate with an admission.k8s.io/v1 AdmissionReview,
// GET /healthz (alive) and GET /readyz (the serving certificate reads, the
// FlinkDeployments are listed). The judging is internal/judge's (which the
// audit shares): this package turns its Outcome into the answer, a
// refusal into a denial and an object that could not be judged into the
// failure policy's answer. Verdicts come from internal/verdict: by image
// digest, so a known image answers without reading a layer. A denial's message carries,
// for each refused container, the same text the entrypoint writes to the
// termination message (internal/report.Summary).
//
// Deadlines and the failure direction: the API server waits timeoutSeconds
// (10 s by default, at most 30 s) and then applies the
// ValidatingWebhookConfiguration's failurePolicy on its own (Fail: the
// request is rejected; Ignore: it is let through). This server answers
// before that, within Config.Timeout (and within the timeout the API server
// passes in the URL's query), so the operator's choice is applied here
// with a message that says what happened: Config.FailurePolicy "Fail"
// denies an object whose images could not be verified in time or could
// not be read; "Ignore" admits it with a warning. A verification that
// missed the deadline keeps running in the background and fills the cache,
// so the retry that follows a Fail is answered at once. Set both policies
// alike.
//
// A FlinkSessionJob runs on its FlinkDeployment's images, and that cluster
// may predate the webhook or live in a namespace it exempts: the session
// job is judged by the cluster, read through the Kubernetes API (judge.Clusters:
// client-go's informer cache, get/list/watch on flinkdeployments), and
// denied when the cluster is refused or does not exist. The session job's
// own JAR (an http or https spec.job.jarURI, which the operator fetches and
// uploads to that cluster) is fetched (Config.Jobs, internal/jobjar) and
// deep-checked on the cluster's images (verdict.Cache.VerifyJob): its
// linkage and shadowing errors deny. A JAR the operator reads in its own
// pod (local://, file://, s3://...) is admitted with a warning.
//
// Bounds: a review verifies at most Config.ReviewReads images at once (a
// digest once, whatever repository names it); registry requests of all
// reviews pass LimitRequests; every file written below TMPDIR is reserved
// from one spool.Budget first (image.VerifyOptions.Budget,
// jobjar.Options.Budget), and an image whose files did not fit in time is
// answered by the failure policy naming the budget (verdict.PendingError
// says what a verification was waiting for when the review stopped
// waiting). Metrics (Prometheus, client_golang) count reviews by kind,
// operation and verdict, their latency, registry requests and errors, the
// caches, the budget and the certificate's expiry, on a port of their own
// (MetricsServer). docs/webhook-reference.md lists every flag and bound.
//
// The server does not read Secrets through the API: registry credentials
// come from a Docker config (DOCKER_CONFIG) and from pull secrets mounted
// as files (verdict.Secrets), tried in the order of the pod's
// imagePullSecrets. FlinkDeployments are all it reads through the API; job
// JARs are fetched with the session job's own header option only.
package webhook
