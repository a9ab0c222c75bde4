package verdict

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"golang.org/x/sync/singleflight"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/source"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/spool"
)

// Verdict is what one image would do at start.
type Verdict struct {
	Ref      string              `json:"image"`
	Digest   string              `json:"digest"` // of the platform's image
	Platform string              `json:"platform"`
	Admitted bool                `json:"admitted"`
	Facts    deploy.ImageFacts   `json:"facts"`
	Report   *report.Report      `json:"report,omitempty"`
	Decision *admission.Decision `json:"-"`
	// Problem is an image the rules cannot even be run on (unusable
	// StreamFusion settings, an unsafe layer): refused, with this reason.
	Problem string `json:"problem,omitempty"`

	content string // contentKey of the image judged; "" when not known
}

// Message is the refusal as the entrypoint would write it to the
// termination message for role; empty when admitted.
func (v *Verdict) Message(role string) string {
	switch {
	case v.Admitted:
		return ""
	case v.Problem != "":
		return report.Clip(fmt.Sprintf("StreamFusion refused to start %s: %s", role, v.Problem), report.MaxTermination)
	}
	return report.Summary(role, v.Decision)
}

// Options configure a Cache.
type Options struct {
	Remote   []remote.Option // transport, user agent...; credentials come per call
	Platform v1.Platform     // for an index when the caller names none; default linux/amd64
	Local    bool            // accept 'docker save' tarballs and OCI layouts (the CLI)
	// MaxEntries bounds the keys kept (default 4096), oldest out first: a
	// verdict is kept under its image's digest, and also under an index's
	// digest with the platform and under its content when those apply.
	MaxEntries int
	// VerifyTimeout bounds one detached verification (default 2 minutes).
	VerifyTimeout time.Duration
	// Read is how an image's layers are read: with the layer-facts cache,
	// an image whose base layers were seen before reads only its new ones.
	Read image.VerifyOptions
	// Deep verifies an image with a job JAR in its usrlib (the deep check:
	// linkage and shadowing of the job's classes against lib/), ImageDeep
	// or a stand-in; nil: VerifyJob answers ErrNoDeep.
	Deep func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar JobJAR) (*image.Result, error)
	// MaxDeep bounds the deep checks that run at once (default 2): each
	// copies the image's lib and usrlib JARs to the temp directory (about
	// 270 MB for a Flink 2.2 image) and keeps a core busy for seconds.
	// The others wait within their verification's deadline.
	MaxDeep int
}

// JobJAR is a session job's JAR for the deep check: the file at Path is
// placed at $FLINK_HOME/usrlib/Name of the image.
type JobJAR struct {
	// Name "" asks for the image's deep check with no job JAR (VerifyDeep).
	Name   string
	Path   string // "" when only the digest is known (an unchanged JAR)
	SHA256 string // hex, the verdict's key with the image digest
	// Release is called once the file is no longer needed: when the
	// verification that reads it ends (it may outlive the caller's
	// deadline), or at once when it is not read. nil: nothing to do.
	// VerifyJob makes it once-only: every path that is done with the JAR
	// calls it.
	Release func()
}

// Errors of VerifyJob.
var (
	// ErrNoDeep is a cache without Options.Deep.
	ErrNoDeep = errors.New("the deep check is not available")
	// ErrNeedJAR is a JobJAR without a file whose verdict is not kept
	// (evicted, or a new image): fetch the JAR and ask again.
	ErrNeedJAR = errors.New("the job JAR's verdict on this image is not kept: its bytes are needed")
)

// Stats count what the cache did.
type Stats struct {
	Hits, Verified, Resolved atomic.Int64
	// Deep counts the deep verifications, with a job JAR or for a job's
	// SQL (VerifyDeep): a subset of Verified.
	Deep atomic.Int64
	// Evicted counts the verdicts pushed out by MaxEntries.
	Evicted atomic.Int64
	// Content counts the verdicts answered for an image digest never
	// verified, from a verdict of another digest with the same content
	// (contentKey): a rebuild that changed only labels or timestamps. They
	// are counted in Hits too.
	Content atomic.Int64
}

