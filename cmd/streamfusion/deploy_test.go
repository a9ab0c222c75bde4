package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// deployImages pushes to a loopback registry: a baked Flink 2.2.1 image on
// JDK 17 (good), the same baked on JDK 11 (jdk11), and plain Flink (plain).
func deployImages(t *testing.T) (good, jdk11, plain string) {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	push := func(tag, jdk string) string {
		d := testkit.Good("2.2.1")
		d.Payloads, d.JDK = nil, jdk
		img, err := imagekit.Base{Dist: d, User: "9999"}.Image()
		require.NoError(t, err)
		ref := host + "/flink:" + tag
		r, err := name.ParseReference(ref)
		require.NoError(t, err)
		require.NoError(t, remote.Write(r, img))
		return ref
	}
	plain = push("plain", "17.0.15")
	bake := func(base, tag string) string {
		out := host + "/flink:" + tag
		code, _, stderr := cli(t, nil, append([]string{"bake", "--base", base, "--tag", out, "--entrypoint", entrypoints["amd64"]}, payloadFiles(t, nil)...)...)
		require.Equal(t, 0, code, stderr)
		return out
	}
	return bake(plain, "good"), bake(push("plain21", "11.0.25"), "jdk11"), plain
}

func flinkDeployment(image, version, tmImage string) string {
	s := fmt.Sprintf(`apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: basic, namespace: flink}
spec:
  image: %s
  flinkVersion: %s
`, image, version)
	if tmImage != "" {
		s += fmt.Sprintf("  taskManager:\n    podTemplate:\n      spec:\n        containers:\n          - {name: flink-main-container, image: %s}\n", tmImage)
	}
	return s
}

func TestVerifyDeployments(t *testing.T) {
	good, jdk11, plain := deployImages(t)
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		require.NoError(t, os.WriteFile(p, []byte(data), 0o644))
		return p
	}

	t.Run("one image for both components", func(t *testing.T) {
		f := write("ok.yaml", flinkDeployment(good, "v2_2", "")+"---\napiVersion: flink.apache.org/v1beta1\nkind: FlinkSessionJob\nmetadata: {name: j, namespace: flink}\nspec: {deploymentName: basic}\n")
		code, out, stderr := cli(t, nil, "verify", "-f", f)
		require.Equal(t, 0, code, "%s\n%s", out, stderr)
		assert.Equal(t, 2, strings.Count(out, "ADMITTED: Flink 2.2.1, Java 17.0.15, StreamFusion 0.1.0 (build 3f9c0d1e)"), out)
		assert.Contains(t, out, "StreamFusion deployment check: ADMITTED (2 resource(s), 2 image(s) checked, 0 refused or unreadable, 0 set finding(s))")
	})

	t.Run("two JDK majors", func(t *testing.T) {
		code, out, stderr := cli(t, nil, "verify", "--json", "-f", write("jdk.yaml", flinkDeployment(good, "v2_2", jdk11)))
		require.Equal(t, 78, code, "%s\n%s", out, stderr)
		var rep deployReport
		require.NoError(t, json.Unmarshal([]byte(out), &rep))
		assert.False(t, rep.Admitted)
		require.Len(t, rep.Findings, 1)
		assert.Equal(t, deploy.RuleJDK, rep.Findings[0].Rule)
		assert.Contains(t, rep.Findings[0].Message, "17 in jobmanager "+good)
		assert.Contains(t, rep.Findings[0].Message, "11 in taskmanager "+jdk11)
		require.Len(t, rep.Resources, 1)
		require.Len(t, rep.Resources[0].Containers, 2)
		assert.True(t, rep.Resources[0].Containers[1].Verdict.Admitted, "each image alone is fine")
	})

	t.Run("flinkVersion of another line", func(t *testing.T) {
		code, out, _ := cli(t, nil, "verify", "-f", write("v118.yaml", flinkDeployment(good, "v1_18", "")))
		require.Equal(t, 78, code, out)
		assert.Contains(t, out, "ERROR [deploy-flink-version] FlinkDeployment flink/basic: spec.flinkVersion is v1_18 but kubernetes-jobmanager's image")
		assert.Contains(t, out, "set spec.flinkVersion to v2_2")
	})

	t.Run("compose from standard input with a plain image", func(t *testing.T) {
		var stdout, stderr strings.Builder
		root, _ := newRoot(nil)
		root.SetArgs([]string{"verify", "-f", "-"})
		root.SetIn(strings.NewReader(fmt.Sprintf("services:\n  jm:\n    image: %s\n    command: jobmanager\n  tm:\n    image: %s\n    command: taskmanager\n", plain, good)))
		root.SetOut(&stdout)
		root.SetErr(&stderr)
		err := root.Execute()
		require.Error(t, err)
		assert.Equal(t, 78, exitCode(err, true))
		out := stdout.String()
		assert.Contains(t, out, "== compose - (-#1)")
		assert.Contains(t, out, "REFUSED")
		assert.Contains(t, out, "StreamFusion refused to start jobmanager: ", "the termination message's words")
	})

	t.Run("usage", func(t *testing.T) {
		code, _, stderr := cli(t, nil, "verify", "-f", write("x.yaml", flinkDeployment(good, "v2_2", "")), good)
		assert.Equal(t, 64, code)
		assert.Contains(t, stderr, "takes no IMAGE")
		code, _, stderr = cli(t, nil, "verify", "-f", write("svc.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: s}\n"))
		assert.Equal(t, 64, code)
		assert.Contains(t, stderr, "no FlinkDeployment")
		code, _, stderr = cli(t, nil, "verify", "-f", write("bad.yaml", "kind: Pod\nspec: {containers: 3}\n"))
		assert.Equal(t, 1, code)
		assert.Contains(t, stderr, "bad.yaml document 1")
	})

	t.Run("an image that cannot be read", func(t *testing.T) {
		code, out, _ := cli(t, nil, "verify", "-f", write("missing.yaml", flinkDeployment(strings.Replace(good, ":good", ":missing", 1), "v2_2", "")))
		assert.Equal(t, 1, code)
		assert.Contains(t, out, "ERROR cannot read the image")
	})
}
