package audit

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/judge"
)

// Verdicts of a row's state.
const (
	Admitted   = "admitted"
	Refused    = "refused"
	Unverified = "unverified" // something could not be read: the answer is incomplete
)

// Auditor judges the rows.
type Auditor struct {
	// Judge judges as the webhook does: its Cache (verdicts by digest, the
	// layer-facts cache below), Secrets and Jobs (session jobs' JARs).
	Judge *judge.Judge
	// Timeout bounds each object's judgement, as the webhook's --timeout
	// bounds a review (default DefaultTimeout).
	Timeout time.Duration
	WhatIf  WhatIf
	// Concurrency bounds the rows judged at once, and so the registry
	// reads under way (default 4).
	Concurrency int
	// Progress is called after each row (done of total), one call at a
	// time; nil: none.
	Progress func(done, total int)

	libImages sync.Map // ref|platform -> *libImage
}

// libImage is a what-if image with its lib changed, built once.
type libImage struct {
	once      sync.Once
	ref       string
	unmatched []string
	err       error
}

// Row is one resource's audit.
type Row struct {
	Namespace string `json:"namespace"`
	Kind      string `json:"kind"`
	Name      string `json:"name"`
	Pods      int    `json:"pods,omitempty"`
	// Cluster is a session job's FlinkDeployment.
	Cluster string     `json:"cluster,omitempty"`
	Images  []ImageRow `json:"images"`
	Today   State      `json:"today"`
	After   State      `json:"after"`
	// Fixed are today's findings the what-if removes, New the ones it
	// brings: the findings that flip.
	Fixed []judge.Finding `json:"fixed,omitempty"`
	New   []judge.Finding `json:"new,omitempty"`
	Notes []string        `json:"notes,omitempty"`
}

// ID names the row: Kind namespace/name.
func (row Row) ID() string {
	if row.Kind == "Pods" {
		return fmt.Sprintf("Pods of %s/%s (%d)", row.Namespace, row.Name, row.Pods)
	}
	return row.Kind + " " + row.Namespace + "/" + row.Name
}

// ImageRow is one container's images.
type ImageRow struct {
	Container string `json:"container"`
	Role      string `json:"role"`
	Image     string `json:"image"` // as the spec names it
	// Running are the references its Pods run (repository@digest).
	Running []string `json:"running,omitempty"`
	// Digest is the platform image the spec's reference names now;
	// TagMoved says it is not what the Pods run (both are judged).
	Digest   string `json:"digest,omitempty"`
	TagMoved bool   `json:"tagMoved,omitempty"`
	// After is the image judged after the what-if, when it differs.
	After string `json:"after,omitempty"`
}

// State is a row's verdict at one point: today, or after the what-if.
type State struct {
	Verdict  string          `json:"verdict"`
	Findings []judge.Finding `json:"findings"`
	Warnings []string        `json:"warnings,omitempty"`
	// Message is why, in the webhook's words, where it would deny (a
	// refusal, or what could not be verified; not clipped as a review's
	// answer is).
	Message string `json:"message,omitempty"`
}

// variant is one way a resource is judged: as its Pods run it, as its
// spec names it now, either after the what-if.
type variant struct {
	res     *deploy.Resource
	running bool
	// spec are the images as the spec names them, container by container.
	spec     []string
	failures []judge.Finding // the what-if image could not be built
}

// Run judges every row, at most Concurrency at once; rows come back in
// the order given.
func (a *Auditor) Run(ctx context.Context, items []*Item) []Row {
	n := a.Concurrency
	if n <= 0 {
		n = 4
	}
	rows := make([]Row, len(items))
	work := make(chan int)
	var done atomic.Int64
	var progress sync.Mutex
	var wg sync.WaitGroup
	for range n {
		wg.Go(func() {
			for i := range work {
				rows[i] = a.row(ctx, items[i])
				if a.Progress != nil {
					progress.Lock()
					a.Progress(int(done.Add(1)), len(items))
					progress.Unlock()
				}
			}
		})
	}
	for i := range items {
		work <- i
	}
	close(work)
	wg.Wait()
	return rows
}