// Cache verifies images and keeps verdicts by digest.
type Cache struct {
	opts  Options
	group singleflight.Group
	Stats Stats

	pullers   sync.Map // Credentials.Key -> *remote.Puller
	synthetic sync.Map // reference -> v1.Image (Register)

	deepSlots chan struct{} // MaxDeep tokens

	fmu     sync.Mutex
	flights map[string]*flight     // verifications waited for, by singleflight key
	heads   map[string]*headFlight // tag resolutions under way, by credentials and tag (under fmu)
	running atomic.Int64

	mu      sync.RWMutex
	entries map[string]*Verdict
	order   []string
}

// New returns an empty cache.
func New(o Options) *Cache {
	if o.Platform.OS == "" {
		o.Platform = v1.Platform{OS: "linux", Architecture: "amd64"}
	}
	if o.MaxEntries <= 0 {
		o.MaxEntries = 4096
	}
	if o.VerifyTimeout <= 0 {
		o.VerifyTimeout = 2 * time.Minute
	}
	if o.MaxDeep <= 0 {
		o.MaxDeep = 2
	}
	// Registry retries within a review's deadline: the library's own
	// (1 s, then 3 s) outlast it, so a 500 or a dropped connection would
	// be answered as a timeout instead of by what the registry said. The
	// caller's options come after and may set their own.
	o.Remote = append([]remote.Option{remote.WithRetryBackoff(RetryBackoff)}, o.Remote...)
	return &Cache{opts: o, entries: map[string]*Verdict{}, deepSlots: make(chan struct{}, o.MaxDeep), flights: map[string]*flight{}, heads: map[string]*headFlight{}}
}

// RetryBackoff is the registry retries of a Cache: three tries, 100 ms
// and then 200 ms apart, well within a review's deadline.
var RetryBackoff = remote.Backoff{Duration: 100 * time.Millisecond, Factor: 2, Jitter: 0.1, Steps: 3}

// ErrResolve wraps a failure to reach or read the image: not a verdict.
var ErrResolve = errors.New("cannot read the image")

// Credentials are a keychain and a key naming it: registry connections
// (and their tokens) are kept per key, so calls with the same key share
// them. The zero value is the Docker config.
type Credentials struct {
	Key      string
	Keychain authn.Keychain
}

// puller returns the registry client kept for the credentials.
func (c *Cache) puller(cr Credentials) (*remote.Puller, error) {
	if p, ok := c.pullers.Load(cr.Key); ok {
		return p.(*remote.Puller), nil
	}
	kc := cr.Keychain
	if kc == nil {
		kc = authn.DefaultKeychain
	}
	p, err := remote.NewPuller(append([]remote.Option{remote.WithAuthFromKeychain(kc)}, c.opts.Remote...)...)
	if err != nil {
		return nil, err
	}
	actual, _ := c.pullers.LoadOrStore(cr.Key, p)
	return actual.(*remote.Puller), nil
}

// Verify returns the verdict on ref for platform ("" for the default),
// with the given credentials.
func (c *Cache) Verify(ctx context.Context, ref, platform string, cr Credentials) (*Verdict, error) {
	return c.verifyRef(ctx, ref, platform, cr, nil)
}

// VerifyJob returns the verdict on ref with the job JAR in its usrlib: the
// deep check. Verdicts are kept by image digest and JAR digest, so a JAR
// judged on an image before answers without reading either.
func (c *Cache) VerifyJob(ctx context.Context, ref, platform string, cr Credentials, jar JobJAR) (*Verdict, error) {
	release := func() {}
	if jar.Release != nil {
		release = sync.OnceFunc(jar.Release)
	}
	jar.Release = release
	if c.opts.Deep == nil {
		release()
		return nil, ErrNoDeep
	}
	return c.verifyRef(ctx, ref, platform, cr, &jar)
}

// ImageDeep is Options.Deep of internal/image: the image verified deep
// with the job JAR in its usrlib.
func ImageDeep(ctx context.Context, read image.VerifyOptions, img v1.Image, jar JobJAR) (*image.Result, error) {
	read.JobJARs, read.Deep = jobJARs(jar), true
	return read.Verify(ctx, img)
}

// jobJARs places jar in usrlib; none for VerifyDeep's.
func jobJARs(jar JobJAR) []image.JobJAR {
	if jar.Name == "" {
		return nil
	}
	return []image.JobJAR{{Name: jar.Name, Path: jar.Path}}
}

