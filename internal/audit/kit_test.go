package audit

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
)

// The unit tests judge real images (the test kit's Flink 2.2.1 roots,
// baked with the real entrypoint) served by go-containerregistry's
// registry on loopback; only the Kubernetes API is left out (a Snapshot
// built in the test): TestRealAudit (kube_test.go, build tag k8sreal,
// make test-k8s) reads it from a real kube-apiserver started by the test
// kit (internal/testkit/kubekit).

var entrypointBin []byte

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "audit-test-")
	if err != nil {
		panic(err)
	}
	out := filepath.Join(dir, "entrypoint")
	build := osexec.Command("go", "build", "-trimpath", "-o", out, "../../cmd/entrypoint")
	build.Env = append(os.Environ(), "CGO_ENABLED=0", "GOOS=linux", "GOARCH=amd64")
	if b, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "build the entrypoint: %v\n%s", err, b)
		os.Exit(1)
	}
	if entrypointBin, err = os.ReadFile(out); err != nil {
		panic(err)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// images: a baked Flink 2.2.1 (admitted) and the plain one (refused: no
// StreamFusion, no entrypoint).
type images struct{ good, plain v1.Image }

var (
	kitOnce sync.Once
	kit     images
)

func testImages(t testing.TB) images {
	t.Helper()
	kitOnce.Do(func() {
		d := testkit.Good("2.2.1")
		d.Payloads = nil
		plain, err := imagekit.Base{Dist: d, User: "9999"}.Image()
		require.NoError(t, err)
		var files []image.File
		for _, p := range testkit.StreamFusion("2.2", "0.1.0") {
			files = append(files, image.File{Name: p.Name, Data: p.Payload.Bytes()})
		}
		good, _, err := image.Bake(context.Background(), plain, image.BakeOptions{Entrypoint: entrypointBin, Payloads: files})
		require.NoError(t, err)
		kit = images{good: good, plain: plain}
	})
	require.NotNil(t, kit.good)
	return kit
}

// serve writes imgs by tag to a registry on loopback; it returns its host.
func serve(t testing.TB, imgs map[string]v1.Image) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	host := strings.TrimPrefix(srv.URL, "http://")
	for tag, img := range imgs {
		push(t, host+"/flink:"+tag, img)
	}
	return host
}

func push(t testing.TB, ref string, img v1.Image) {
	t.Helper()
	r, err := name.ParseReference(ref)
	require.NoError(t, err)
	require.NoError(t, remote.Write(r, img))
}

func digestOf(t testing.TB, img v1.Image) string {
	t.Helper()
	d, err := img.Digest()
	require.NoError(t, err)
	return d.String()
}
