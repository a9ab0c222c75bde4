package webhook

import (
	"context"
	"net/http"
	"strings"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
)

// Rules of the webhook's own findings (the entrypoint's rules and the set
// checks keep their IDs).
const (
	// RuleImageUnusable is an image the rules cannot be run on (unusable
	// StreamFusion settings, an unsafe layer): refused.
	RuleImageUnusable = "image-unusable"
	// RuleSessionTarget is a session job with no FlinkDeployment, or one
	// that does not exist.
	RuleSessionTarget = "session-target"
	// RuleJobJARURI is a session job's jarURI the operator cannot read.
	RuleJobJARURI = "job-jar-uri"
	// RuleJobJARGone is a session job's JAR its server says is not there.
	RuleJobJARGone = "job-jar-gone"
	// RuleUnverified is something that could not be judged (an image not
	// read, a JAR not fetched): the failure policy decides, not the rules.
	RuleUnverified = "unverified"
)

// Rules are the webhook's own part of the rule catalogue.
var Rules = []admission.Rule{
	{ID: RuleImageUnusable, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "An image the rules cannot be run on (StreamFusion settings in its environment that do not parse, an unsafe layer)."},
	{ID: RuleSessionTarget, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob names no FlinkDeployment, or one that does not exist, so the operator cannot run it either."},
	{ID: RuleJobJARURI, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob's spec.job.jarURI is not an absolute URI the operator can fetch."},
	{ID: RuleJobJARGone, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob's JAR is not at its jarURI: its server says so."},
	{ID: RuleUnverified, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "Something could not be judged in time or at all (an image not read, a JAR not fetched): the failure policy decides, Fail denies and Ignore admits with a warning."},
}

// Finding is one reason behind a judgement, structured for reports (the
// audit); the review's message says the same in sentences.
type Finding struct {
	Rule string `json:"rule"`
	// Subject is what the finding is about: a container and its image, a
	// cluster, a session job's jarURI.
	Subject string `json:"subject,omitempty"`
	// Text is what was found and what was required, without the fix.
	Text string `json:"text"`
	Fix  string `json:"fix,omitempty"`
	// Unverified is a finding that is not a refusal: it could not be judged.
	Unverified bool `json:"unverified,omitempty"`
}

// Key names the finding apart from its subject (the image that carries
// it), so the same finding on two images of one resource compares equal.
func (f Finding) Key() string { return f.Rule + "|" + f.Text }

// ImageVerdict is one container's image as a judgement saw it.
type ImageVerdict struct {
	Container deploy.Container `json:"container"`
	// Digest is the platform image's digest ("" when it was not read).
	Digest   string `json:"digest,omitempty"`
	Admitted bool   `json:"admitted"`
	Error    string `json:"error,omitempty"`
}

// Outcome is the webhook's judgement of one object: the answer a review
// gives (Response) and the findings behind it.
type Outcome struct {
	Response *admissionv1.AdmissionResponse `json:"-"`
	// Refused: the rules refuse it (Findings holds why). An object that is
	// neither refused nor Allowed could not be verified (Unverified
	// findings) and is denied only under failure policy Fail.
	Refused  bool           `json:"refused"`
	Findings []Finding      `json:"findings"`
	Warnings []string       `json:"warnings,omitempty"`
	Images   []ImageVerdict `json:"images,omitempty"`
}

// Allowed is the review's answer.
func (o Outcome) Allowed() bool { return o.Response != nil && o.Response.Allowed }

// Judge judges a FlinkDeployment or a Pod (any resource of
// internal/deploy but a session job) as a review of it would, within
// ctx; Config.Timeout names the deadline in messages.
func (c *Config) Judge(ctx context.Context, res *deploy.Resource) Outcome {
	return c.objectOutcome(ctx, res, c.Timeout)
}

// JudgeSessionJob judges a FlinkSessionJob on the FlinkDeployment it runs
// on (cluster, nil when it does not exist), as a review would: the
// cluster's images, then the job's JAR on them.
func (c *Config) JudgeSessionJob(ctx context.Context, sj, cluster *deploy.Resource) Outcome {
	return c.sessionOutcome(ctx, sj, cluster, c.Timeout)
}

// objectOutcome is the answer to a FlinkDeployment or a Pod.
func (c *Config) objectOutcome(ctx context.Context, res *deploy.Resource, limit time.Duration) Outcome {
	v := c.judge(ctx, res, limit)
	o := Outcome{Findings: v.findings, Images: v.images, Warnings: v.warnings}
	switch {
	case len(v.refusals) > 0:
		o.Refused = true
		o.Response = deny(http.StatusForbidden, metav1.StatusReasonForbidden, res.ID()+": "+strings.Join(v.refusals, "\n"), v.warnings)
	case len(v.failures) > 0:
		o.Response = c.failure(res.ID() + ": " + strings.Join(v.failures, "; "))
		o.Response.Warnings = append(o.Response.Warnings, v.warnings...)
	default:
		o.Response = &admissionv1.AdmissionResponse{Allowed: true, Warnings: v.warnings}
	}
	return o
}

// imageFindings are the errors of a refused image, one Finding each.
func imageFindings(who string, problem string, d *admission.Decision) []Finding {
	if problem != "" || d == nil {
		return []Finding{{Rule: RuleImageUnusable, Subject: who, Text: problem,
			Fix: "rebuild the image with usable StreamFusion settings and layers (streamfusion verify IMAGE says what)"}}
	}
	var out []Finding
	for _, f := range d.Errors() {
		out = append(out, Finding{Rule: f.Rule, Subject: who, Text: strings.TrimSuffix(f.Text(), "; fix: "+f.Fix), Fix: f.Fix})
	}
	return out
}