// ViewsDeep is ImageDeep reusing an image's lib across job JARs: the
// image's layers are read once while vs keeps it, and each new JAR on it
// is checked on the kept view (image.Views; same findings).
func ViewsDeep(vs *image.Views) func(context.Context, image.VerifyOptions, v1.Image, JobJAR) (*image.Result, error) {
	return func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar JobJAR) (*image.Result, error) {
		read.JobJARs, read.Deep = jobJARs(jar), true
		return vs.Verify(ctx, read, img)
	}
}

// VerifyDeep returns the verdict on ref from the deep check with no job
// JAR: what a FlinkDeployment whose job runs SQL of the image needs (its
// usrlib's SQL against the table factories of lib and usrlib). Kept by
// digest as the job JARs' verdicts are; ErrNoDeep without Options.Deep.
func (c *Cache) VerifyDeep(ctx context.Context, ref, platform string, cr Credentials) (*Verdict, error) {
	return c.VerifyJob(ctx, ref, platform, cr, JobJAR{})
}

// Deep says whether VerifyJob can judge a job JAR (Options.Deep is set).
func (c *Cache) Deep() bool { return c.opts.Deep != nil }

// jobKey is what a job JAR adds to a verdict's key.
func jobKey(jar *JobJAR) string {
	switch {
	case jar == nil:
		return ""
	case jar.Name == "":
		return "|deep"
	}
	return "|jar:" + jar.SHA256
}

// needsJAR: a job JAR known only by its digest, whose verdict is not
// kept (ErrNeedJAR).
func needsJAR(jar *JobJAR) bool { return jar != nil && jar.Name != "" && jar.Path == "" }

func (c *Cache) verifyRef(ctx context.Context, ref, platform string, cr Credentials, jar *JobJAR) (*Verdict, error) {
	v, run, err := c.prepare(ctx, ref, platform, cr, jar)
	if run == nil {
		jar.release() // read by nothing, or read already (a synthetic or local image)
		return v, err
	}
	return c.verifyOnce(ctx, ref, run, jar)
}

// verification is a verification prepare leaves to run: the image by
// digest, for a platform, with a registry client, under its key.
type verification struct {
	key  string
	r    name.Reference
	want v1.Platform
	p    *remote.Puller
}

// prepare answers what needs no verification of its own (a kept verdict,
// a synthetic or local image, an error), else says which to run.
func (c *Cache) prepare(ctx context.Context, ref, platform string, cr Credentials, jar *JobJAR) (*Verdict, *verification, error) {
	want := c.opts.Platform
	if platform != "" {
		p, err := v1.ParsePlatform(platform)
		if err != nil {
			return nil, nil, fmt.Errorf("platform %q: %w", platform, err)
		}
		want = *p
	}
	if img, ok := c.synthetic.Load(ref); ok {
		v, err := c.syntheticVerdict(ctx, ref, img.(v1.Image), want, jar)
		return v, nil, err
	}
	if c.opts.Local {
		if _, err := os.Stat(ref); err == nil {
			v, err := c.local(ctx, ref, want, jar)
			return v, nil, err
		}
	}
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, nil, fmt.Errorf("%w %q: %w", ErrResolve, ref, err)
	}
	p, err := c.puller(cr)
	if err != nil {
		return nil, nil, err
	}
	plat := want.String()
	var top string
	if d, ok := r.(name.Digest); ok {
		top = d.DigestStr()
	} else {
		desc, err := c.head(ctx, p, cr.Key, r)
		var pe *PendingError
		if errors.As(err, &pe) {
			pe.Ref = ref
			return nil, nil, pe
		}
		if err != nil {
			return nil, nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
		}
		top = desc.Digest.String()
		// Fetch what HEAD named, so a tag moved meanwhile cannot mix verdicts.
		r = r.Context().Digest(top)
	}
	sfx := jobKey(jar)
	if v := c.kept(top, plat, sfx); v != nil {
		return c.hit(v, ref), nil, nil
	}
	if needsJAR(jar) {
		return nil, nil, ErrNeedJAR
	}
	return nil, &verification{key: top + "|" + plat + sfx, r: r, want: want, p: p}, nil
}

