package verdict

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/random"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/image"
)

// releases counts a JobJAR's Release calls.
type releases struct{ n atomic.Int64 }

func (r *releases) jar(sha, path string) JobJAR {
	return JobJAR{Name: "job.jar", Path: path, SHA256: sha, Release: func() { r.n.Add(1) }}
}

// standIn is a deep check for the cache's tests: the image's real
// verification plus a warning naming the JAR it was given, counted in
// calls; wait, when set, runs first (a check held back).
func standIn(calls *atomic.Int64, wait func()) func(context.Context, image.VerifyOptions, v1.Image, JobJAR) (*image.Result, error) {
	return func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar JobJAR) (*image.Result, error) {
		calls.Add(1)
		if wait != nil {
			wait()
		}
		res, err := read.Verify(ctx, img)
		if err != nil {
			return nil, err
		}
		res.Decision.Findings = append(res.Decision.Findings, admission.Finding{Rule: "stand-in", Severity: admission.Warning, Path: jar.Name, Message: "judged " + jar.SHA256})
		return res, nil
	}
}

// TestVerifyJob: verdicts with a job JAR are kept by image digest and JAR
// digest, apart from the image's own verdict, and each JAR file is
// released exactly once. The deep check here is the image's real
// verification plus a finding naming the JAR it was given: what is under
// test is the caching and the JAR's lifetime, not the deep check (its
// own tests are internal/image's).
func TestVerifyJob(t *testing.T) {
	host, _ := serve(t, "", "")
	push(t, host+"/flink:plain", plainFlink(t, "amd64"))
	ref := host + "/flink:plain"
	ctx := context.Background()

	t.Run("no deep check", func(t *testing.T) {
		var r releases
		_, err := New(Options{}).VerifyJob(ctx, ref, "", Credentials{}, r.jar("aa", "/nonexistent"))
		require.ErrorIs(t, err, ErrNoDeep)
		assert.Equal(t, int64(1), r.n.Load())
	})

	var calls atomic.Int64
	gate := make(chan struct{})
	close(gate)
	var hold atomic.Pointer[chan struct{}]
	hold.Store(&gate)
	c := New(Options{Deep: standIn(&calls, func() { <-*hold.Load() })})

	var r releases
	v, err := c.VerifyJob(ctx, ref, "", Credentials{}, r.jar("aa", "/job-a.jar"))
	require.NoError(t, err)
	assert.Equal(t, "judged aa", v.Decision.Warnings()[len(v.Decision.Warnings())-1].Message)
	assert.Equal(t, int64(1), calls.Load())
	assert.Equal(t, int64(1), r.n.Load(), "released when its verification ended")

	// The same JAR again, known only by digest (a 304): answered from the cache.
	v, err = c.VerifyJob(ctx, ref, "", Credentials{}, r.jar("aa", ""))
	require.NoError(t, err)
	assert.Equal(t, "judged aa", v.Decision.Warnings()[len(v.Decision.Warnings())-1].Message)
	assert.Equal(t, int64(1), calls.Load())
	assert.Equal(t, int64(2), r.n.Load())

	// Another JAR known only by digest: its bytes are needed.
	_, err = c.VerifyJob(ctx, ref, "", Credentials{}, r.jar("bb", ""))
	require.ErrorIs(t, err, ErrNeedJAR)
	assert.Equal(t, int64(3), r.n.Load())

	// The image's own verdict is another entry: the deep check is not run.
	plain, err := c.Verify(ctx, ref, "", Credentials{})
	require.NoError(t, err)
	for _, f := range plain.Decision.Findings {
		assert.NotEqual(t, "stand-in", f.Rule)
	}
	assert.Equal(t, int64(1), calls.Load())

	// A caller that gives up leaves the verification running; the JAR is
	// released when it ends, and a caller that joined it releases its own.
	block := make(chan struct{})
	hold.Store(&block)
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	var first, second releases
	_, err = c.VerifyJob(short, ref, "", Credentials{}, first.jar("cc", "/job-c.jar"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	short2, cancel2 := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel2()
	_, err = c.VerifyJob(short2, ref, "", Credentials{}, second.jar("cc", "/job-c-again.jar"))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	assert.Equal(t, int64(0), first.n.Load(), "still read by the verification")
	assert.Equal(t, int64(0), second.n.Load(), "not known yet whether it was read")
	close(block)
	require.Eventually(t, func() bool { return first.n.Load() == 1 && second.n.Load() == 1 }, 10*time.Second, 10*time.Millisecond)
	v, err = c.VerifyJob(ctx, ref, "", Credentials{}, r.jar("cc", ""))
	require.NoError(t, err, "the verdict the abandoned verification left")
	assert.Equal(t, "judged cc", v.Decision.Warnings()[len(v.Decision.Warnings())-1].Message)
	assert.Equal(t, int64(2), calls.Load(), "one deep check for the two callers")
}

// TestDeepChecksBounded: at most MaxDeep deep checks run at once; the
// others wait for a slot and then run, each JAR released once.
func TestDeepChecksBounded(t *testing.T) {
	host, _ := serve(t, "", "")
	push(t, host+"/flink:plain", plainFlink(t, "amd64"))
	ref := host + "/flink:plain"

	var inflight, most atomic.Int64
	gate := make(chan struct{})
	deep := func(ctx context.Context, read image.VerifyOptions, img v1.Image, _ JobJAR) (*image.Result, error) {
		n := inflight.Add(1)
		defer inflight.Add(-1)
		for {
			m := most.Load()
			if n <= m || most.CompareAndSwap(m, n) {
				break
			}
		}
		<-gate
		return read.Verify(ctx, img)
	}
	c := New(Options{Deep: deep, MaxDeep: 2})

	var r releases
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			_, errs[i] = c.VerifyJob(context.Background(), ref, "", Credentials{}, r.jar(fmt.Sprintf("%02x", i), fmt.Sprintf("/job-%d.jar", i)))
		}()
	}
	require.Eventually(t, func() bool { return inflight.Load() == 2 }, 10*time.Second, 5*time.Millisecond)
	require.Never(t, func() bool { return inflight.Load() > 2 }, 200*time.Millisecond, 5*time.Millisecond, "a third deep check started")
	close(gate)
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "check %d", i)
	}
	assert.Equal(t, int64(2), most.Load())
	assert.Equal(t, int64(4), c.Stats.Deep.Load())
	assert.Equal(t, int64(4), r.n.Load())
}