func (a *Auditor) row(ctx context.Context, it *Item) Row {
	r := Row{Namespace: it.Res.Namespace, Kind: it.Res.Kind, Name: it.Name, Pods: it.Pods, Images: []ImageRow{}, Notes: append([]string{}, it.Notes...)}
	if it.Res.Kind == "Pod" && it.Name != it.Res.Name {
		r.Kind = "Pods"
	}
	r.Notes = append(r.Notes, it.Res.Notes...)
	subject := it
	if it.Res.Kind == "FlinkSessionJob" {
		r.Cluster = it.Res.Target
		subject = it.Cluster
	}
	var today []variant
	if subject != nil {
		today = variants(subject)
		r.Images = imageRows(subject)
	}
	todayOut := a.judgeAll(ctx, it, today)
	r.Today = state(todayOut)
	if subject != nil {
		a.tagMoved(&r, subject, today, todayOut)
	}
	if a.WhatIf.Empty() {
		r.After = r.Today
		return r
	}
	var after []variant
	for _, v := range today {
		av, notes := a.after(ctx, v)
		after = append(after, av)
		for _, n := range notes {
			r.Notes = appendNew(r.Notes, n)
		}
	}
	for i := range after {
		for ci, ct := range after[i].res.Containers {
			if ct.Image != today[i].res.Containers[ci].Image && ci < len(r.Images) {
				r.Images[ci].After = appendWord(r.Images[ci].After, ct.Image)
			}
		}
	}
	r.After = state(a.judgeAll(ctx, it, after))
	r.Fixed, r.New = flips(r.Today.Findings, r.After.Findings)
	return r
}

func appendWord(list, w string) string {
	for _, x := range strings.Split(list, ", ") {
		if x == w {
			return list
		}
	}
	if list == "" {
		return w
	}
	return list + ", " + w
}

