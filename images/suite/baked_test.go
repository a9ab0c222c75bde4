//go:build imagesuite

package suite

import (
	"archive/tar"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/moby/moby/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// The baked deep verdict (issue 30) in real containers, on both lines: a
// baked image whose lib is unchanged starts with the verdict applied; an
// application image derived from it (FROM it, a job JAR copied into
// usrlib, as the docs tell users to ship jobs) whose job cannot link is
// refused at start with the linkage finding, and one whose job links
// starts; a tampered verdict is a finding and a full check, which still
// refuses the job that cannot link.

// bakedUtil is a stock JAR for lib whose class com/acme/lib/Util has a
// method present()V.
func bakedUtil() []byte {
	return testkit.ClassJAR(testkit.Manifest(), []testkit.Class{{Name: "com/acme/lib/Util",
		Methods: []testkit.Member{{Name: "present", Descriptor: "()V"}}}}, nil)
}

// bakedJob is a job JAR whose Main calls Util's method name.
func bakedJob(method string) []byte {
	return testkit.ClassJAR(testkit.Manifest("Main-Class", "com.acme.Main"), []testkit.Class{{Name: "com/acme/Main",
		Calls: []testkit.Call{{Owner: "com/acme/lib/Util", Name: method, Descriptor: "()V"}}}}, nil)
}

// withDeepVerdict bakes the good image of a host with the deep verdict.
func withDeepVerdict(t *testing.T, h line) v1.Image {
	t.Helper()
	base, err := imagekit.Base{Dist: testkit.Dist{Flink: h.flink}, User: h.user, Busybox: busybox, Extra: doubles}.Image()
	require.NoError(t, err)
	files := []image.File{{Name: "acme-util-1.0.jar", Data: bakedUtil(), Stock: true}}
	for _, p := range testkit.StreamFusion(h.line, "0.1.0") {
		files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
	}
	img, res, err := image.Bake(context.Background(), base, image.BakeOptions{Entrypoint: entrypoint, Payloads: files,
		BaseName: "flink:" + h.flink, DeepVerdict: true, Read: image.VerifyOptions{TempDir: t.TempDir()}})
	require.NoError(t, err)
	require.Positive(t, res.Verdict, "the verdict is in the layer")
	return img
}

// derived is img with a layer: what a Dockerfile's COPY adds.
func derived(t *testing.T, img v1.Image, entries ...imagekit.Entry) v1.Image {
	t.Helper()
	out, err := mutate.AppendLayers(img, imagekit.Layer(entries...))
	require.NoError(t, err)
	return out
}

func TestBakedDeepVerdictAtStart(t *testing.T) {
	usrlib := testkit.FlinkHome + "/usrlib"
	verdictPath := testkit.LibDir + "/" + host.VerdictFile
	tag := func(h line, what string) string { return fmt.Sprintf("localhost/baked-suite:%s-%s", h.flink, what) }
	imgs := map[string]v1.Image{}
	for _, h := range []line{hosts[1], hosts[2]} { // 2.2.1 and 1.18.1
		img := withDeepVerdict(t, h)
		imgs[tag(h, "baked")] = img
		dir := imagekit.Entry{Name: usrlib, Dir: true, Mode: 0o755}
		imgs[tag(h, "job-links")] = derived(t, img, dir, imagekit.Entry{Name: usrlib + "/job.jar", Data: bakedJob("present"), Mode: 0o644})
		imgs[tag(h, "job-breaks")] = derived(t, img, dir, imagekit.Entry{Name: usrlib + "/job.jar", Data: bakedJob("gone"), Mode: 0o644})

		fsys, err := imagekit.Files(img)
		require.NoError(t, err)
		verdict, err := fsys.ReadFile(verdictPath)
		require.NoError(t, err)
		tampered := bytes.Clone(verdict)
		tampered[len(tampered)/2] ^= 0xff
		imgs[tag(h, "tampered")] = derived(t, img, imagekit.Entry{Name: verdictPath, Data: tampered, Mode: 0o644})
		imgs[tag(h, "tampered-job-breaks")] = derived(t, imgs[tag(h, "job-breaks")], imagekit.Entry{Name: verdictPath, Data: verdict[:len(verdict)/3], Mode: 0o644})
	}
	load(t, imgs)
	for _, h := range []line{hosts[1], hosts[2]} {
		t.Run(h.flink+"/unchanged lib: the verdict applies", func(t *testing.T) {
			o := run{image: tag(h, "baked"), cmd: []string{"jobmanager"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "streamfusion: INFO the baked deep verdict applies: ")
			assert.Contains(t, o.logs, "flink-double: started role=jobmanager pid=1")
		})
		t.Run(h.flink+"/a derived image whose job links", func(t *testing.T) {
			o := run{image: tag(h, "job-links"), cmd: []string{"standalone-job", "--job-classname", "com.acme.Main"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "usrlib's 1 JARs judged against its class index")
			assert.Contains(t, o.logs, "flink-double: started role=standalone-job pid=1")
		})
		t.Run(h.flink+"/a derived image whose job cannot link is refused", func(t *testing.T) {
			o := run{image: tag(h, "job-breaks"), cmd: []string{"standalone-job", "--job-classname", "com.acme.Main"}}.start(t)
			require.Equal(t, 78, o.code, o.logs)
			assert.Contains(t, o.logs, "[linkage-method] /opt/flink/usrlib/job.jar: Main uses Util.gone(), which the host does not have")
			assert.NotContains(t, o.logs, "flink-double: started")
		})
		t.Run(h.flink+"/a tampered verdict is a finding and a full check", func(t *testing.T) {
			o := run{image: tag(h, "tampered"), cmd: []string{"jobmanager"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Contains(t, o.logs, "[deep-verdict-unreadable] /opt/flink/lib/"+host.VerdictFile)
			assert.Contains(t, o.logs, "checked in full")
			o = run{image: tag(h, "tampered-job-breaks"), cmd: []string{"standalone-job", "--job-classname", "com.acme.Main"}}.start(t)
			require.Equal(t, 78, o.code, o.logs)
			assert.Contains(t, o.logs, "[deep-verdict-unreadable]")
			assert.Contains(t, o.logs, "[linkage-method] /opt/flink/usrlib/job.jar", "the full check refuses the job all the same")
		})
	}
}

// A Dockerfile's RUN step, built by the engine: FROM the baked image, COPY
// a job JAR into usrlib, RUN the entrypoint's `streamfusion check
// --write-verdict` (as root where the image's user cannot write lib, then
// the image's user again). The job that links is baked in (every start
// applies the verdict, usrlib included, nothing judged); the one that
// cannot link fails the build.
func TestDockerfileStepBakesTheJobIn(t *testing.T) {
	for _, h := range []line{hosts[1], hosts[2]} { // 2.2.1 and 1.18.1
		t.Run(h.flink, func(t *testing.T) {
			base := fmt.Sprintf("localhost/baked-suite:%s-step-base", h.flink)
			load(t, map[string]v1.Image{base: withDeepVerdict(t, h)})
			step := "FROM " + base + "\n" +
				"COPY job.jar " + "/" + testkit.FlinkHome + "/usrlib/job.jar\n" +
				`RUN ["/docker-entrypoint.sh", "streamfusion", "check", "--write-verdict"]` + "\n"
			dockerfile := step
			if h.user != "" {
				// This base's lib is root's, its user 9999: the step as
				// the image's user cannot write the verdict, and says so.
				out, err := build(t, fmt.Sprintf("localhost/baked-suite:%s-step-user", h.flink), step, bakedJob("present"))
				require.Error(t, err)
				assert.Contains(t, out, "the check admits, but its deep verdict cannot be written")
				assert.Contains(t, out, "fix: run the step as lib's owner (in a Dockerfile: USER root before the RUN, the image's user after it)")
				dockerfile = strings.Replace(step, "RUN ", "USER 0\nRUN ", 1) + "USER " + h.user + "\n" // 0: this base has no /etc/passwd
			}

			links := fmt.Sprintf("localhost/baked-suite:%s-step-links", h.flink)
			out, err := build(t, links, dockerfile, bakedJob("present"))
			require.NoError(t, err, out)
			o := run{image: links, cmd: []string{"standalone-job", "--job-classname", "com.acme.Main"}}.start(t)
			require.Equal(t, 0, o.code, o.logs)
			assert.Regexp(t, `the baked deep verdict applies: \d+ JARs of lib and 1 of usrlib unchanged`, o.logs)
			assert.Contains(t, o.logs, "flink-double: started role=standalone-job pid=1")

			breaks := fmt.Sprintf("localhost/baked-suite:%s-step-breaks", h.flink)
			out, err = build(t, breaks, dockerfile, bakedJob("gone"))
			require.Error(t, err, "the build of a job that cannot link fails")
			assert.Contains(t, out, "[linkage-method] /opt/flink/usrlib/job.jar: Main uses Util.gone(), which the host does not have")
		})
	}
}

// build builds dockerfile with job.jar as its context, tagged tag, and
// returns the build's output; err is the failure the engine reported.
func build(t *testing.T, tag, dockerfile string, job []byte) (string, error) {
	t.Helper()
	var ctx bytes.Buffer
	tw := tar.NewWriter(&ctx)
	for _, f := range []struct {
		name string
		data []byte
	}{{"Dockerfile", []byte(dockerfile)}, {"job.jar", job}} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: f.name, Mode: 0o644, Size: int64(len(f.data))}))
		_, err := tw.Write(f.data)
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	res, err := engine.ImageBuild(context.Background(), &ctx, client.ImageBuildOptions{Tags: []string{tag}, Remove: true, ForceRemove: true, NetworkMode: "none"})
	require.NoError(t, err)
	defer res.Body.Close()
	t.Cleanup(func() { _, _ = engine.ImageRemove(context.Background(), tag, client.ImageRemoveOptions{Force: true}) })
	var text strings.Builder
	dec := json.NewDecoder(res.Body)
	var failed error
	for {
		var m struct {
			Stream      string `json:"stream"`
			Error       string `json:"error"`
			ErrorDetail *struct {
				Message string `json:"message"`
			} `json:"errorDetail"`
		}
		if err := dec.Decode(&m); err != nil {
			if !errors.Is(err, io.EOF) {
				failed = err
			}
			break
		}
		text.WriteString(m.Stream)
		if m.Error != "" {
			text.WriteString(m.Error + "\n")
			failed = errors.New(m.Error)
		}
	}
	return text.String(), failed
}
