package audit

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/image/layercache"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// BenchmarkAuditJudge is the judging part of an audit alone (no API):
// 200 FlinkDeployments, each with a JobManager and a TaskManager Pod
// running its image's digest, over 20 images that differ in their config
// only (an environment variable), served on loopback. Each iteration is a new verdict cache (a new
// audit); "layer cache" shares one layer-facts cache across iterations
// (warm after the first), "no layer cache" reads every image whole. The
// whole audit through a real API server is BenchmarkRealAudit
// (kube_test.go, build tag k8sreal, make bench-audit).
func BenchmarkAuditJudge(b *testing.B) {
	imgs := testImages(b)
	const images, perImage = 20, 10
	tags := map[string]v1.Image{}
	for i := range images {
		cf, err := imgs.good.ConfigFile()
		require.NoError(b, err)
		c := cf.Config
		c.Env = append(slices.Clone(c.Env), fmt.Sprint("BENCH_AUDIT=", i, time.Now().UnixNano())) // a label alone would be the same content, one verdict
		img, err := mutate.Config(imgs.good, c)
		require.NoError(b, err)
		tags[fmt.Sprintf("audit-%d", i)] = img
	}
	host := serve(b, tags)
	var snap Snapshot
	for n := range images * perImage {
		tag := fmt.Sprintf("audit-%d", n%images)
		ref, name := host+"/flink:"+tag, fmt.Sprintf("fd-%03d", n)
		snap.Deployments = append(snap.Deployments, fd("flink", name, ref))
		id := "docker-pullable://" + host + "/flink@" + digestOf(b, tags[tag])
		snap.Pods = append(snap.Pods, operatorPod("flink", name+"-jm", name, "jobmanager", ref, id), operatorPod("flink", name+"-tm", name, "taskmanager", ref, id))
	}
	items, unread := Plan(snap)
	require.Empty(b, unread)
	for _, tc := range []struct {
		name  string
		cache bool
	}{{"no layer cache", false}, {"layer cache", true}} {
		b.Run(tc.name, func(b *testing.B) {
			var read image.VerifyOptions
			if tc.cache {
				read.Cache = &layercache.Cache{Dir: b.TempDir()}
			}
			for range b.N {
				jg := &judge.Judge{Cache: verdict.New(verdict.Options{Read: read})}
				rows := (&Auditor{Judge: jg, Timeout: time.Minute, Concurrency: 4}).Run(context.Background(), items)
				require.Len(b, rows, images*perImage)
				require.Equal(b, int64(images), jg.Cache.Stats.Verified.Load())
				for _, r := range rows {
					require.Equal(b, Admitted, r.Today.Verdict)
				}
			}
		})
	}
}
