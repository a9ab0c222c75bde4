package webhook

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/judge/judgetest"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

func sessionJobWith(cluster, jarURI string, conf map[string]any) map[string]any {
	sj := sessionJob(cluster)
	spec := sj["spec"].(map[string]any)
	spec["job"] = map[string]any{"jarURI": jarURI}
	if conf != nil {
		spec["flinkConfiguration"] = conf
	}
	return sj
}

func TestSessionJobJARs(t *testing.T) {
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good})
	clusters := judgetest.Clusters{Objects: map[string]any{"flink/good": flinkDeployment(host+"/flink:good", "v2_2", "")}}
	jars := kubekit.NewJARServer(t, map[string][]byte{
		"good.jar":   testkit.GoodJobJAR(),
		"broken.jar": testkit.MismatchedJobJAR(),
		"big.jar":    bytes.Repeat([]byte("PK"), 1<<20),
	})
	deep, deepRuns := countingDeep()
	// One verdict cache: the cluster's image is verified once, and the
	// reviews of the short deadline below find it known. The deadlines are
	// generous but for the case that is about one: the race detector and a
	// loaded machine make a cold check slow.
	cache := verdict.New(verdict.Options{Deep: deep, Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}})
	var dirs []string
	newConfig := func(policy string, timeout time.Duration) Config {
		dirs = append(dirs, t.TempDir())
		f, err := jobjar.New(jobjar.Options{MaxBytes: 1 << 20, AnyHost: true, TempDir: dirs[len(dirs)-1]})
		require.NoError(t, err)
		return Config{FailurePolicy: policy, Clusters: clusters, Jobs: f, Timeout: timeout, Cache: cache}
	}
	cfg := newConfig(Fail, 28*time.Second)
	s := startServer(t, cfg, http.DefaultTransport)
	review := func(s *server, jarURI string, conf map[string]any) *admissionv1.AdmissionResponse {
		return s.postWithin(t, reviewOf(t, "FlinkSessionJob", admissionv1.Create, sessionJobWith("good", jarURI, conf)), "30s").Response
	}
	text := func(r *admissionv1.AdmissionResponse) string {
		out := strings.Join(r.Warnings, "\n")
		if r.Result != nil {
			out += "\n" + r.Result.Message
		}
		return out
	}

	t.Run("a JAR that passes the deep check is admitted, a second review neither fetches nor judges it", func(t *testing.T) {
		r := review(s, jars.URL+"/good.jar", nil)
		require.True(t, r.Allowed, text(r))
		bodies, runs := jars.Bodies(), deepRuns.Load()
		r = review(s, jars.URL+"/good.jar", nil)
		require.True(t, r.Allowed, text(r))
		assert.Equal(t, bodies, jars.Bodies(), "a 304, not the body")
		assert.Equal(t, runs, deepRuns.Load(), "the verdict by image and JAR digest")
		assert.Equal(t, int64(1), cfg.Jobs.Stats.NotModified.Load())
	})
	t.Run("a JAR whose deep check finds errors is denied naming the cluster, the URI and the finding", func(t *testing.T) {
		r := review(s, jars.URL+"/broken.jar?sig=secret", nil)
		require.False(t, r.Allowed)
		msg := r.Result.Message
		assert.Contains(t, msg, "FlinkSessionJob flink/j: spec.job.jarURI "+jars.URL+"/broken.jar?... (sha256 ")
		assert.Contains(t, msg, "on FlinkDeployment flink/basic, which StreamFusion refuses for this job:\n")
		assert.Contains(t, msg, "/opt/flink/usrlib/broken.jar: "+testkit.MismatchedJobJARFinding)
		assert.Contains(t, msg, "fix: rebuild the job against Flink 2.2")
		assert.NotContains(t, msg, "secret")
	})
	t.Run("a JAR the server does not have is denied", func(t *testing.T) {
		r := review(s, jars.URL+"/missing.jar", nil)
		require.False(t, r.Allowed)
		assert.Contains(t, r.Result.Message, "FlinkSessionJob flink/j: spec.job.jarURI "+jars.URL+"/missing.jar: found 404 Not Found from its server, required a JAR the operator can fetch")
	})
	for _, policy := range []string{Fail, Ignore} {
		s, short := startServer(t, newConfig(policy, 28*time.Second), http.DefaultTransport), startServer(t, newConfig(policy, 3*time.Second), http.DefaultTransport)
		down := httptest.NewServer(http.NotFoundHandler())
		down.Close()
		for name, tc := range map[string]struct {
			s         *server
			uri, want string
		}{
			"too large":   {s, jars.URL + "/big.jar", "the JAR is not fetched: fetch " + jars.URL + "/big.jar: larger than the limit: the server says 2 MiB, the limit is 1 MiB (--job-jar-max-size, 1 MiB)"},
			"server down": {s, down.URL + "/job.jar", "the JAR is not fetched: fetch " + down.URL + "/job.jar: dial tcp"},
			"too slow":    {short, jars.URL + "/slow.jar", "the JAR is not fetched within 3s"},
		} {
			t.Run(name+", failure policy "+policy, func(t *testing.T) {
				r := review(tc.s, tc.uri, nil)
				assert.Equal(t, policy == Ignore, r.Allowed)
				assert.Contains(t, text(r), tc.want)
			})
		}
	}
	t.Run("JARs the operator reads from its own pod or a file system plugin are admitted, not judged", func(t *testing.T) {
		for uri, want := range map[string]string{
			"local:///opt/flink/usrlib/job.jar": "where no file system serves local://",
			"file:///artifacts/job.jar":         "a file:// jarURI is a file in the operator's pod",
			"s3://bucket/jobs/job.jar":          "the operator reads s3:// through a Flink file system plugin in its own pod",
		} {
			r := review(s, uri, nil)
			require.True(t, r.Allowed, uri)
			assert.Contains(t, text(r), want)
			assert.Contains(t, text(r), "not judged")
		}
	})
	t.Run("a jarURI that is no URI is denied", func(t *testing.T) {
		r := review(s, "job.jar", nil)
		require.False(t, r.Allowed)
		assert.Contains(t, r.Result.Message, `spec.job.jarURI: jarURI "job.jar": no scheme`)
	})
	t.Run("the session job's headers go with the request", func(t *testing.T) {
		var got atomic.Value
		authed := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			got.Store(r.Header.Get("Authorization"))
			if r.Header.Get("Authorization") != "Bearer t0ken" {
				http.Error(w, "no", http.StatusUnauthorized)
				return
			}
			_, _ = w.Write(testkit.GoodJobJAR())
		}))
		defer authed.Close()
		r := review(s, authed.URL+"/job.jar", map[string]any{jobjar.HeaderOption: "Authorization: Bearer t0ken"})
		require.True(t, r.Allowed, text(r))
		assert.Equal(t, "Bearer t0ken", got.Load())
		r = review(s, authed.URL+"/job.jar", map[string]any{jobjar.HeaderOption: "Authorization"})
		require.False(t, r.Allowed)
		assert.Contains(t, r.Result.Message, "entry 1: no ':'")
	})
	t.Run("without a deep check or a fetcher the JAR is admitted with a warning", func(t *testing.T) {
		for _, c := range []Config{{Clusters: clusters}, {Clusters: clusters, Jobs: cfg.Jobs}} {
			s := startServer(t, c, http.DefaultTransport)
			r := review(s, jars.URL+"/broken.jar", nil)
			require.True(t, r.Allowed)
			assert.Contains(t, text(r), "not judged")
		}
	})
	for _, dir := range dirs {
		assert.Eventually(t, func() bool {
			left, err := os.ReadDir(dir)
			return err == nil && len(left) == 0
		}, 10*time.Second, 10*time.Millisecond, "every fetched JAR is removed once judged")
	}
}

// countingDeep is the deep check (verdict.ImageDeep), counted.
func countingDeep() (func(context.Context, image.VerifyOptions, v1.Image, verdict.JobJAR) (*image.Result, error), *atomic.Int64) {
	var runs atomic.Int64
	return func(ctx context.Context, read image.VerifyOptions, img v1.Image, jar verdict.JobJAR) (*image.Result, error) {
		runs.Add(1)
		return verdict.ImageDeep(ctx, read, img, jar)
	}, &runs
}
