package judge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// Rules of the judge's own findings (the entrypoint's rules and the set
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

// Rules are the judge's own part of the rule catalogue.
var Rules = []admission.Rule{
	{ID: RuleImageUnusable, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "An image the rules cannot be run on (StreamFusion settings in its environment that do not parse, an unsafe layer)."},
	{ID: RuleSessionTarget, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob names no FlinkDeployment, or one that does not exist, so the operator cannot run it either."},
	{ID: RuleJobJARURI, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob's spec.job.jarURI is not an absolute URI the operator can fetch."},
	{ID: RuleJobJARGone, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "A FlinkSessionJob's JAR is not at its jarURI: its server says so."},
	{ID: RuleUnverified, Severity: admission.Error, Tier: admission.TierWebhook, Doc: "Something could not be judged in time or at all (an image not read, a JAR not fetched): the failure policy decides, Fail denies and Ignore admits with a warning."},
}

// DefaultReads is how many images of one object are verified at once.
const DefaultReads = 8

// Judge judges Kubernetes objects (FlinkDeployments, Pods, the workloads
// of internal/deploy) and session jobs as the entrypoint would judge their
// images at start. The webhook answers reviews with it and the audit
// reports with it; neither changes a field after the first call.
type Judge struct {
	Cache   *verdict.Cache
	Secrets verdict.Secrets
	// Clusters finds a FlinkSessionJob's FlinkDeployment; nil: session
	// jobs are admitted with a warning.
	Clusters Clusters
	// Jobs fetches a session job's JAR (an http or https jarURI) for the
	// deep check against its cluster's images (Cache.VerifyJob); nil: the
	// JAR is not judged, and a warning says so.
	Jobs *jobjar.Fetcher
	// Reads bounds the images one object verifies at once (default
	// DefaultReads).
	Reads int
}

// Finding is one reason behind an outcome, structured for reports (the
// audit); the outcome's message says the same in sentences.
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

// ImageVerdict is one container's image as an outcome saw it.
type ImageVerdict struct {
	Container deploy.Container `json:"container"`
	// Digest is the platform image's digest ("" when it was not read).
	Digest   string `json:"digest,omitempty"`
	Admitted bool   `json:"admitted"`
	Error    string `json:"error,omitempty"`
	// Err is why the image was not judged (nil when it was); Late says
	// that the deadline passed while it was verified (Err then says how).
	Err  error `json:"-"`
	Late bool  `json:"-"`
}

// Outcome is the judgement of one object: refused (the rules refuse it),
// unverified (something could not be judged; the caller's failure policy
// decides), or admitted, with the findings behind it.
type Outcome struct {
	Refused bool `json:"refused"`
	// Unverified: not refused, but something could not be judged (the
	// Unverified findings say what).
	Unverified bool `json:"unverified,omitempty"`
	// Message is the refusal, or what could not be judged, in sentences
	// naming the object ("" when admitted).
	Message  string         `json:"message,omitempty"`
	Findings []Finding      `json:"findings"`
	Warnings []string       `json:"warnings,omitempty"`
	Images   []ImageVerdict `json:"images,omitempty"`
}

// Admitted says the object is neither refused nor unverified.
func (o Outcome) Admitted() bool { return !o.Refused && !o.Unverified }

// unverifiedOutcome is an object that could not be judged at all.
func unverifiedOutcome(subject, msg string) Outcome {
	return Outcome{Unverified: true, Message: msg, Findings: []Finding{{Rule: RuleUnverified, Subject: subject, Text: msg, Unverified: true}}}
}

func (j *Judge) reads() int {
	if j.Reads <= 0 {
		return DefaultReads
	}
	return j.Reads
}

// Object judges a FlinkDeployment or a Pod (any resource of internal/deploy
// but a session job): each image, then the set, within ctx; limit is the
// deadline messages name.
func (j *Judge) Object(ctx context.Context, res *deploy.Resource, limit time.Duration) Outcome {
	v := j.images(ctx, res, limit)
	o := Outcome{Findings: v.findings, Images: v.images, Warnings: v.warnings}
	switch {
	case len(v.refusals) > 0:
		o.Refused, o.Message = true, res.ID()+": "+strings.Join(v.refusals, "\n")
	case len(v.failures) > 0:
		o.Unverified, o.Message = true, res.ID()+": "+strings.Join(v.failures, "; ")
	}
	return o
}

// SessionJob judges a FlinkSessionJob by the FlinkDeployment it runs on,
// read through Clusters: the cluster may predate the webhook or live in a
// namespace it exempts, and the job runs on that cluster's images. Without
// Clusters (no API access configured) it is admitted with a warning.
func (j *Judge) SessionJob(ctx context.Context, res *deploy.Resource, limit time.Duration) Outcome {
	cluster := res.Namespace + "/" + res.Target
	if j.Clusters == nil {
		return Outcome{Warnings: []string{fmt.Sprintf(
			"%s runs on FlinkDeployment %s: not looked up (no API access to read FlinkDeployments is configured); its images are checked when that FlinkDeployment is applied", res.ID(), cluster)}}
	}
	if res.Target == "" {
		return j.SessionJobOn(ctx, res, nil, limit)
	}
	raw, err := j.Clusters.Get(ctx, res.Namespace, res.Target)
	if errors.Is(err, ErrNoCluster) {
		return j.SessionJobOn(ctx, res, nil, limit)
	}
	if err != nil {
		return unverifiedOutcome(res.ID(), fmt.Sprintf("%s: its FlinkDeployment %s could not be read: %v", res.ID(), cluster, err))
	}
	fd, err := deploy.ParseObject(raw)
	if err != nil {
		return unverifiedOutcome(res.ID(), fmt.Sprintf("%s: its FlinkDeployment %s cannot be read: %v", res.ID(), cluster, err))
	}
	if fd.Namespace == "" {
		fd.Namespace = res.Namespace
	}
	return j.SessionJobOn(ctx, res, fd, limit)
}

// SessionJobOn judges a session job on its cluster (fd; nil when it does
// not exist): the cluster's images, then the job's JAR on them.
func (j *Judge) SessionJobOn(ctx context.Context, res, fd *deploy.Resource, limit time.Duration) Outcome {
	cluster := res.Namespace + "/" + res.Target
	refuse := func(rule, text, fix string) Outcome {
		return Outcome{Refused: true, Findings: []Finding{{Rule: rule, Subject: res.ID(), Text: text, Fix: fix}},
			Message: res.ID() + ": " + text + "; fix: " + fix}
	}
	if res.Target == "" {
		return refuse(RuleSessionTarget, "spec.deploymentName: found none, required the FlinkDeployment the job runs on", "name it")
	}
	if fd == nil {
		return refuse(RuleSessionTarget, fmt.Sprintf(
			"spec.deploymentName: found %q, required an existing FlinkDeployment: FlinkDeployment %s does not exist, so the operator cannot run the job either",
			res.Target, cluster), "apply the FlinkDeployment first, or name one that exists")
	}
	v := j.images(ctx, fd, limit)
	o := Outcome{Findings: v.findings, Images: v.images, Warnings: v.warnings}
	switch {
	case len(v.refusals) > 0:
		o.Refused = true
		o.Message = fmt.Sprintf("%s runs on %s, which StreamFusion refuses: %s", res.ID(), fd.ID(), strings.Join(v.refusals, "\n"))
		return o
	case len(v.failures) > 0:
		o.Unverified = true
		o.Message = fmt.Sprintf("%s runs on %s: %s", res.ID(), fd.ID(), strings.Join(v.failures, "; "))
		return o
	}
	return j.jobJAR(ctx, res, fd, v, limit)
}