func appendNew(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

// variants are the ways a resource runs: first the digests its Pods run
// (one variant per extra digest of a container), then its spec as it
// names its images now, unless that is the same.
func variants(it *Item) []variant {
	var out []variant
	base := it.Res
	var spec []string
	for _, ct := range base.Containers {
		spec = append(spec, ct.Image)
	}
	anyRunning := false
	for _, rs := range it.Running {
		anyRunning = anyRunning || len(rs) > 0
	}
	if anyRunning {
		run := clone(base)
		for ci, rs := range it.Running {
			if len(rs) > 0 {
				run.Containers[ci].Image = rs[0]
			}
		}
		out = append(out, variant{res: run, running: true, spec: spec})
		for ci, rs := range it.Running {
			for _, ref := range rs[min(1, len(rs)):] {
				extra := clone(run)
				extra.Containers[ci].Image = ref
				out = append(out, variant{res: extra, running: true, spec: spec})
			}
		}
	}
	if !anyRunning || !sameImages(out[0].res, base) {
		out = append(out, variant{res: base, spec: spec})
	}
	return out
}

func clone(r *deploy.Resource) *deploy.Resource {
	cp := *r
	cp.Containers = append([]deploy.Container{}, r.Containers...)
	return &cp
}

func sameImages(a, b *deploy.Resource) bool {
	for i := range a.Containers {
		if a.Containers[i].Image != b.Containers[i].Image {
			return false
		}
	}
	return true
}

func imageRows(it *Item) []ImageRow {
	var out []ImageRow
	for ci, ct := range it.Res.Containers {
		out = append(out, ImageRow{Container: ct.Name, Role: string(ct.Role), Image: ct.Image, Running: it.Running[ci]})
	}
	return out
}

// judgeAll judges each variant as the webhook would.
func (a *Auditor) judgeAll(ctx context.Context, it *Item, vs []variant) []judge.Outcome {
	if it.Res.Kind == "FlinkSessionJob" && it.Cluster == nil {
		cctx, cancel := context.WithTimeout(ctx, a.timeout())
		defer cancel()
		return []judge.Outcome{a.Judge.SessionJobOn(cctx, it.Res, nil, a.timeout())}
	}
	out := make([]judge.Outcome, len(vs))
	for i, v := range vs {
		cctx, cancel := context.WithTimeout(ctx, a.timeout())
		if it.Res.Kind == "FlinkSessionJob" {
			out[i] = a.Judge.SessionJobOn(cctx, it.Res, v.res, a.timeout())
		} else {
			out[i] = a.Judge.Object(cctx, v.res, a.timeout())
		}
		cancel()
		if len(v.failures) > 0 && !out[i].Refused {
			out[i].Findings = append(out[i].Findings, v.failures...)
			out[i].Unverified = true
			if out[i].Message == "" { // the variant itself was judged admitted: say what was not
				texts := make([]string, len(v.failures))
				for j, f := range v.failures {
					texts[j] = f.Subject + ": " + f.Text
				}
				out[i].Message = strings.Join(texts, "; ")
			}
		}
	}
	return out
}

// state folds the variants' outcomes: refused when one is, unverified
// when one could not be judged, else admitted.
func state(outs []judge.Outcome) State {
	s := State{Verdict: Admitted, Findings: []judge.Finding{}}
	seen := map[string]bool{}
	for _, o := range outs {
		switch {
		case o.Refused:
			if s.Verdict != Refused {
				s.Message = o.Message
			}
			s.Verdict = Refused
		case o.Unverified && s.Verdict == Admitted:
			s.Verdict = Unverified
			if o.Message != "" {
				s.Message = "StreamFusion could not verify this object: " + o.Message
			}
		}
		for _, f := range o.Findings {
			if k := f.Subject + "|" + f.Key(); !seen[k] {
				seen[k] = true
				s.Findings = append(s.Findings, f)
			}
		}
		for _, w := range o.Warnings {
			s.Warnings = appendNew(s.Warnings, w)
		}
	}
	// Refusals first: they decide; what could not be judged after.
	var ref, unv []judge.Finding
	for _, f := range s.Findings {
		if f.Unverified {
			unv = append(unv, f)
		} else {
			ref = append(ref, f)
		}
	}
	s.Findings = append(append([]judge.Finding{}, ref...), unv...)
	return s
}

// tagMoved compares, per container, the image its Pods run with the one
// its spec's reference names now.
func (a *Auditor) tagMoved(r *Row, it *Item, vs []variant, outs []judge.Outcome) {
	var runDigest, specDigest map[int]string
	for i, v := range vs {
		m := map[int]string{}
		for _, iv := range outs[i].Images {
			for ci, ct := range v.res.Containers {
				if ct.Name == iv.Container.Name && ct.Role == iv.Container.Role && iv.Digest != "" {
					m[ci] = iv.Digest
				}
			}
		}
		if v.running && runDigest == nil {
			runDigest = m
		}
		if !v.running {
			specDigest = m
		}
	}
	for ci := range r.Images {
		if specDigest != nil {
			r.Images[ci].Digest = specDigest[ci]
		}
		if runDigest == nil || specDigest == nil || len(it.Running[ci]) == 0 {
			continue
		}
		ir := &r.Images[ci]
		moved := false
		for _, ref := range it.Running[ci] {
			_, d, _ := strings.Cut(ref, "@")
			if d != specDigest[ci] && runDigest[ci] != specDigest[ci] {
				moved = true
			}
		}
		if moved && !isDigestRef(ir.Image) {
			ir.TagMoved = true
			r.Notes = appendNew(r.Notes, fmt.Sprintf("%s: the tag %s now points to %s, the Pods run %s: both judged (a Pod started or restarted on a node without the old image pulls the new one)",
				ir.Container, ir.Image, specDigest[ci], strings.Join(it.Running[ci], ", ")))
		}
	}
}

// after is a variant as the what-if would make it: mapped images, then
// each image's lib changed.
func (a *Auditor) after(ctx context.Context, v variant) (variant, []string) {
	out := variant{res: clone(v.res), running: v.running, spec: v.spec}
	var notes []string
	for ci := range out.res.Containers {
		ct := &out.res.Containers[ci]
		ct.Image = a.WhatIf.mapImage(v.spec[ci], ct.Image)
		if a.WhatIf.changesLib() {
			li := a.libImage(ctx, ct)
			if li.err != nil {
				out.failures = append(out.failures, judge.Finding{Rule: judge.RuleUnverified, Subject: fmt.Sprintf("%s (%s) image %s", ct.Name, ct.Role, ct.Image),
					Text: "the what-if's lib change could not be applied: " + li.err.Error(), Unverified: true})
				continue
			}
			for _, p := range li.unmatched {
				notes = append(notes, fmt.Sprintf("--remove-jar %s: no JAR of %s's lib matches", p, ct.Image))
			}
			ct.Image = li.ref
		}
	}
	return out, notes
}

// DefaultTimeout bounds one resource's judgement when Auditor.Timeout is
// not set, as `streamfusion audit --timeout` does.
const DefaultTimeout = 5 * time.Minute

func (a *Auditor) timeout() time.Duration {
	if a.Timeout <= 0 {
		return DefaultTimeout
	}
	return a.Timeout
}

// libImage builds (once per image and platform) the image with its lib
// changed and registers it with the verdict cache.
func (a *Auditor) libImage(ctx context.Context, ct *deploy.Container) *libImage {
	key := ct.Image + "|" + ct.Platform + "|" + strings.Join(ct.PullSecrets, ",")
	v, _ := a.libImages.LoadOrStore(key, &libImage{})
	li := v.(*libImage)
	li.once.Do(func() {
		cctx, cancel := context.WithTimeout(ctx, a.timeout())
		defer cancel()
		cr := a.Judge.Secrets.Credentials(ct.PullSecrets)
		vd, err := a.Judge.Cache.Verify(cctx, ct.Image, ct.Platform, cr)
		if err != nil {
			li.err = err
			return
		}
		if vd.Report == nil {
			li.err = fmt.Errorf("the image's lib is not known: %s", vd.Problem)
			return
		}
		// The image's layers are read later, by the verification: its
		// context is the audit's, not this deadline's.
		img, err := a.Judge.Cache.Image(ctx, ct.Image, ct.Platform, cr)
		if err != nil {
			li.err = err
			return
		}
		changed, unmatched, err := a.WhatIf.changeLib(img, vd.Report.LibDir, vd.Report.Classpath)
		if err != nil {
			li.err = err
			return
		}
		li.unmatched = unmatched
		li.ref = fmt.Sprintf("%s (what-if: %s)", ct.Image, a.WhatIf.libLabel())
		a.Judge.Cache.Register(li.ref, changed)
	})
	return li
}

// flips are the findings today has and after has not (fixed), and the
// other way round (new), by rule and text: the same finding on another
// image is the same finding. What could not be judged does not flip.
func flips(today, after []judge.Finding) (fixed, added []judge.Finding) {
	keys := func(fs []judge.Finding) map[string]bool {
		m := map[string]bool{}
		for _, f := range fs {
			m[f.Key()] = true
		}
		return m
	}
	t, af := keys(today), keys(after)
	seen := map[string]bool{}
	for _, f := range today {
		if !f.Unverified && !af[f.Key()] && !seen["-"+f.Key()] {
			seen["-"+f.Key()] = true
			fixed = append(fixed, f)
		}
	}
	for _, f := range after {
		if !f.Unverified && !t[f.Key()] && !seen["+"+f.Key()] {
			seen["+"+f.Key()] = true
			added = append(added, f)
		}
	}
	return fixed, added
}

// Summary counts the report.
type Summary struct {
	Resources    int `json:"resources"`
	RefusedToday int `json:"refusedToday"`
	RefusedAfter int `json:"refusedAfter"`
	Unverified   int `json:"unverified"`
	Flipped      int `json:"flipped"`
	// ImagesVerified counts the images the audit verified (once per
	// digest), JobJARsChecked the deep checks of session jobs' JARs on
	// them, VerdictHits the answers from verdicts kept.
	ImagesVerified int64         `json:"imagesVerified"`
	JobJARsChecked int64         `json:"jobJarsChecked"`
	VerdictHits    int64         `json:"verdictHits"`
	Took           time.Duration `json:"tookNanoseconds"`
}
