package webhook

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

var (
	imagesOnce sync.Once
	testImages images
)

func shared(t testing.TB) images {
	imagesOnce.Do(func() { testImages = build(t) })
	require.NotNil(t, testImages.good, "building the test images failed in an earlier test")
	return testImages
}

func TestReviews(t *testing.T) {
	imgs := shared(t)
	// good with a config.yaml of 1.5 KB that expands to 9^9 mappings.
	bombImg, err := mutate.AppendLayers(imgs.good, imagekit.Layer(imagekit.Entry{Name: testkit.FlinkHome + "/conf/config.yaml", Data: []byte(testkit.AliasBomb())}))
	require.NoError(t, err)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good, "jdk11": imgs.jdk11, "plain": imgs.plain, "bomb": bombImg})
	s := startServer(t, Config{}, http.DefaultTransport)
	good, jdk11, plain := host+"/flink:good", host+"/flink:jdk11", host+"/flink:plain"

	// The message a container of the plain image writes to its termination
	// message, from the entrypoint's own rules.
	res, err := image.Verify(context.Background(), imgs.plain)
	require.NoError(t, err)
	require.False(t, res.Decision.Admitted())

	pod := func(img string, args ...string) map[string]any {
		return map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "tm", "namespace": "flink"},
			"spec": map[string]any{"containers": []any{map[string]any{"name": "taskmanager", "image": img, "args": args}}}}
	}
	for _, tc := range []struct {
		name     string
		kind     string
		op       admissionv1.Operation
		obj      any
		allowed  bool
		contains []string
		warning  string
	}{
		{name: "good FlinkDeployment", kind: "FlinkDeployment", op: admissionv1.Create, obj: flinkDeployment(good, "v2_2", ""), allowed: true},
		{name: "plain image", kind: "FlinkDeployment", op: admissionv1.Create, obj: flinkDeployment(plain, "v2_2", ""),
			contains: []string{"FlinkDeployment flink/basic: flink-main-container (kubernetes-jobmanager) image " + plain + ": " + report.Summary("kubernetes-jobmanager", res.Decision),
				report.Summary("kubernetes-taskmanager", res.Decision)}},
		{name: "two JDK majors on UPDATE", kind: "FlinkDeployment", op: admissionv1.Update, obj: flinkDeployment(good, "v2_2", jdk11),
			contains: []string{"[" + deploy.RuleJDK + "] cluster flink/basic mixes JDK majors: 11 in taskmanager " + jdk11 + "; 17 in jobmanager " + good}},
		{name: "flinkVersion of another line", kind: "FlinkDeployment", op: admissionv1.Create, obj: flinkDeployment(good, "v1_18", ""),
			contains: []string{"spec.flinkVersion is v1_18"}},
		{name: "an alias bomb in the image's config.yaml", kind: "FlinkDeployment", op: admissionv1.Create, obj: flinkDeployment(host+"/flink:bomb", "v2_2", ""),
			contains: []string{"/opt/flink/conf/config.yaml: 81 aliases to collections", "Flink cannot load its config file"}},
		{name: "good TaskManager pod", kind: "Pod", op: admissionv1.Create, obj: pod(good, "taskmanager"), allowed: true},
		{name: "plain TaskManager pod", kind: "Pod", op: admissionv1.Create, obj: pod(plain, "taskmanager"),
			contains: []string{report.Summary("taskmanager", res.Decision)}},
		{name: "a debug shell is passed through", kind: "Pod", op: admissionv1.Create, obj: pod(plain, "sh"), allowed: true},
		{name: "a kind that runs nothing", kind: "Service", op: admissionv1.Create, allowed: true,
			obj: map[string]any{"apiVersion": "v1", "kind": "Service", "metadata": map[string]any{"name": "s"}}},
		{name: "deletion", kind: "FlinkDeployment", op: admissionv1.Delete, obj: flinkDeployment(plain, "v2_2", ""), allowed: true},
		{name: "session job", kind: "FlinkSessionJob", op: admissionv1.Create, allowed: true, warning: "FlinkSessionJob flink/j runs on FlinkDeployment flink/basic: not looked up",
			obj: map[string]any{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob", "metadata": map[string]any{"name": "j"},
				"spec": map[string]any{"deploymentName": "basic", "job": map[string]any{"jarURI": "local:///opt/flink/usrlib/job.jar"}}}},
		{name: "an unknown image fails closed", kind: "FlinkDeployment", op: admissionv1.Create, obj: flinkDeployment(host+"/flink:missing", "v2_2", ""),
			contains: []string{"could not verify this object (failure policy Fail)", "404 Not Found"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			body := reviewOf(t, tc.kind, tc.op, tc.obj)
			out := s.post(t, body)
			assert.Equal(t, "admission.k8s.io/v1", out.APIVersion)
			assert.Equal(t, "AdmissionReview", out.Kind)
			assert.NotEmpty(t, out.Response.UID)
			assert.Contains(t, string(body), string(out.Response.UID), "the answer carries the request's uid")
			require.Equal(t, tc.allowed, out.Response.Allowed, "%+v", out.Response.Result)
			if !tc.allowed {
				require.NotNil(t, out.Response.Result)
				for _, want := range tc.contains {
					assert.Contains(t, out.Response.Result.Message, want)
				}
			}
			if tc.warning != "" {
				assert.Contains(t, strings.Join(out.Response.Warnings, "\n"), tc.warning)
			}
		})
	}
}

