//go:build realjars

package webhook

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/bench/floor"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/judge/judgetest"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// realCache names the caches `make test-session-jar` fills: the real Flink
// distributions (scripts/fetch-flink-dist) and JARs by Maven coordinates
// (scripts/fetch-flink-jars). Missing is a failure, not a skip.
func realCache(t testing.TB, env, what string) string {
	t.Helper()
	dir := os.Getenv(env)
	require.NotEmpty(t, dir, "%s must name the %s; run `make test-session-jar`", env, what)
	return dir
}

// realFlinkImage is a StreamFusion image whose lib is the real Flink
// 2.2.0 distribution's (267 MB, 14 JARs) with the test kit's StreamFusion
// payloads for the 2.2 line baked in: admitted, and what a session job's
// classes link against.
func realFlinkImage(t testing.TB) v1Image {
	t.Helper()
	home := filepath.Join(realCache(t, "STREAMFUSION_FLINK_DIST", "distribution cache"), "2.2.0")
	_, err := os.Stat(filepath.Join(home, ".fetch-flink-dist.ok"))
	require.NoError(t, err, "Flink 2.2.0 is not fetched: run `make test-session-jar`")
	d := testkit.Good("2.2.0")
	d.Payloads = nil
	base, err := imagekit.Base{Dist: d, User: "9999"}.Image()
	require.NoError(t, err)
	lib, err := os.ReadDir(filepath.Join(home, "lib"))
	require.NoError(t, err)
	var entries []imagekit.Entry
	for _, e := range lib {
		b, err := os.ReadFile(filepath.Join(home, "lib", e.Name()))
		require.NoError(t, err)
		entries = append(entries, imagekit.Entry{Name: testkit.LibDir + "/" + e.Name(), Data: b})
	}
	require.Len(t, lib, 14, "the JARs of Flink 2.2.0's lib")
	base, err = mutate.AppendLayers(base, imagekit.Layer(entries...))
	require.NoError(t, err)
	var files []image.File
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	img, _, err := image.Bake(context.Background(), base, image.BakeOptions{Entrypoint: entrypointBin, Payloads: files})
	require.NoError(t, err)
	return img
}

// realJobJARs are real connectors as session jobs' JARs, by Maven
// coordinates (internal/realflink/testdata/coordinates.txt).
func realJobJARs(t testing.TB) map[string][]byte {
	t.Helper()
	dir := realCache(t, "STREAMFUSION_FLINK_JARS", "JAR cache")
	out := map[string][]byte{}
	for _, name := range []string{"flink-connector-kafka-3.2.0-1.18.jar", "flink-connector-kafka-5.0.0-2.2.jar", "flink-sql-connector-kafka-5.0.0-2.2.jar"} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		require.NoError(t, err, "run `make test-session-jar`")
		out[name] = b
	}
	return out
}

type realSetup struct {
	jars    *kubekit.JARServer
	cluster map[string]any
	host    string
}

func newRealSetup(t testing.TB) realSetup {
	host := registryWith(t, nil, map[string]v1Image{"real": realFlinkImage(t)})
	return realSetup{jars: kubekit.NewJARServer(t, realJobJARs(t)), host: host,
		cluster: flinkDeployment(host+"/flink:real", "v2_2", "")}
}

func (r realSetup) config(t testing.TB) Config {
	return r.configWith(t, verdict.ImageDeep, "")
}

// configWith is config with deep as the deep check and tmp ("": the
// default) as the directory its copies go to.
func (r realSetup) configWith(t testing.TB, deep func(context.Context, image.VerifyOptions, v1Image, verdict.JobJAR) (*image.Result, error), tmp string) Config {
	f, err := jobjar.New(jobjar.Options{AnyHost: true, TempDir: t.TempDir()})
	require.NoError(t, err)
	opts := verdict.Options{Deep: deep, Remote: []remote.Option{remote.WithTransport(http.DefaultTransport)}}
	opts.Read.TempDir = tmp
	return Config{Clusters: judgetest.Clusters{Objects: map[string]any{"flink/real": r.cluster}}, Jobs: f, Timeout: 28 * time.Second,
		Cache: verdict.New(opts)}
}

