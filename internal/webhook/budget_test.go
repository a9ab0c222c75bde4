package webhook

import (
	"archive/tar"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

// bigJARLayer is an uncompressed layer holding one file of size zero bytes
// at path: generated on the fly, never held in memory, so a test can serve
// a 1.9 GiB JAR cheaply. The bytes are not a ZIP; the budget refuses or
// grants them before anything reads them as one.
type bigJARLayer struct {
	path   string
	size   int64
	header []byte
	total  int64
	digest v1.Hash
}

func newBigJARLayer(t testing.TB, path string, size int64) *bigJARLayer {
	t.Helper()
	var hdr bytes.Buffer
	tw := tar.NewWriter(&hdr)
	require.NoError(t, tw.WriteHeader(&tar.Header{Name: strings.TrimPrefix(path, "/"), Mode: 0o644, Size: size, Typeflag: tar.TypeReg,
		ModTime: time.Unix(1700000000, 0), Format: tar.FormatPAX}))
	l := &bigJARLayer{path: path, size: size, header: hdr.Bytes()}
	pad := (512 - size%512) % 512
	l.total = int64(len(l.header)) + size + pad + 1024 // the end-of-archive blocks
	h := sha256.New()
	_, err := io.Copy(h, l.open())
	require.NoError(t, err)
	l.digest = v1.Hash{Algorithm: "sha256", Hex: hex.EncodeToString(h.Sum(nil))}
	return l
}

func (l *bigJARLayer) open() io.Reader {
	return io.MultiReader(bytes.NewReader(l.header), io.LimitReader(zeros{}, l.total-int64(len(l.header))))
}

func (l *bigJARLayer) Digest() (v1.Hash, error)             { return l.digest, nil }
func (l *bigJARLayer) DiffID() (v1.Hash, error)             { return l.digest, nil }
func (l *bigJARLayer) Size() (int64, error)                 { return l.total, nil }
func (l *bigJARLayer) MediaType() (types.MediaType, error)  { return types.OCIUncompressedLayer, nil }
func (l *bigJARLayer) Compressed() (io.ReadCloser, error)   { return io.NopCloser(l.open()), nil }
func (l *bigJARLayer) Uncompressed() (io.ReadCloser, error) { return io.NopCloser(l.open()), nil }

// bigBlobs serves the generated layers from their generators and every
// other blob from memory, so pushing an image with a generated layer
// uploads only its small blobs. hold, when set, is called for each read
// of a generated blob with the bytes served so far, before more is served.
type bigBlobs struct {
	mem  registry.BlobHandler
	big  map[v1.Hash]*bigJARLayer
	hold func(ctx context.Context, served int64) error
}

func (b *bigBlobs) Stat(ctx context.Context, repo string, h v1.Hash) (int64, error) {
	if l, ok := b.big[h]; ok {
		return l.total, nil
	}
	return b.mem.(registry.BlobStatHandler).Stat(ctx, repo, h)
}

func (b *bigBlobs) Get(ctx context.Context, repo string, h v1.Hash) (io.ReadCloser, error) {
	if l, ok := b.big[h]; ok {
		return io.NopCloser(&holding{r: l.open(), ctx: ctx, hold: b.hold}), nil
	}
	return b.mem.Get(ctx, repo, h)
}

func (b *bigBlobs) Put(ctx context.Context, repo string, h v1.Hash, rc io.ReadCloser) error {
	return b.mem.(registry.BlobPutHandler).Put(ctx, repo, h, rc)
}

type holding struct {
	r    io.Reader
	ctx  context.Context
	hold func(context.Context, int64) error
	n    int64
}

func (h *holding) Read(p []byte) (int, error) {
	if h.hold != nil {
		if err := h.hold(h.ctx, h.n); err != nil {
			return 0, err
		}
	}
	n, err := h.r.Read(p[:min(len(p), 32<<10)])
	h.n += int64(n)
	return n, err
}

// bigJARRegistry pushes, for each label, the good image with the layer on
// top (and the label in its environment, so each is an image of its own:
// a label alone would be the same content, one verdict) to a
// loopback registry that serves the layer from its generator.
func bigJARRegistry(t testing.TB, layer *bigJARLayer, hold func(context.Context, int64) error, labels ...string) map[string]string {
	t.Helper()
	blobs := &bigBlobs{mem: registry.NewInMemoryBlobHandler(), big: map[v1.Hash]*bigJARLayer{layer.digest: layer}, hold: hold}
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0)), registry.WithBlobHandler(blobs)))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	refs := map[string]string{}
	for _, label := range labels {
		img, err := mutate.Append(shared(t).good, mutate.Addendum{Layer: layer})
		require.NoError(t, err)
		cfg, err := img.ConfigFile()
		require.NoError(t, err)
		cfg = cfg.DeepCopy()
		cfg.Config.Env = append(cfg.Config.Env, "TEST="+label)
		img, err = mutate.ConfigFile(img, cfg)
		require.NoError(t, err)
		ref := host + "/flink:" + label
		r, err := name.ParseReference(ref)
		require.NoError(t, err)
		require.NoError(t, remote.Write(r, img))
		refs[label] = ref
	}
	return refs
}

