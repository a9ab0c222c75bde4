package judge

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// jobJAR judges a session job's JAR on the images of its cluster, which
// were admitted (cluster is that judgement): the operator fetches the
// jarURI itself and uploads it to the cluster's JobManager, so the JAR's
// classes link against that image's lib/. The answer carries the
// cluster's warnings.
//
// It is long because it is one case per outcome of the jarURI and its
// fetch (unparsable, not fetched by us, gone, refused, unverified,
// admitted), each with its own answer.
func (j *Judge) jobJAR(ctx context.Context, res, fd *deploy.Resource, cluster judgement, limit time.Duration) Outcome {
	base := Outcome{Images: cluster.images}
	allow := func(more ...string) Outcome {
		o := base
		o.Warnings = append(cluster.warnings, more...)
		return o
	}
	refuse := func(f []Finding, msg string, warnings []string) Outcome {
		o := base
		o.Refused, o.Message, o.Findings, o.Warnings = true, msg, f, warnings
		return o
	}
	unverified := func(f []Finding, msg string, warnings []string) Outcome {
		o := base
		o.Unverified, o.Message, o.Findings, o.Warnings = true, msg, f, warnings
		return o
	}
	if res.JarURI == "" {
		return allow()
	}
	u, err := jobjar.Parse(res.JarURI)
	if err != nil {
		text := fmt.Sprintf("spec.job.jarURI: %v, required an absolute URI the operator can fetch (https://host/path/job.jar)", err)
		return refuse([]Finding{{Rule: RuleJobJARURI, Subject: res.ID(), Text: text, Fix: "write the JAR's full URI"}},
			res.ID()+": "+text+"; fix: write the JAR's full URI", cluster.warnings)
	}
	what := fmt.Sprintf("%s: spec.job.jarURI %s", res.ID(), jobjar.Redact(u))
	subject := "spec.job.jarURI " + jobjar.Redact(u)
	switch u.Scheme {
	case "http", "https":
	case "local":
		return allow(what + ": not judged: the operator fetches a session job's JAR itself, through Flink's FileSystem in the operator's pod, " +
			"where no file system serves local:// (Flink: \"Could not find a file system implementation for scheme 'local'\"); " +
			"it is not a path in " + fd.ID() + "'s image. Serve the JAR over https for it to be fetched and judged")
	case "file":
		return allow(what + ": not judged: a file:// jarURI is a file in the operator's pod, read through Flink's FileSystem, not a path in " + fd.ID() + "'s image")
	default:
		return allow(fmt.Sprintf("%s: not judged: the operator reads %s:// through a Flink file system plugin in its own pod; StreamFusion fetches http and https only", what, u.Scheme))
	}
	if j.Jobs == nil {
		return allow(what + ": not judged: job JARs are not fetched (--job-jars=off); --job-jars=fetch judges it")
	}
	if !j.Cache.Deep() {
		return allow(what + ": not judged: no deep check is configured (verdict.Options.Deep)")
	}
	headers, err := jobjar.ParseHeaders(configValue(res.Config, jobjar.HeaderOption))
	if err != nil {
		text := fmt.Sprintf("spec.flinkConfiguration: %v", err)
		return unverified([]Finding{{Rule: RuleUnverified, Subject: subject, Text: text, Unverified: true}},
			what+": "+text, cluster.warnings)
	}
	jj := j.judgeJAR(ctx, u, headers, cluster.admitted, limit)
	warnings := append(cluster.warnings, jj.warnings...)
	on := fmt.Sprintf("%s (sha256 %s) on %s", what, short(jj.sha), fd.ID())
	switch {
	case jj.gone != "":
		text := fmt.Sprintf("found %s, required a JAR the operator can fetch", jj.gone)
		fix := fmt.Sprintf("publish the JAR at that URI or correct spec.job.jarURI (FlinkDeployment %s)", fd.ID())
		return refuse([]Finding{{Rule: RuleJobJARGone, Subject: subject, Text: text, Fix: fix}},
			fmt.Sprintf("%s: %s; fix: %s", what, text, fix), warnings)
	case len(jj.refusals) > 0:
		for i := range jj.findings {
			jj.findings[i].Subject = subject + " on " + jj.findings[i].Subject
		}
		return refuse(jj.findings, on+", which StreamFusion refuses for this job:\n"+strings.Join(jj.refusals, "\n"), warnings)
	case len(jj.failures) > 0:
		var f []Finding
		for _, msg := range jj.failures {
			f = append(f, Finding{Rule: RuleUnverified, Subject: subject, Text: msg, Unverified: true})
		}
		return unverified(f, fmt.Sprintf("%s on %s: %s", what, fd.ID(), strings.Join(jj.failures, "; ")), warnings)
	}
	o := allow()
	o.Warnings = warnings
	return o
}

// MaxJARWarnings bounds the deep check's warnings on a JAR in a review:
// the API server truncates what goes past a few KiB of warnings, and a
// thin connector's JAR has one warning per class of its absent client.
const MaxJARWarnings = 10

// jarJudgement is what one job JAR's deep check says.
type jarJudgement struct {
	sha                          string
	gone                         string // the server says the JAR is not there
	refusals, failures, warnings []string
	findings                     []Finding // the refusals, one reason each
}