func TestConcurrentReviewsReadEachLayerOnce(t *testing.T) {
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good})
	rt := &counting{next: http.DefaultTransport}
	s := startServer(t, Config{}, rt)
	layers, err := imgs.good.Layers()
	require.NoError(t, err)

	body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(host+"/flink:good", "v2_2", ""))
	const n = 100
	var wg sync.WaitGroup
	allowed := make([]bool, n)
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			allowed[i] = s.post(t, body).Response.Allowed
		})
	}
	close(start)
	wg.Wait()
	for i, a := range allowed {
		require.True(t, a, "review %d", i)
	}
	// Two containers (JobManager, TaskManager) per review share one image:
	// one verification; its blobs are the config and each layer, read once.
	assert.Equal(t, int64(1), s.cache.Stats.Verified.Load())
	assert.LessOrEqual(t, rt.blobs.Load(), int64(len(layers)+1), "blob reads: the layers (%d) and the config", len(layers))
	assert.Positive(t, rt.blobs.Load())
	t.Logf("%d reviews: %d blob reads, %d manifest requests, %d layers", n, rt.blobs.Load(), rt.manifests.Load(), len(layers))
}

func TestHangingRegistry(t *testing.T) {
	imgs := shared(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	var hang bool
	var mu sync.Mutex
	host := registryWith(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			h := hang
			mu.Unlock()
			if h && strings.Contains(r.URL.Path, "/manifests/") {
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}, map[string]v1Image{"good": imgs.good})
	mu.Lock()
	hang = true
	mu.Unlock()
	body := reviewOf(t, "FlinkDeployment", admissionv1.Create, flinkDeployment(host+"/flink:good", "v2_2", ""))
	for _, tc := range []struct {
		policy  string
		allowed bool
		text    string
	}{{Fail, false, "could not verify this object (failure policy Fail)"}, {Ignore, true, "did not verify this object (failure policy Ignore)"}} {
		t.Run(tc.policy, func(t *testing.T) {
			s := startServer(t, Config{Timeout: 500 * time.Millisecond, FailurePolicy: tc.policy}, http.DefaultTransport)
			begin := time.Now()
			out := s.post(t, body)
			took := time.Since(begin)
			assert.Less(t, took, 5*time.Second, "answered by its own deadline, not the registry's")
			assert.GreaterOrEqual(t, took, 300*time.Millisecond, "the deadline, not an early error")
			require.Equal(t, tc.allowed, out.Response.Allowed)
			text := strings.Join(out.Response.Warnings, "\n")
			if !tc.allowed {
				text = out.Response.Result.Message
			}
			assert.Contains(t, text, tc.text)
			assert.Contains(t, text, "not verified within 500ms")
		})
	}
}

func TestMalformedReviews(t *testing.T) {
	s := startServer(t, Config{}, http.DefaultTransport)
	post := func(method, ctype string, body []byte) (int, string) {
		req, err := http.NewRequest(method, s.url+"/validate", bytes.NewReader(body))
		require.NoError(t, err)
		if ctype != "" {
			req.Header.Set("Content-Type", ctype)
		}
		resp, err := s.client.Do(req)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	for _, tc := range []struct {
		name, method, ctype, body string
		code                      int
		text                      string
	}{
		{"empty body", "POST", "application/json", "", 400, "not an AdmissionReview"},
		{"not JSON", "POST", "application/json", "{kind: x", 400, "not an AdmissionReview"},
		{"a JSON array", "POST", "application/json", "[1,2]", 400, "not an AdmissionReview"},
		{"v1beta1", "POST", "application/json", `{"apiVersion":"admission.k8s.io/v1beta1","kind":"AdmissionReview","request":{"uid":"u"}}`, 400, "want admission.k8s.io/v1 AdmissionReview"},
		{"no request", "POST", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview"}`, 400, "no request"},
		{"no uid", "POST", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"operation":"CREATE"}}`, 400, "no request.uid"},
		{"a uid of the wrong type", "POST", "application/json", `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":5}}`, 400, "not an AdmissionReview"},
		{"GET", "GET", "", "", 405, "POST an admission.k8s.io/v1 AdmissionReview"},
		{"form", "POST", "application/x-www-form-urlencoded", "a=b", 415, "want application/json"},
		{"too large", "POST", "application/json", `{"x":"` + strings.Repeat("a", maxBody) + `"}`, 413, "larger than"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, text := post(tc.method, tc.ctype, []byte(tc.body))
			assert.Equal(t, tc.code, code, text)
			assert.Contains(t, text, tc.text)
		})
	}
	t.Run("an object the parser cannot read", func(t *testing.T) {
		body := `{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"u1","operation":"CREATE",` +
			`"kind":{"group":"","version":"v1","kind":"Pod"},"object":{"kind":"Pod","spec":{"containers":7}}}}`
		out := s.post(t, []byte(body))
		assert.False(t, out.Response.Allowed)
		assert.Equal(t, "u1", string(out.Response.UID))
		assert.Contains(t, out.Response.Result.Message, "the Pod object cannot be read")
	})
	code, text := post("GET", "", nil)
	require.Equal(t, 405, code, text)
	resp, err := s.client.Get(s.url + "/healthz")
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, "ok\n", string(b))
}