// reviewAll posts the reviews at once and returns the answers in order.
func reviewAll(t *testing.T, s *server, refs ...string) []*admissionv1.AdmissionResponse {
	t.Helper()
	out := make([]*admissionv1.AdmissionResponse, len(refs))
	var wg sync.WaitGroup
	for i, ref := range refs {
		body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(ref, "v2_2", ""))
		wg.Go(func() { out[i] = s.post(t, body).Response })
	}
	wg.Wait()
	return out
}

// text is what an answer says: its message and warnings.
func text(r *admissionv1.AdmissionResponse) string {
	s := strings.Join(r.Warnings, "\n")
	if r.Result != nil {
		s += "\n" + r.Result.Message
	}
	return s
}

// TestTwoHugeJARsStayInsideTheBudget: two images, each with a 1.9 GiB JAR
// in lib (just under the 2 GiB a layer's file may be), reviewed at once
// under the default budget (1.5 GiB, the chart's too): neither is spooled (each alone is larger than
// the budget), both are answered by the failure policy naming the JAR, its
// size, the budget and the flag; nothing was reserved.
func TestTwoHugeJARsStayInsideTheBudget(t *testing.T) {
	const jarSize = 1900 << 20
	layer := newBigJARLayer(t, "/opt/flink/lib/huge-udfs.jar", jarSize)
	refs := bigJARRegistry(t, layer, nil, "huge-a", "huge-b")
	for _, policy := range []string{Fail, Ignore} {
		t.Run(policy, func(t *testing.T) {
			budget := spool.New(1536<<20, "--spool-budget")
			cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}, Read: readWith(budget, t.TempDir())})
			s := startServer(t, Config{Cache: cache, FailurePolicy: policy, Timeout: 5 * time.Second}, nil)
			answers := reviewAll(t, s, refs["huge-a"], refs["huge-b"])
			for i, a := range answers {
				assert.Equal(t, policy == Ignore, a.Allowed, "review %d", i)
				msg := text(a)
				assert.Contains(t, msg, "failure policy "+policy)
				assert.Contains(t, msg, "/opt/flink/lib/huge-udfs.jar needs 1.9Gi on disk while it is read, more than the whole budget of 1.5Gi (--spool-budget)")
				assert.Contains(t, msg, "fix: raise --spool-budget")
			}
			assert.Zero(t, budget.Peak(), "nothing was reserved")
			assert.Equal(t, int64(2), budget.Refused())
		})
	}
}

func readWith(b *spool.Budget, dir string) image.VerifyOptions {
	return image.VerifyOptions{Budget: b, TempDir: dir}
}