// TestRealJobJARs: real connectors as session jobs' JARs on a cluster of
// the real Flink 2.2.0 lib, through the webhook. The Kafka connector built
// for Flink 1.18 calls SingleThreadFetcherManager's constructor of 1.18,
// which Flink 2.2 changed (the linkage engine's findings are held to the
// JVM by internal/realflink's TestLinkageAgainstTheJVM); the ones built for
// 2.2 link.
func TestRealJobJARs(t *testing.T) {
	r := newRealSetup(t)
	s := startServer(t, r.config(t), http.DefaultTransport)
	review := func(jar string) *admissionv1.AdmissionResponse {
		return s.post(t, reviewOf(t, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", r.jars.URL+"/"+jar, nil))).Response
	}
	t.Run("the Kafka connector built for Flink 1.18 is denied", func(t *testing.T) {
		resp := review("flink-connector-kafka-3.2.0-1.18.jar")
		require.False(t, resp.Allowed)
		msg := resp.Result.Message
		assert.Contains(t, msg, "FlinkSessionJob flink/j: spec.job.jarURI "+r.jars.URL+"/flink-connector-kafka-3.2.0-1.18.jar (sha256 ")
		assert.Contains(t, msg, "on FlinkDeployment flink/basic, which StreamFusion refuses for this job:\n")
		assert.Contains(t, msg, "/opt/flink/usrlib/flink-connector-kafka-3.2.0-1.18.jar: KafkaSourceFetcherManager uses SingleThreadFetcherManager.<init>(FutureCompletingBlockingQueue, Supplier, Configuration, Consumer), which the host does not have")
		assert.Contains(t, msg, "fix: rebuild the job against Flink 2.2")
	})
	for _, jar := range []string{"flink-connector-kafka-5.0.0-2.2.jar", "flink-sql-connector-kafka-5.0.0-2.2.jar"} {
		t.Run(jar+" is admitted", func(t *testing.T) {
			resp := review(jar)
			require.True(t, resp.Allowed, "%+v", resp.Result)
			assert.LessOrEqual(t, len(resp.Warnings), judge.MaxJARWarnings+1)
		})
	}
}

// TestRealJobJARsReused: the real connectors judged on the real Flink
// 2.2.0 lib kept across JARs (image.Views, as the webhook runs) answer
// exactly as the check that reads the image for each JAR; the kept
// directory is one, and gone on Close.
func TestRealJobJARsReused(t *testing.T) {
	r := newRealSetup(t)
	tmp := t.TempDir()
	views := image.NewViews(0, 0)
	fresh := startServer(t, r.config(t), http.DefaultTransport)
	reused := startServer(t, r.configWith(t, verdict.ViewsDeep(views), tmp), http.DefaultTransport)
	for _, jar := range []string{"flink-connector-kafka-3.2.0-1.18.jar", "flink-connector-kafka-5.0.0-2.2.jar", "flink-sql-connector-kafka-5.0.0-2.2.jar"} {
		body := reviewOf(t, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", r.jars.URL+"/"+jar, nil))
		want, got := fresh.postWithin(t, body, "30s").Response, reused.postWithin(t, body, "30s").Response
		assert.Equal(t, want.Allowed, got.Allowed, jar)
		assert.Equal(t, want.Result, got.Result, jar)
		assert.Equal(t, want.Warnings, got.Warnings, jar)
		n, bytes := views.Len()
		assert.Equal(t, 1, n, "the cluster's image kept once")
		assert.Greater(t, bytes, int64(200<<20), "Flink 2.2.0's lib kept")
	}
	left, err := os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Len(t, left, 1)
	views.Close()
	left, err = os.ReadDir(tmp)
	require.NoError(t, err)
	assert.Empty(t, left)
}

// BenchmarkSessionJobReview: one review of a session job whose JAR is the
// real Kafka SQL connector (6 MB) on a cluster of the real Flink 2.2.0
// lib. cold: the JAR is fetched and deep-checked (the cluster image's own
// verdict already known, as for a cluster admitted before); warm: the
// JAR's verdict is kept (a conditional GET answered 304, a cache hit).
func BenchmarkSessionJobReview(b *testing.B) {
	r := newRealSetup(b)
	body := reviewOf(b, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", r.jars.URL+"/flink-sql-connector-kafka-5.0.0-2.2.jar", nil))
	cluster := reviewOf(b, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", "local:///opt/flink/usrlib/job.jar", nil))
	run := func(b *testing.B, s *server) {
		out := s.postWithin(b, body, "30s") // the API server's largest timeoutSeconds
		require.True(b, out.Response.Allowed, "%+v", out.Response.Result)
	}
	b.Run("cold", func(b *testing.B) {
		b.StopTimer()
		for range b.N {
			s := startServer(b, r.config(b), http.DefaultTransport)
			s.postWithin(b, cluster, "30s") // the cluster's image verdict
			b.StartTimer()
			run(b, s)
			b.StopTimer()
		}
	})
	// A new JAR on a known image: the cluster's image was deep-checked
	// before with another JAR (the Kafka connector for 1.18); reread reads
	// its layers again (the check without reuse), reuse checks on the lib
	// image.Views kept.
	newJAR := func(b *testing.B, reuse bool) {
		views := image.NewViews(0, 0)
		defer views.Close()
		deep := verdict.ImageDeep
		if reuse {
			deep = verdict.ViewsDeep(views)
		}
		first := reviewOf(b, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", r.jars.URL+"/flink-connector-kafka-3.2.0-1.18.jar", nil))
		startServer(b, r.configWith(b, deep, ""), http.DefaultTransport).postWithin(b, first, "30s")
		if reuse {
			n, _ := views.Len()
			require.Equal(b, 1, n, "the cluster's image kept before the timed reviews")
		}
		perReview := timeReviews(b, func() *server { return startServer(b, r.configWith(b, deep, ""), http.DefaultTransport) }, cluster, func(s *server) { run(b, s) })
		if reuse {
			s := startServer(b, r.configWith(b, deep, ""), http.DefaultTransport)
			s.postWithin(b, cluster, "30s")
			reportFloor(b, perReview, func() { run(b, s) }, nil, r.jars.URL+"/flink-sql-connector-kafka-5.0.0-2.2.jar")
		}
	}
	b.Run("new-jar-known-image/reread", func(b *testing.B) { newJAR(b, false) })
	b.Run("new-jar-known-image/reuse", func(b *testing.B) { newJAR(b, true) })
	// A large new JAR on the kept lib, timed, with the budget line and its
	// floor; admit: the review must admit it.
	bigJAR := func(b *testing.B, name string, data []byte, file string, admit bool) {
		big := kubekit.NewJARServer(b, map[string][]byte{name: data})
		body := reviewOf(b, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", big.URL+"/"+name, nil))
		views := image.NewViews(0, 0)
		defer views.Close()
		deep := verdict.ViewsDeep(views)
		review := func(s *server) {
			out := s.postWithin(b, body, "30s")
			if admit {
				require.True(b, out.Response.Allowed, "%+v", out.Response.Result)
			}
		}
		// The lib kept before any review is timed: the cluster's own review
		// is not deep and keeps nothing; a review of another job JAR reads
		// the image into views.
		keep := reviewOf(b, "FlinkSessionJob", admissionv1.Create, sessionJobWith("real", r.jars.URL+"/flink-connector-kafka-3.2.0-1.18.jar", nil))
		startServer(b, r.configWith(b, deep, ""), http.DefaultTransport).postWithin(b, keep, "30s")
		n, _ := views.Len()
		require.Equal(b, 1, n, "the cluster's image kept before the timed reviews")
		perReview := timeReviews(b, func() *server { return startServer(b, r.configWith(b, deep, ""), http.DefaultTransport) }, cluster, review)
		verdict := "PASS"
		if perReview > 1500*time.Millisecond {
			verdict = "FAIL"
		}
		b.Logf("budget %s: a review of a new %d MB job JAR, %s; at most 1.5 s", verdict, len(data)>>20, perReview.Round(time.Millisecond))
		s := startServer(b, r.configWith(b, deep, ""), http.DefaultTransport)
		s.postWithin(b, cluster, "30s")
		reportFloor(b, perReview, func() { review(s) }, map[string]string{"/opt/flink/usrlib/" + name: file}, big.URL+"/"+name)
	}
	// The same with a 43 MB job JAR: the real Kafka connector, its client
	// and their libraries shaded into one (bench/compare/kafka-job.txt,
	// the JAR of make bench's start), on the kept lib.
	b.Run("new-43MB-jar-known-image/reuse", func(b *testing.B) {
		jars := realCache(b, "STREAMFUSION_FLINK_JARS", "JAR cache")
		var srcs []string
		for _, n := range []string{"flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0", "zstd-jni-1.5.6-10", "flink-sql-avro-confluent-registry-2.2.0",
			"jackson-databind-2.18.2", "jackson-core-2.18.2", "jackson-annotations-2.18.2", "guava-32.1.2-jre"} {
			srcs = append(srcs, filepath.Join(jars, n+".jar"))
		}
		shaded := filepath.Join(b.TempDir(), "kafka-job.jar")
		require.NoError(b, testkit.Shade(shaded, "org.apache.flink.connector.kafka.source.KafkaSource", srcs), "run `make bench-session-jar`")
		data, err := os.ReadFile(shaded)
		require.NoError(b, err)
		bigJAR(b, "kafka-job.jar", data, shaded, true)
	})
	// The largest real bundle of the corpus, Hive's SQL connector (47 MB,
	// built for Flink 1.20: its verdict on 2.2 is not the point, the time
	// of the check is).
	b.Run("new-hive-bundle-known-image/reuse", func(b *testing.B) {
		file := filepath.Join(realCache(b, "STREAMFUSION_FLINK_JARS", "JAR cache"), "flink-sql-connector-hive-2.3.10_2.12-1.20.0.jar")
		data, err := os.ReadFile(file)
		require.NoError(b, err, "run `make bench-session-jar`")
		bigJAR(b, filepath.Base(file), data, file, false)
	})
	b.Run("warm", func(b *testing.B) {
		s := startServer(b, r.config(b), http.DefaultTransport)
		run(b, s)
		for b.Loop() {
			run(b, s)
		}
	})
	// The same JAR on the cluster's image rebuilt with a new label (a new
	// digest, the same content): each review is of another rebuild, whose
	// own verdict the cluster's review found by content before.
	b.Run("rebuilt-image", func(b *testing.B) {
		cfg := r.config(b)
		objects := map[string]any{"flink/real": r.cluster}
		cfg.Clusters = judgetest.Clusters{Objects: objects}
		s := startServer(b, cfg, http.DefaultTransport)
		run(b, s)
		base := realFlinkImage(b)
		cf, err := base.ConfigFile()
		require.NoError(b, err)
		before := cfg.Cache.Stats.Content.Load()
		b.ResetTimer()
		b.StopTimer()
		for i := range b.N {
			c := cf.DeepCopy()
			c.Config.Labels = map[string]string{"org.opencontainers.image.revision": fmt.Sprint(i)}
			img, err := mutate.ConfigFile(base, c)
			require.NoError(b, err)
			tag := fmt.Sprintf("%s/flink:rebuilt-%d", r.host, i)
			ref, err := name.ParseReference(tag)
			require.NoError(b, err)
			require.NoError(b, remote.Write(ref, img))
			objects["flink/real"] = flinkDeployment(tag, "v2_2", "")
			s.postWithin(b, cluster, "30s")
			b.StartTimer()
			run(b, s)
			b.StopTimer()
		}
		require.Equal(b, int64(2*b.N), cfg.Cache.Stats.Content.Load()-before, "each rebuild's image and JAR verdicts found by content")
	})
}

// timeReviews times b.N reviews, each on a new server (newServer) that
// has reviewed the cluster first, and returns the time of one.
func timeReviews(b *testing.B, newServer func() *server, cluster []byte, review func(*server)) time.Duration {
	b.ResetTimer()
	b.StopTimer()
	for range b.N {
		s := newServer()
		s.postWithin(b, cluster, "30s")
		b.StartTimer()
		review(s)
		b.StopTimer()
	}
	return b.Elapsed() / time.Duration(b.N)
}

// floorBudget is the most a review of a new job JAR may take over the
// floor of the deep check's reading (issue 39).
const floorBudget = 1.5

// reportFloor records the class entries review's deep check inflates,
// times their floor (bench/floor: the central directories of the JARs
// they are in, each entry inflated once on every core) five times, and
// reports perReview over the floor's median, with a budget line. The
// check's paths are the image's; the floor reads the same files from the
// distribution and JAR caches the image was built from, or from files
// (an image path to the file on this machine). It also times the JAR's
// fetch from jarURL alone, as the webhook fetches it (to a file, its
// digest taken): a part of every review the floor leaves out.
func reportFloor(b *testing.B, perReview time.Duration, review func(), files map[string]string, jarURL string) {
	classes, err := floor.Record(func() error { review(); return nil })
	require.NoError(b, err)
	require.NotEmpty(b, classes, "the review inflated no class")
	dist := filepath.Join(realCache(b, "STREAMFUSION_FLINK_DIST", "distribution cache"), "2.2.0", "lib")
	jars := realCache(b, "STREAMFUSION_FLINK_JARS", "JAR cache")
	file := func(jar string) string {
		if f := files[jar]; f != "" {
			return f
		}
		if rest, ok := strings.CutPrefix(jar, "/opt/flink/lib/"); ok {
			return filepath.Join(dist, rest)
		}
		return filepath.Join(jars, filepath.Base(jar))
	}
	var times []time.Duration
	var read floor.Result
	for range 5 {
		start := time.Now()
		read, err = floor.Run(classes, file)
		require.NoError(b, err)
		times = append(times, time.Since(start))
	}
	slices.Sort(times)
	f := times[len(times)/2]
	ratio := float64(perReview) / float64(f)
	b.ReportMetric(ratio, "x-floor")
	verdict := "PASS"
	if ratio > floorBudget {
		verdict = "FAIL"
	}
	b.Logf("budget %s: a review of a new job JAR, %s, over its floor (%d JARs' central directories, %d classes the check read, %.1f MB, inflated on %d cores) %s: %.2fx; at most %.1fx",
		verdict, perReview.Round(time.Millisecond), read.JARs, read.Classes, float64(read.Inflated)/1e6, runtime.GOMAXPROCS(0), f.Round(time.Millisecond), ratio, floorBudget)
	fetch := medianFetch(b, jarURL)
	b.Logf("the JAR's fetch alone (to a file, its digest taken; not in the floor): %s, %.2fx the floor", fetch.Round(100*time.Microsecond), float64(fetch)/float64(f))
}

// medianFetch fetches the JAR at jarURL five times as the webhook does
// (jobjar.Fetcher, unconditionally) and returns the median time.
func medianFetch(b *testing.B, jarURL string) time.Duration {
	u, err := url.Parse(jarURL)
	require.NoError(b, err)
	fetcher, err := jobjar.New(jobjar.Options{AnyHost: true, TempDir: b.TempDir()})
	require.NoError(b, err)
	var times []time.Duration
	for range 5 {
		start := time.Now()
		jar, err := fetcher.Fetch(context.Background(), u, nil, false)
		times = append(times, time.Since(start))
		require.NoError(b, err)
		require.NotEmpty(b, jar.SHA256)
		require.NoError(b, jar.Close())
	}
	slices.Sort(times)
	return times[len(times)/2]
}