func TestCertificateReload(t *testing.T) {
	s := startServer(t, Config{}, http.DefaultTransport)
	get := func(c *http.Client) error {
		resp, err := c.Get(s.url + "/healthz")
		if err != nil {
			return err
		}
		resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	oldClient := func() *http.Client {
		c := s.pki.client()
		c.Transport.(*http.Transport).DisableKeepAlives = true
		return c
	}
	require.NoError(t, get(oldClient()))

	// A new pair from another CA replaces the files (cert-manager's renewal).
	second := newPKI(t, t.TempDir(), "second")
	second.certFile, second.keyFile = s.pki.certFile, s.pki.keyFile
	second.write(t, time.Now())
	c2 := second.client()
	c2.Transport.(*http.Transport).DisableKeepAlives = true
	require.NoError(t, get(c2), "the new certificate is served without a restart")
	assert.Error(t, get(oldClient()), "the old CA no longer verifies the server")
	assert.Equal(t, 1, s.certs.Reloads())

	// A half-written rotation (a key that does not match) keeps the last good pair.
	require.NoError(t, writeFileAt(s.pki.keyFile, s.pki.keyPEM, time.Now().Add(time.Minute)))
	require.NoError(t, get(c2))
	assert.Equal(t, 1, s.certs.Reloads())
}

func TestConfig(t *testing.T) {
	_, err := Handler(Config{Cache: verdict.New(verdict.Options{}), FailurePolicy: "Sometimes"})
	assert.ErrorContains(t, err, `failure policy "Sometimes"`)
	_, err = Handler(Config{})
	assert.Error(t, err)
	_, err = NewCertReloader("/nonexistent/tls.crt", "/nonexistent/tls.key")
	assert.Error(t, err)
	c := Config{Timeout: 8 * time.Second}
	r, _ := http.NewRequest("POST", "/validate?timeout=5s", nil)
	assert.Equal(t, 4*time.Second, c.deadline(r), "the API server's own timeout, less a second")
	r, _ = http.NewRequest("POST", "/validate?timeout=30s", nil)
	assert.Equal(t, 8*time.Second, c.deadline(r))
}

// A Pod of 3,000 containers over 18 admitted images, each with a warning
// of its own (a misspelt key in its FLINK_PROPERTIES), is answered with
// each image's warning once, within the 4,096 runes the API server shows,
// the last warning saying how many were left out. It was 3,000 warnings,
// over 1 MiB, before.
func TestWarningsAreBounded(t *testing.T) {
	const images, containers = 18, 3000
	good := shared(t).good
	base, err := good.ConfigFile()
	require.NoError(t, err)
	imgs := map[string]v1Image{}
	for i := range images {
		cfg := base.DeepCopy()
		cfg.Config.Env = append(cfg.Config.Env, fmt.Sprintf("FLINK_PROPERTIES=taskmanager.numberOfTaskSlot: %d", i+1))
		img, err := mutate.ConfigFile(good, cfg)
		require.NoError(t, err)
		imgs[fmt.Sprint("w", i)] = img
	}
	host := registryWith(t, nil, imgs)
	s := startServer(t, Config{Timeout: 30 * time.Second}, http.DefaultTransport)
	var cs []any
	for i := range containers {
		cs = append(cs, map[string]any{"name": fmt.Sprint("tm", i), "image": fmt.Sprintf("%s/flink:w%d", host, i%images), "args": []any{"taskmanager"}})
	}
	pod := map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "wide", "namespace": "flink"},
		"spec": map[string]any{"containers": cs}}
	// 18 verifications at once on a loaded machine: a review they outlast
	// is retried as the API server would, answered from what went on.
	body := reviewOf(t, "Pod", admissionv1.Create, pod)
	out := s.postWithin(t, body, "31s").Response
	for try := 0; !out.Allowed && try < 2; try++ {
		out = s.postWithin(t, body, "31s").Response
	}
	require.True(t, out.Allowed, "%+v", out.Result)
	require.NotEmpty(t, out.Warnings)
	total := 0
	seen := map[string]bool{}
	for _, w := range out.Warnings {
		assert.False(t, seen[w], "repeated: %s", w)
		seen[w] = true
		total += len(w)
		assert.NotContains(t, w, "\n")
	}
	assert.LessOrEqual(t, total, maxWarnings, "bytes of warnings")
	assert.Contains(t, out.Warnings[0], "config-unknown-key")
	last := out.Warnings[len(out.Warnings)-1]
	assert.Contains(t, last, fmt.Sprintf("and %d more StreamFusion warnings", images-(len(out.Warnings)-1)))
}

func TestBoundWarnings(t *testing.T) {
	long := strings.Repeat("x", 300)
	for _, c := range []struct {
		name string
		in   []string
		want []string
	}{
		{"none", nil, nil},
		{"repeats once", []string{"a", "b", "a", "b"}, []string{"a", "b"}},
		{"within the bound", []string{long, long + "1"}, []string{long, long + "1"}},
		{"beyond: the rest counted", func() []string {
			var ws []string
			for i := range 20 {
				ws = append(ws, fmt.Sprint(i, long))
			}
			return ws
		}(), nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := boundWarnings(c.in)
			total := 0
			for _, w := range got {
				total += len(w)
			}
			assert.LessOrEqual(t, total, maxWarnings)
			if c.want != nil || c.in == nil {
				assert.Equal(t, c.want, got)
				return
			}
			n := len(got) - 1
			assert.Equal(t, c.in[:n], got[:n])
			assert.Equal(t, fmt.Sprintf("... and %d more StreamFusion warnings, beyond what the API server shows: the webhook's log and `streamfusion audit --json` list every one", len(c.in)-n), got[n])
		})
	}
}