// TestSameContentOneVerdict: an image rebuilt with only its provenance
// changed (labels, creation time, history) is answered from the verdict
// of the image it was rebuilt from, and so is a session job's JAR judged
// on that image; a change of anything a rule reads (the environment, the
// entrypoint) is verified again.
func TestSameContentOneVerdict(t *testing.T) {
	host, _ := serve(t, "", "")
	base := plainFlink(t, "amd64")
	cf, err := base.ConfigFile()
	require.NoError(t, err)
	variant := func(change func(*v1.ConfigFile)) v1.Image {
		c := cf.DeepCopy()
		change(c)
		img, err := mutate.ConfigFile(base, c)
		require.NoError(t, err)
		return img
	}
	push(t, host+"/flink:a", base)
	push(t, host+"/flink:relabeled", variant(func(c *v1.ConfigFile) {
		c.Config.Labels = map[string]string{"org.opencontainers.image.revision": "abc123"}
		c.Created = v1.Time{Time: time.Unix(1_800_000_000, 0)}
		c.History = append(c.History, v1.History{CreatedBy: "LABEL revision=abc123", EmptyLayer: true})
	}))
	push(t, host+"/flink:strict", variant(func(c *v1.ConfigFile) { c.Config.Env = append(c.Config.Env, "STREAMFUSION_STRICT=1") }))
	push(t, host+"/flink:cmd", variant(func(c *v1.ConfigFile) { c.Config.Entrypoint = []string{"/bin/sh"} }))

	var calls atomic.Int64
	c := New(Options{Deep: standIn(&calls, nil)})
	ctx := context.Background()
	first, err := c.Verify(ctx, host+"/flink:a", "", Credentials{})
	require.NoError(t, err)
	var r releases
	_, err = c.VerifyJob(ctx, host+"/flink:a", "", Credentials{}, r.jar("aa", "/job-a.jar"))
	require.NoError(t, err)
	require.Equal(t, int64(2), c.Stats.Verified.Load())

	again, err := c.Verify(ctx, host+"/flink:relabeled", "", Credentials{})
	require.NoError(t, err)
	assert.Equal(t, int64(2), c.Stats.Verified.Load(), "the rebuild is not verified again")
	assert.Equal(t, int64(1), c.Stats.Content.Load())
	assert.NotEqual(t, first.Digest, again.Digest, "the rebuild's own digest")
	assert.Equal(t, host+"/flink:relabeled", again.Ref)
	assert.Equal(t, first.Message("jobmanager"), again.Message("jobmanager"))

	// The same JAR, known only by digest (a 304), on the rebuild.
	v, err := c.VerifyJob(ctx, host+"/flink:relabeled", "", Credentials{}, r.jar("aa", ""))
	require.NoError(t, err, "answered from the JAR's verdict on the image it was rebuilt from")
	assert.Equal(t, "judged aa", v.Decision.Warnings()[len(v.Decision.Warnings())-1].Message)
	assert.Equal(t, again.Digest, v.Digest)
	assert.Equal(t, int64(1), calls.Load())
	assert.Equal(t, int64(2), c.Stats.Content.Load())
	// Another JAR on it still needs its bytes.
	_, err = c.VerifyJob(ctx, host+"/flink:relabeled", "", Credentials{}, r.jar("bb", ""))
	require.ErrorIs(t, err, ErrNeedJAR)

	for _, tag := range []string{"strict", "cmd"} {
		before := c.Stats.Verified.Load()
		_, err := c.Verify(ctx, host+"/flink:"+tag, "", Credentials{})
		require.NoError(t, err)
		assert.Equal(t, before+1, c.Stats.Verified.Load(), "%s: what a rule reads changed: verified again", tag)
		_, err = c.VerifyJob(ctx, host+"/flink:"+tag, "", Credentials{}, r.jar("aa", ""))
		require.ErrorIs(t, err, ErrNeedJAR, tag)
	}
	assert.Equal(t, int64(2), c.Stats.Content.Load())
}