// judgeJAR fetches the JAR (a conditional GET when it was fetched before)
// and runs the deep check on each admitted image the job's classes load
// on (the JobManager's and the TaskManagers', usually one).
func (j *Judge) judgeJAR(ctx context.Context, u *url.URL, headers http.Header, cts []deploy.Container, limit time.Duration) jarJudgement {
	var out jarJudgement
	var uses []deploy.Container
	distinct := map[string]bool{}
	for _, ct := range cts {
		k := ct.Image + "|" + ct.Platform + "|" + strings.Join(ct.PullSecrets, ",")
		if !distinct[k] {
			distinct[k] = true
			uses = append(uses, ct)
		}
	}
	if len(uses) == 0 {
		out.warnings = append(out.warnings, fmt.Sprintf("%s: not judged: the cluster names no image", jobjar.Redact(u)))
		return out
	}
	seen := map[string]bool{}
	conditional := true
	for attempt := 0; attempt < 2; attempt++ {
		jar, err := j.Jobs.Fetch(ctx, u, headers, conditional)
		if err != nil {
			out.fetchFailed(ctx, err, j.Jobs.MaxBytes(), limit)
			return out
		}
		out.sha = jar.SHA256
		release := releaseAfter(len(uses), func() { _ = jar.Close() })
		needBytes := false
		out.refusals, out.failures, out.findings = nil, nil, nil
		for _, ct := range uses {
			v, err := j.Cache.VerifyJob(ctx, ct.Image, ct.Platform, j.Secrets.Credentials(ct.PullSecrets),
				verdict.JobJAR{Name: jar.Name, Path: jar.Path, SHA256: jar.SHA256, Release: release})
			who := fmt.Sprintf("%s (%s) image %s", ct.Name, ct.Role, ct.Image)
			switch {
			case errors.Is(err, verdict.ErrNeedJAR):
				needBytes = true
			case errors.Is(err, context.DeadlineExceeded) || err != nil && ctx.Err() != nil:
				out.failures = append(out.failures, fmt.Sprintf("%s: the JAR not judged within %s (the check goes on; a retry is answered from its result)", who, limit))
			case err != nil:
				out.failures = append(out.failures, fmt.Sprintf("%s: %v", who, err))
			case v.Problem != "":
				out.refusals = append(out.refusals, who+": "+v.Problem)
				out.findings = append(out.findings, imageFindings(who, v.Problem, nil)...)
			default:
				for _, f := range v.Decision.Errors() {
					if t := f.Text(); !seen[t] {
						seen[t] = true
						out.refusals = append(out.refusals, t)
						out.findings = append(out.findings, imageFindings(who, "", &admission.Decision{Findings: []admission.Finding{f}})...)
					}
				}
				for _, f := range v.Decision.Warnings() {
					if w := fmt.Sprintf("%s: [%s] %s", ct.Image, f.Rule, f.Text()); !seen[w] && jarFinding(f) {
						seen[w] = true
						out.warnings = append(out.warnings, w)
					}
				}
			}
		}
		if !needBytes {
			if n := len(out.warnings); n > MaxJARWarnings {
				out.warnings = append(out.warnings[:MaxJARWarnings], fmt.Sprintf("%s: %d more warnings of the deep check on this JAR, not listed", jobjar.Redact(u), n-MaxJARWarnings))
			}
			return out
		}
		conditional = false // the verdict was evicted: fetch the bytes
	}
	out.failures = append(out.failures, "the JAR's verdict could not be kept")
	return out
}

// jarFinding says whether a warning of the deep check is about the job
// JAR (its path is in usrlib) rather than the image alone, whose warnings
// the cluster's judgement already carries.
func jarFinding(f admission.Finding) bool {
	return strings.Contains(f.Path, "usrlib/") || f.Symbol != nil
}

// fetchFailed turns a fetch error into the judgement: a JAR the server
// says is not there is a denial (the operator cannot fetch it either);
// anything else (too large, too slow, unreachable) could not be judged.
func (j *jarJudgement) fetchFailed(ctx context.Context, err error, maxBytes int64, limit time.Duration) {
	var se *jobjar.StatusError
	switch {
	case errors.As(err, &se) && se.Gone():
		j.gone = fmt.Sprintf("%d %s from its server", se.Status, http.StatusText(se.Status))
	case errors.Is(err, jobjar.ErrTooLarge):
		j.failures = append(j.failures, fmt.Sprintf("the JAR is not fetched: %v (--job-jar-max-size, %s)", err, jobjar.Size(maxBytes)))
	case ctx.Err() != nil:
		j.failures = append(j.failures, fmt.Sprintf("the JAR is not fetched within %s: %v", limit, err))
	default:
		j.failures = append(j.failures, fmt.Sprintf("the JAR is not fetched: %v", err))
	}
}

// releaseAfter returns a func that runs done on its n-th call.
func releaseAfter(n int, done func()) func() {
	var left atomic.Int64
	left.Store(int64(n))
	return func() {
		if left.Add(-1) == 0 {
			done()
		}
	}
}

// configValue is the value of key in a flattened flinkConfiguration.
func configValue(entries []admission.Entry, key string) string {
	for _, e := range entries {
		if e.Key == key {
			return e.Value
		}
	}
	return ""
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}
