package judge

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// judgement is what the images of one object say: refusals (the rules or
// the set checks), failures (an image not verified in time, or unreadable)
// and warnings.
type judgement struct {
	refusals, failures, warnings []string
	// admitted are the containers whose images were admitted.
	admitted []deploy.Container
	// findings are the refusals and failures, one reason each; images
	// each container's verdict.
	findings []Finding
	images   []ImageVerdict
}

// images verifies each distinct image of res and checks the set. At most
// Judge.Reads images are verified at once (the JobManager and
// TaskManagers usually share one; a Pod may list thousands); references
// naming one digest are one image. Images not started by the deadline
// are not verified.
//
// It is long because it is the images verified at once, then one case per
// verdict (pending, past the deadline, unreadable, refused, admitted),
// each with its message and finding.
func (j *Judge) images(ctx context.Context, res *deploy.Resource, limit time.Duration) judgement {
	type result struct {
		v   *verdict.Verdict
		err error
	}
	byImage := map[string]*result{}
	slots := make(chan struct{}, j.reads())

	var wg sync.WaitGroup
	started := 0
	for _, ct := range res.Containers {
		k := imageKey(ct)
		if byImage[k] != nil {
			continue
		}
		r := &result{}
		byImage[k] = r
		select {
		case slots <- struct{}{}:
			started++
		case <-ctx.Done():
			r.err = &verdict.PendingError{Ref: ct.Image, Err: context.Cause(ctx), Doing: notStarted(started, j.reads())}
			continue
		}
		wg.Go(func() {
			defer func() { <-slots }()
			r.v, r.err = j.Cache.Verify(ctx, ct.Image, ct.Platform, j.Secrets.Credentials(ct.PullSecrets))
		})
	}
	wg.Wait()

	var out judgement
	var members []deploy.Member
	for _, ct := range res.Containers {
		r := byImage[imageKey(ct)]
		v, err := r.v, r.err
		who := fmt.Sprintf("%s (%s) image %s", ct.Name, ct.Role, ct.Image)
		iv := ImageVerdict{Container: ct}
		if v != nil {
			iv.Digest, iv.Admitted = v.Digest, v.Admitted
		}
		if err != nil {
			iv.Error, iv.Err = err.Error(), err
		}
		var pending *verdict.PendingError
		switch {
		case errors.As(err, &pending) && pending.Doing != "":
			msg := fmt.Sprintf("not verified within %s: %s", limit, pending.Doing)
			out.failures = append(out.failures, who+": "+msg)
			out.findings = append(out.findings, Finding{Rule: RuleUnverified, Subject: who, Text: msg, Unverified: true})
		case err != nil && !errors.Is(err, spool.ErrBudget) && (errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil):
			iv.Late = true
			msg := fmt.Sprintf("not verified within %s (the verification goes on; a retry is answered from its result)", limit)
			out.failures = append(out.failures, who+": "+msg)
			out.findings = append(out.findings, Finding{Rule: RuleUnverified, Subject: who, Text: msg, Unverified: true})
		case err != nil:
			out.failures = append(out.failures, fmt.Sprintf("%s: %v", who, err))
			out.findings = append(out.findings, Finding{Rule: RuleUnverified, Subject: who, Text: err.Error(), Unverified: true,
				Fix: "make the image readable with the credentials given (the pod's imagePullSecrets, DOCKER_CONFIG)"})
		case !v.Admitted:
			out.refusals = append(out.refusals, who+": "+v.Message(string(ct.Role)))
			out.findings = append(out.findings, imageFindings(who, v.Problem, v.Decision)...)
		default:
			members = append(members, deploy.Member{Resource: res, Container: ct, Facts: v.Facts})
			out.admitted = append(out.admitted, ct)
			if v.Decision != nil {
				for _, f := range v.Decision.Warnings() {
					out.warnings = append(out.warnings, fmt.Sprintf("%s: [%s] %s", ct.Image, f.Rule, f.Text()))
				}
			}
		}
		out.images = append(out.images, iv)
	}
	out.warnings = append(out.warnings, j.jobSQL(ctx, res, members)...)
	for _, f := range deploy.CheckSet([]*deploy.Resource{res}, members) {
		if f.Severity == admission.Error {
			out.refusals = append(out.refusals, fmt.Sprintf("[%s] %s", f.Rule, f.Text()))
			out.findings = append(out.findings, Finding{Rule: f.Rule, Subject: "cluster " + f.Cluster, Text: f.Message, Fix: f.Fix})
		} else {
			out.warnings = append(out.warnings, fmt.Sprintf("[%s] %s", f.Rule, f.Text()))
		}
	}
	return out
}

// jobSQL gives the admitted JobManager images of a deployment whose job
// is given SQL of its image (spec.job.args naming a .sql file not below a
// volume) the findings of the image's deep check on that SQL (deploy's
// checkJobSQL judges them): the deep check runs for the SQL only, its
// other findings are not the quick verdict's to change. A deep check that
// cannot be had (no deep check configured, the deadline, the image past
// its bounds) leaves the SQL unjudged, with a warning saying so.
func (j *Judge) jobSQL(ctx context.Context, res *deploy.Resource, members []deploy.Member) []string {
	files := deploy.JobSQLFiles(res)
	if len(files) == 0 {
		return nil
	}
	var warnings []string
	done := map[string]*verdict.Verdict{}
	for i, m := range members {
		if m.Container.Group != deploy.GroupJobManager || !deploy.NeedsImageSQL(m.Container, files) {
			continue
		}
		k := imageKey(m.Container)
		v, ok := done[k]
		if !ok {
			var err error
			if j.Cache.Deep() {
				v, err = j.Cache.VerifyDeep(ctx, m.Container.Image, m.Container.Platform, j.Secrets.Credentials(m.Container.PullSecrets))
			} else {
				err = verdict.ErrNoDeep
			}
			if err != nil {
				warnings = append(warnings, fmt.Sprintf("%s: the SQL spec.job.args names was not judged against %s's table factories: %v", res.ID(), m.Container.Image, err))
			}
			done[k] = v
		}
		if v != nil {
			members[i].Facts.SQL = v.Facts.SQL
		}
	}
	return warnings
}

// notStarted says why an image's verification was not started: the
// deadline passed first, and how many of the object's other images were
// started before it (none: it was the first, or the only one).
func notStarted(started, reads int) string {
	const doing = "not started: the deadline passed before its verification began"
	if started == 0 {
		return doing
	}
	return fmt.Sprintf("%s (%d other image(s) of the object were started first, at most %d at once)", doing, started, reads)
}

// imageKey names one image of a review: a digest reference by its digest
// (the repository does not change the image), else the reference, with
// the platform and the pull secrets.
func imageKey(ct deploy.Container) string {
	ref := ct.Image
	if d, err := name.NewDigest(ct.Image); err == nil {
		ref = d.DigestStr()
	}
	return ref + "|" + ct.Platform + "|" + strings.Join(ct.PullSecrets, ",")
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