// verifyOnce runs one verification per image (and job JAR), detached from
// this caller's deadline: what it reads goes on and fills the caches for
// the retry. Only its waits for the spool budget end with the last caller
// waiting for it (spool.WithWait): a verification nobody waits for holds
// no more of the budget than it had. The job JAR is released once (its
// release is once-only): by the verification that reads it when that
// ends, and by this caller once the verification it waited for (its own,
// or one under way that it joined) has ended.
func (c *Cache) verifyOnce(ctx context.Context, ref string, run *verification, jar *JobJAR) (*Verdict, error) {
	f := c.join(run.key)
	defer c.leave(f)
	ch := c.group.DoChan(run.key, func() (any, error) {
		defer jar.release()
		c.running.Add(1)
		defer c.running.Add(-1)
		vctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.opts.VerifyTimeout)
		defer cancel()
		vctx = spool.WithWait(vctx, f.wait, func(s string) { f.doing.Store(&s) })
		return c.fetchAndVerify(vctx, run.r, run.want, run.p, jar)
	})
	select {
	case res := <-ch:
		jar.release()
		if res.Err != nil {
			return nil, res.Err
		}
		return c.hit(res.Val.(*Verdict), ref), nil
	case <-ctx.Done():
		go func() { <-ch; jar.release() }()
		pe := &PendingError{Ref: ref, Err: context.Cause(ctx)}
		if d := f.doing.Load(); d != nil {
			pe.Doing = *d
		}
		return nil, pe
	}
}

// head resolves r's tag, answering when ctx ends even while the
// registry library sleeps between its retries. Callers resolving the same
// tag with the same credentials at once share one manifest HEAD: a second
// request started while the first is under way could only answer the
// same, and under load (a hundred reviews of a few tags in flight) each
// would otherwise wait for a registry connection slot of its own. The
// request is cancelled when no caller waits for it any more, as a
// caller's own would be at its deadline; a caller coming later starts a
// new one.
func (c *Cache) head(ctx context.Context, p *remote.Puller, creds string, r name.Reference) (*v1.Descriptor, error) {
	key := creds + "\x00" + r.String()
	c.fmu.Lock()
	h := c.heads[key]
	if h == nil {
		hctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
		h = &headFlight{done: make(chan struct{}), cancel: cancel}
		c.heads[key] = h
		c.Stats.Resolved.Add(1)
		go func() {
			h.d, h.err = p.Head(hctx, r)
			cancel()
			c.fmu.Lock()
			if c.heads[key] == h {
				delete(c.heads, key)
			}
			c.fmu.Unlock()
			close(h.done)
		}()
	}
	h.waiters++
	c.fmu.Unlock()
	select {
	case <-h.done:
		c.fmu.Lock()
		h.waiters--
		c.fmu.Unlock()
		return h.d, h.err
	case <-ctx.Done():
		c.fmu.Lock()
		if h.waiters--; h.waiters == 0 {
			h.cancel()
			if c.heads[key] == h {
				delete(c.heads, key)
			}
		}
		c.fmu.Unlock()
		return nil, &PendingError{Err: context.Cause(ctx), Doing: "resolving the tag " + r.String() + " (the registry has not answered)"}
	}
}

// headFlight is a manifest HEAD under way and the number of callers
// waiting for it (under Cache.fmu). d and err are set before done closes.
type headFlight struct {
	done    chan struct{}
	cancel  context.CancelFunc
	waiters int
	d       *v1.Descriptor
	err     error
}

// PendingError is a verification the caller stopped waiting for: it goes
// on (or, waiting for the spool budget, ends once no caller waits).
type PendingError struct {
	Ref   string
	Doing string // what the verification was waiting for, when it said; "" otherwise
	Err   error  // why the caller stopped: its context's cause
}

func (e *PendingError) Error() string {
	if e.Doing != "" {
		return fmt.Sprintf("verify %s: %v (it was %s)", e.Ref, e.Err, e.Doing)
	}
	return fmt.Sprintf("verify %s: %v", e.Ref, e.Err)
}

func (e *PendingError) Unwrap() error { return e.Err }

// flight is a verification under way and the callers waiting for it.
type flight struct {
	key     string
	callers int // under Cache.fmu
	wait    context.Context
	stop    context.CancelFunc // ends wait: no caller waits any more
	doing   atomic.Pointer[string]
}

