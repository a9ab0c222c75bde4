//go:build realjars

package realflink

import (
	"context"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/settings"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// startOf gathers and decides on an image's files as its entrypoint does
// at start (the image's settings; deep: STREAMFUSION_LINKAGE=true).
func startOf(t *testing.T, fsys fstest.MapFS, env []string, deep bool) (*admission.Facts, *admission.Decision) {
	t.Helper()
	c, err := settings.FromEnv(env)
	require.NoError(t, err)
	c.Linkage = deep
	s := c.HostSettings("linux", "x86_64")
	f, err := host.Gather(context.Background(), fsys, s, nil)
	require.NoError(t, err)
	t.Cleanup(f.Deep.Close)
	return f, admission.Decide(f)
}

// The baked verdict against the full check, on the real 2.2.0 lib with the
// Kafka connector built for 2.2 and its client: a start of the
// baked image reports what the full check reports, reading no class; a
// job JAR copied into usrlib (the same connector shaded, for 1.18) is
// judged against the class index, and its findings are the full check's
// (its org.apache.flink classes are lib's, parent-first: shadowing
// warnings).
func TestBakedVerdictRealImage(t *testing.T) {
	dir := t.TempDir()
	base := realImage(t, flinkLayer(t, dir, "2.2.0"), libLayer(t, dir, "flink-connector-kafka-5.0.0-2.2", "kafka-clients-4.2.0"))
	var payloads []image.File
	for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
		payloads = append(payloads, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	img, res, err := image.Bake(context.Background(), base, image.BakeOptions{Entrypoint: entrypointBinary(t), Payloads: payloads,
		DeepVerdict: true, Read: image.VerifyOptions{TempDir: dir}})
	require.NoError(t, err)
	t.Logf("verdict: %d bytes", res.Verdict)
	fsys, err := imagekit.Files(img)
	require.NoError(t, err)
	cfg, err := img.ConfigFile()
	require.NoError(t, err)
	env := cfg.Config.Env

	f, bakedD := startOf(t, fsys, env, false)
	require.Contains(t, f.Linkage, "the baked deep verdict applies")
	_, fullD := startOf(t, fsys, env, true)
	want := symbolTexts(fullD.Findings, "")
	assert.Equal(t, want, symbolTexts(bakedD.Findings, ""), "the verdict's findings are the full check's")

	const main = "org.apache.flink.connector.kafka.source.reader.fetcher.KafkaSourceFetcherManager"
	fsys["opt/flink/usrlib/job.jar"] = &fstest.MapFile{Data: shadedJob(t, main, nil, realJAR(t, "flink-connector-kafka-3.2.0-1.18"), realJAR(t, "kafka-clients-3.4.0")), Mode: 0o644}
	f, bakedD = startOf(t, fsys, env, false)
	require.Contains(t, f.Linkage, "usrlib's 1 JARs judged against its class index")
	_, fullD = startOf(t, fsys, env, true)
	want = symbolTexts(fullD.Findings, "")
	got := symbolTexts(bakedD.Findings, "")
	require.NotEmpty(t, want)
	assert.Equal(t, want, got, "a job JAR judged against the index as against the JARs")
	assert.Equal(t, fullD.Admitted(), bakedD.Admitted())
	t.Logf("usrlib's job: %d findings, admitted %v", len(got), bakedD.Admitted())
}