// A verdict with a problem is not shared by content: a problem may be of
// the layers' bytes, which the content key does not cover. Here an image
// whose configuration is the good image's but whose layer is another's
// (its diff ID does not match) has one; the good image rebuilt with a
// label is verified on its own.
func TestProblemsAreNotSharedByContent(t *testing.T) {
	host, _ := serve(t, "", "")
	good := plainFlink(t, "amd64")
	cf, err := good.ConfigFile()
	require.NoError(t, err)
	layer, err := random.Layer(512, types.DockerLayer)
	require.NoError(t, err)
	other, err := mutate.AppendLayers(empty.Image, layer)
	require.NoError(t, err)
	bad, err := mutate.ConfigFile(other, cf.DeepCopy())
	require.NoError(t, err)
	relabeled := cf.DeepCopy()
	relabeled.Config.Labels = map[string]string{"x": "y"}
	rebuilt, err := mutate.ConfigFile(good, relabeled)
	require.NoError(t, err)
	push(t, host+"/flink:bad", bad)
	push(t, host+"/flink:rebuilt", rebuilt)

	c := New(Options{})
	ctx := context.Background()
	v, err := c.Verify(ctx, host+"/flink:bad", "", Credentials{})
	if err == nil {
		require.NotEmpty(t, v.Problem, "the layer does not match the configuration")
	}
	v, err = c.Verify(ctx, host+"/flink:rebuilt", "", Credentials{})
	require.NoError(t, err)
	assert.Empty(t, v.Problem)
	assert.Equal(t, int64(0), c.Stats.Content.Load())
}