// join counts a caller of the verification key, making its flight.
func (c *Cache) join(key string) *flight {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	f := c.flights[key]
	if f == nil {
		f = &flight{key: key}
		f.wait, f.stop = context.WithCancel(context.Background())
		c.flights[key] = f
	}
	f.callers++
	return f
}

// leave is a caller no longer waiting: the last one ends the flight's
// waits for the spool budget (a caller coming later makes a new flight).
func (c *Cache) leave(f *flight) {
	c.fmu.Lock()
	defer c.fmu.Unlock()
	if f.callers--; f.callers == 0 {
		f.stop()
		if c.flights[f.key] == f {
			delete(c.flights, f.key)
		}
	}
}

// Running is the number of verifications under way, those no caller
// waits for any more included.
func (c *Cache) Running() int64 { return c.running.Load() }

// release is JobJAR.Release on a nil-able JAR.
func (j *JobJAR) release() {
	if j != nil && j.Release != nil {
		j.Release()
	}
}

// hit returns a copy of a cached verdict under the name it was asked by.
func (c *Cache) hit(v *Verdict, ref string) *Verdict {
	c.Stats.Hits.Add(1)
	cp := *v
	cp.Ref = ref
	return &cp
}

func (c *Cache) fetchAndVerify(ctx context.Context, r name.Reference, want v1.Platform, p *remote.Puller, jar *JobJAR) (*Verdict, error) {
	desc, err := p.Get(ctx, r)
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
	}
	top := desc.Digest.String()
	var img v1.Image
	if desc.MediaType.IsIndex() {
		idx, err := desc.ImageIndex()
		if err != nil {
			return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
		}
		img, err = pick(idx, want)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", r, err)
		}
	} else if img, err = desc.Image(); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, r, err)
	}
	v, err := c.verify(ctx, r.String(), img, want, jar)
	if err != nil {
		return nil, err
	}
	c.store(v, top, want.String(), jobKey(jar))
	return v, nil
}

// pick returns the index's image for the platform.
func pick(idx v1.ImageIndex, want v1.Platform) (v1.Image, error) {
	m, err := idx.IndexManifest()
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrResolve, err)
	}
	for _, d := range m.Manifests {
		if d.Platform == nil || !(d.MediaType == types.OCIManifestSchema1 || d.MediaType == types.DockerManifestSchema2) {
			continue
		}
		if d.Platform.OS == want.OS && d.Platform.Architecture == want.Architecture && (want.Variant == "" || d.Platform.Variant == want.Variant) {
			return idx.Image(d.Digest)
		}
	}
	return nil, fmt.Errorf("%w: the index holds no %s image", ErrNoPlatform, want.String())
}

// ErrNoPlatform is an index without the platform the pod will run on.
var ErrNoPlatform = errors.New("no image for the platform")

func (c *Cache) local(ctx context.Context, ref string, want v1.Platform, jar *JobJAR) (*Verdict, error) {
	src, err := source.Open(ctx, ref)
	if err != nil {
		return nil, err
	}
	imgs, err := src.Images(&want)
	if err != nil {
		return nil, err
	}
	d, err := imgs[0].Image.Digest()
	if err != nil {
		return nil, err
	}
	if v := c.kept(d.String(), want.String(), jobKey(jar)); v != nil {
		return c.hit(v, ref), nil
	}
	if needsJAR(jar) {
		return nil, ErrNeedJAR
	}
	v, err := c.verify(ctx, ref, imgs[0].Image, want, jar)
	if err != nil {
		return nil, err
	}
	c.store(v, d.String(), want.String(), jobKey(jar))
	return v, nil
}

