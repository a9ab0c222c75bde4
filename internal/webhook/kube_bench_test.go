//go:build k8sreal

package webhook

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// BenchmarkRealAPIServer measures what the webhook adds to `kubectl apply`
// through a real API server: server-side dry-run creates of a
// FlinkDeployment over one kept connection (client-go), alternating
// between a namespace the webhook configuration exempts (its own) and one
// it reviews, so both see the same machine load. Warm: the image's verdict
// is known (by tag: one manifest HEAD to the loopback registry; by digest:
// no registry request). Cold: a new image digest per review, the webhook
// started with STREAMFUSION_NO_CACHE=1 (no layer-facts cache), so each
// review reads the whole image. Run with -benchtime 1x: the counts are the
// benchmark's own (make bench-k8s).
func BenchmarkRealAPIServer(b *testing.B) {
	k := startKube(b)
	k.InstallOperatorCRDs(b)
	imgs := shared(b)
	host := registryWith(b, nil, map[string]v1Image{"good": imgs.good})
	var objs []string
	for _, f := range []string{"00-namespace.yaml", "rbac.yaml"} {
		data, err := os.ReadFile("../../deploy/webhook/" + f)
		require.NoError(b, err)
		objs = append(objs, string(data))
	}
	k.Must(b, strings.Join(objs, "\n---\n"), "apply", "--server-side", "-f", "-")
	k.Namespace(b, "flink")
	dir := b.TempDir()
	bin := kubekit.BuildStreamfusion(b, dir)
	p := newPKI(b, dir, "bench")
	p.write(b, time.Now().Add(-time.Minute))
	h := k.startHook(b, bin, p, []string{"STREAMFUSION_NO_CACHE=1", "XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, "--timeout=8s")
	k.register(b, h.addr, p.caPEM, Fail, 10)

	good := host + "/flink:good"
	digest, err := imgs.good.Digest()
	require.NoError(b, err)
	byDigest := host + "/flink@" + digest.String()
	ctx := context.Background()
	create := func(ns, img string) (time.Duration, error) {
		obj := kubekit.Object(b, kubekit.FDYAML(ns, "bench", img, "v2_2", ""))
		begin := time.Now()
		_, err := k.Dyn.Resource(judge.FlinkDeployments).Namespace(ns).Create(ctx, obj, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		return time.Since(begin), err
	}
	// The webhook in effect, and the verdict warm.
	kubekit.Eventually(b, "the webhook reviews namespace flink", func() error {
		if _, err := create("flink", host+"/flink:missing"); err == nil {
			return errAdmitted
		}
		return nil
	})
	for _, img := range []string{good, byDigest} {
		_, err := create("flink", img)
		require.NoError(b, err)
	}

	const warm = 1000
	for _, tc := range []struct{ name, img string }{{"warm by tag", good}, {"warm by digest", byDigest}} {
		var exempt, reviewed []time.Duration
		for range warm {
			d, err := create("streamfusion", tc.img)
			require.NoError(b, err)
			exempt = append(exempt, d)
			d, err = create("flink", tc.img)
			require.NoError(b, err)
			reviewed = append(reviewed, d)
		}
		reportLatency(b, tc.name, exempt, reviewed)
	}

	const cold = 10
	var exempt, reviewed []time.Duration
	for i := range cold {
		// an environment variable, not a label: a label alone is the same
		// content, answered from the verdict of the image it was added to
		img, err := imagekit.WithEnv(imgs.good, fmt.Sprint("BENCH_COLD=", i, time.Now().UnixNano()))
		require.NoError(b, err)
		ref, err := name.ParseReference(fmt.Sprintf("%s/flink:cold-%d", host, i))
		require.NoError(b, err)
		require.NoError(b, remote.Write(ref, img))
		d, err := create("streamfusion", ref.String())
		require.NoError(b, err)
		exempt = append(exempt, d)
		d, err = create("flink", ref.String())
		require.NoError(b, err)
		reviewed = append(reviewed, d)
	}
	reportLatency(b, "cold (new digest, no layer cache)", exempt, reviewed)
	for range b.N {
		_ = b.N // the measurements above are the benchmark's; -benchtime 1x
	}
}

func percentile(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(float64(len(s))*p))]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// reportLatency prints p50/p99 of both sides and what the webhook adds at the
// median, and reports them as the benchmark's metrics.
func reportLatency(b *testing.B, name string, exempt, reviewed []time.Duration) {
	e50, e99 := percentile(exempt, 0.5), percentile(exempt, 0.99)
	r50, r99 := percentile(reviewed, 0.5), percentile(reviewed, 0.99)
	b.Logf("%s (%d each): exempt namespace p50 %.2f ms p99 %.2f ms; reviewed p50 %.2f ms p99 %.2f ms; the webhook adds %.2f ms at p50, %.2f ms at p99",
		name, len(exempt), ms(e50), ms(e99), ms(r50), ms(r99), ms(r50-e50), ms(r99-e99))
	unit := strings.NewReplacer(" ", "-", "(", "", ")", "", ",", "").Replace(name)
	b.ReportMetric(ms(r50-e50), unit+"-added-p50-ms")
	b.ReportMetric(ms(r99-e99), unit+"-added-p99-ms")
}