// stall holds every read of a generated blob past its first MiB until
// release is closed or the request ends.
func stall(release <-chan struct{}) func(context.Context, int64) error {
	return func(ctx context.Context, served int64) error {
		if served < 1<<20 {
			return nil
		}
		select {
		case <-release:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// TestSpoolBudgetWaits: two images whose JARs fit the budget one at a
// time, reviewed at once while the registry stalls in the middle of the
// JAR: one review's verification holds its reservation, the other's waits
// for it and is answered by the failure policy naming the budget; once
// answered, that waiting ends (nobody waits for it). Once the registry
// goes on, the first completes and frees its bytes, and both images are
// judged (no failure kept). A verification whose own time runs out in the
// middle of the copy stops copying and frees its bytes.
func TestSpoolBudgetWaits(t *testing.T) {
	const jarSize = 40 << 20
	layer := newBigJARLayer(t, "/opt/flink/lib/big-udfs.jar", jarSize)
	t.Run("a second JAR waits for the first and is answered naming the budget", func(t *testing.T) {
		release := make(chan struct{})
		refs := bigJARRegistry(t, layer, stall(release), "big-a", "big-b")
		budget := spool.New(64<<20, "--spool-budget")
		cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}, Read: readWith(budget, t.TempDir())})
		s := startServer(t, Config{Cache: cache, FailurePolicy: Fail, Timeout: 2 * time.Second}, nil)
		answers := reviewAll(t, s, refs["big-a"], refs["big-b"])
		var waited, copying int
		for _, a := range answers {
			require.False(t, a.Allowed)
			msg := text(a)
			switch {
			case strings.Contains(msg, "waiting for 40Mi of the spool budget for /opt/flink/lib/big-udfs.jar (40Mi of 64Mi in use, --spool-budget)"):
				waited++
			case strings.Contains(msg, "not verified within"):
				copying++
			default:
				t.Errorf("neither waiting for the budget nor still copying: %s", msg)
			}
			assert.Contains(t, msg, "failure policy Fail")
		}
		assert.Equal(t, 1, waited, "one review waited for the budget")
		assert.Equal(t, 1, copying, "one review's JAR was being copied")
		assert.Eventually(t, func() bool { return cache.Running() == 1 && budget.Waiting() == 0 }, 5*time.Second, 10*time.Millisecond,
			"the waiting verification ends once its review is answered")
		assert.Equal(t, int64(jarSize), budget.InUse(), "the stalled copy holds its reservation")
		close(release)
		assert.Eventually(t, func() bool { return cache.Running() == 0 && budget.InUse() == 0 }, 20*time.Second, 10*time.Millisecond)
		assert.LessOrEqual(t, budget.Peak(), int64(64<<20))
		assert.Eventually(t, func() bool {
			for _, a := range reviewAll(t, s, refs["big-a"], refs["big-b"]) {
				if strings.Contains(text(a), "failure policy") {
					return false
				}
			}
			return true
		}, 30*time.Second, 100*time.Millisecond, "both judged once the budget has room")
	})
	t.Run("a copy stops when its verification's time is up", func(t *testing.T) {
		release := make(chan struct{})
		t.Cleanup(func() { close(release) })
		refs := bigJARRegistry(t, layer, stall(release), "big-c")
		budget := spool.New(64<<20, "--spool-budget")
		cache := verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}, Read: readWith(budget, t.TempDir()),
			VerifyTimeout: 2 * time.Second})
		s := startServer(t, Config{Cache: cache, Timeout: time.Second}, nil)
		a := reviewAll(t, s, refs["big-c"])[0]
		assert.Contains(t, text(a), "not verified within")
		assert.Eventually(t, func() bool { return cache.Running() == 0 && budget.InUse() == 0 }, 10*time.Second, 10*time.Millisecond,
			"the registry still stalls, the copy has stopped and freed its bytes")
		assert.Equal(t, int64(jarSize), budget.Peak())
	})
}