// verify runs the entrypoint's rules on one image. Images the rules cannot
// run on for reasons of their own content are verdicts; anything else is
// an error.
func (c *Cache) verify(ctx context.Context, ref string, img v1.Image, want v1.Platform, jar *JobJAR) (*Verdict, error) {
	d, err := img.Digest()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	cfg, err := img.ConfigFile()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	content := contentKey(cfg)
	if v := c.sameContent(content, jobKey(jar), d.String(), want.String(), d.String()); v != nil {
		return v, nil
	}
	c.Stats.Verified.Add(1)
	var res *image.Result
	if jar != nil {
		select {
		case c.deepSlots <- struct{}{}:
		case <-ctx.Done():
			return nil, fmt.Errorf("%w %s: waiting for one of the %d deep checks that run at once: %w", ErrResolve, ref, cap(c.deepSlots), ctx.Err())
		}
		defer func() { <-c.deepSlots }()
		c.Stats.Deep.Add(1)
		res, err = c.opts.Deep(ctx, c.opts.Read, img, *jar)
	} else {
		res, err = c.opts.Read.Verify(ctx, img)
	}
	v := &Verdict{Ref: ref, Digest: d.String(), Platform: want.String(), content: content}
	switch {
	case errors.Is(err, image.ErrConfig), errors.Is(err, image.ErrLayer):
		v.Problem = err.Error()
		return v, nil
	case err != nil:
		return nil, fmt.Errorf("%w %s: %w", ErrResolve, ref, err)
	}
	rep := report.New(res.Facts, res.Decision)
	v.Platform = res.Platform.String()
	v.Admitted, v.Decision, v.Report, v.Facts = res.Decision.Admitted(), res.Decision, &rep, deploy.FactsOf(res.Decision)
	return v, nil
}

func (c *Cache) lookup(digest, platform, sfx string) *Verdict {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if v, ok := c.entries[digest+sfx]; ok {
		return v
	}
	return c.entries[digest+"|"+platform+sfx]
}

// kept is the verdict kept for an image by digest (and platform, for an
// index), or else for another image of the same content: the image's own
// verdict, kept from an earlier review, names its content.
func (c *Cache) kept(top, platform, sfx string) *Verdict {
	if v := c.lookup(top, platform, sfx); v != nil || sfx == "" {
		return v
	}
	plain := c.lookup(top, platform, "")
	if plain == nil {
		return nil
	}
	return c.sameContent(plain.content, sfx, plain.Digest, plain.Platform, top)
}

// sameContent is a copy of the verdict kept for content (and sfx's job
// JAR), as the verdict of the image digest on platform; nil when none is
// kept. The copy is kept under digest, and under top (an index's digest
// the reference resolved to) with the platform.
func (c *Cache) sameContent(content, sfx, digest, platform, top string) *Verdict {
	if content == "" {
		return nil
	}
	c.mu.RLock()
	v := c.entries[content+sfx]
	c.mu.RUnlock()
	if v == nil {
		return nil
	}
	c.Stats.Content.Add(1)
	cp := *v
	cp.Digest, cp.Platform = digest, platform
	c.store(&cp, top, platform, sfx)
	return &cp
}

// contentKey names everything of an image's configuration the rules
// read, with its layers by diff ID (their uncompressed content): the
// whole configuration but its provenance (creation time, author, history,
// labels, the legacy builder's container ID), which no rule reads. Two
// digests with one content key get one verdict: a rebuild that changed
// only labels or timestamps is not judged again.
func contentKey(cfg *v1.ConfigFile) string {
	judged := *cfg
	judged.Created, judged.Author, judged.History = v1.Time{}, "", nil
	judged.Container = ""
	judged.Config.Labels = nil
	data, err := json.Marshal(judged)
	if err != nil {
		return "" // not known: no verdict is shared
	}
	sum := sha256.Sum256(data)
	return "content:" + hex.EncodeToString(sum[:])
}

// store keeps v under its image digest, under the digest the reference
// resolved to (an index's, with the platform) and under its content.
func (c *Cache) store(v *Verdict, top, platform, sfx string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	keys := []string{v.Digest + sfx}
	if top != v.Digest {
		keys = append(keys, top+"|"+platform+sfx)
	}
	if v.content != "" && v.Problem == "" {
		// A problem may be of the layers' bytes (an unsafe entry, a diff ID
		// they do not match), which the content key does not cover: it is
		// kept for this digest only.
		keys = append(keys, v.content+sfx)
	}
	for _, k := range keys {
		if _, ok := c.entries[k]; !ok {
			c.order = append(c.order, k)
		}
		c.entries[k] = v
	}
	for len(c.order) > c.opts.MaxEntries {
		delete(c.entries, c.order[0])
		c.order = c.order[1:]
		c.Stats.Evicted.Add(1)
	}
}

// Len is the number of verdicts kept.
func (c *Cache) Len() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.entries)
}
