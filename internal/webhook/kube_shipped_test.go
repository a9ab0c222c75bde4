//go:build k8sreal

package webhook

import (
	"context"
	"fmt"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	appsv1 "k8s.io/api/apps/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/release"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// TestRealShippedImage runs the webhook as it ships: the image `make
// release` built, loaded from the release's tarball into the real container
// engine (podman), with the command, arguments, user, read-only root
// filesystem, dropped capabilities and mounts of the Deployment the
// packaged chart renders, the serving certificate and pull secrets laid out
// as the chart mounts them, and the ServiceAccount token, CA and API address
// a kubelet gives a pod. No kubelet runs here: podman stands in for it
// (host network, the kubelet's volume layout), the chart's objects are
// applied to the real API server, and the webhook is registered with it by
// URL. A refused FlinkDeployment is denied by the shipped image itself; the
// process is killed and comes back ready under podman's restart policy.
// STREAMFUSION_RELEASE names the release folder (make test-release).
func TestRealShippedImage(t *testing.T) {
	rel := os.Getenv("STREAMFUSION_RELEASE")
	if rel == "" {
		if os.Getenv("CI") == "true" {
			t.Fatal("STREAMFUSION_RELEASE is not set: make test-release builds the release and sets it")
		}
		t.Skip("STREAMFUSION_RELEASE is not set: make test-release builds the release and sets it")
	}
	podman := kubekit.Tool(t, "STREAMFUSION_PODMAN", "podman")
	helm := kubekit.Tool(t, "STREAMFUSION_HELM", "helm")
	m, err := release.ReadManifest(rel)
	require.NoError(t, err)
	bad, err := release.Check(context.Background(), rel)
	require.NoError(t, err)
	require.Empty(t, bad, "the release's artifacts disagree")

	k := startKube(t)
	k.InstallOperatorCRDs(t)
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good, "plain": imgs.plain})
	good, plain := host+"/flink:good", host+"/flink:plain"

	// The packaged chart, rendered by the real helm, applied to the real
	// API server (its webhook configuration in a dry run: its Service has
	// no endpoints without a kubelet).
	port, metricsPort := kubekit.FreePort(t), kubekit.FreePort(t)
	cmd := osexec.Command(helm, "template", "streamfusion-webhook", filepath.Join(rel, filepath.FromSlash(m.Chart)), "--namespace", "streamfusion",
		"--set", fmt.Sprintf("webhook.port=%d", port), "--set", fmt.Sprintf("metrics.port=%d", metricsPort), "--set", "webhook.pullSecrets={regcred}")
	rendered, err := cmd.Output()
	require.NoError(t, err, "helm template")
	objs, configs := manifestsWithout(t, string(rendered), "Issuer", "Certificate")
	k.Namespace(t, "streamfusion")
	k.Must(t, objs, "apply", "--server-side", "-f", "-")
	k.Must(t, configs, "apply", "--server-side", "--dry-run=server", "-f", "-")
	dep := chartDeployment(t, string(rendered))
	pod := dep.Spec.Template.Spec
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	require.Equal(t, m.Image.Repository+"@"+m.Image.Index, c.Image, "the packaged chart installs the image of the release, by digest")
	require.NotNil(t, pod.SecurityContext.RunAsUser)

	// The image, as the real container engine reads both forms the release
	// ships: the OCI layout (the index by its ref name; podman picks this
	// machine's platform) and this platform's tarball. Both are one image.
	layoutRef := "oci:" + filepath.Join(rel, filepath.FromSlash(m.Image.Layout)) + ":" + m.Version
	out, err := osexec.Command(podman, "pull", "-q", layoutRef).CombinedOutput()
	require.NoError(t, err, "podman pull %s: %s", layoutRef, out)
	fromLayout := strings.TrimSpace(string(out))
	digests, err := osexec.Command(podman, "image", "inspect", "--format", "{{.RepoDigests}}", fromLayout).Output()
	require.NoError(t, err)
	assert.Contains(t, string(digests), "@"+m.Image.Index, "podman read the index from the layout")
	for _, pl := range m.Image.Platforms {
		if pl.Platform == "linux/"+runtime.GOARCH {
			assert.Contains(t, string(digests), "@"+pl.Manifest, "podman took this platform's image")
		}
	}
	tarball := filepath.Join(rel, "image", "streamfusion-"+m.Version+"-linux-"+runtime.GOARCH+".tar")
	out, err = osexec.Command(podman, "load", "-q", "-i", tarball).CombinedOutput()
	require.NoError(t, err, "podman load: %s", out)
	ref := m.Image.Repository + ":" + m.Version
	t.Cleanup(func() { _ = osexec.Command(podman, "rmi", "-f", ref, fromLayout).Run() })
	ids, err := osexec.Command(podman, "image", "inspect", "--format", "{{.Id}}", ref, fromLayout).Output()
	require.NoError(t, err)
	idList := strings.Fields(string(ids))
	require.Len(t, idList, 2)
	require.Equal(t, idList[0], idList[1], "the tarball and the layout hold one image")
	user, err := osexec.Command(podman, "image", "inspect", "--format", "{{.User}}", ref).Output()
	require.NoError(t, err)
	require.NotContains(t, []string{"", "0", "root"}, strings.SplitN(strings.TrimSpace(string(user)), ":", 2)[0], "the image's user")

	// What a kubelet would mount, with its default modes (0644 files).
	dir := t.TempDir()
	require.NoError(t, os.Chmod(dir, 0o755))
	p := newPKI(t, dir, "shipped")
	token := strings.TrimSpace(k.Must(t, "", "create", "token", dep.Spec.Template.Spec.ServiceAccountName, "-n", "streamfusion", "--duration=2h"))
	apiCA, err := os.ReadFile(filepath.Join(k.Dir, "certs", "apiserver.crt"))
	require.NoError(t, err)
	volumes := map[string]map[string][]byte{
		"tls":            {"tls.crt": p.certPEM, "tls.key": p.keyPEM},
		"pull-secrets":   {"regcred/.dockerconfigjson": []byte(`{"auths":{}}`)},
		"serviceaccount": {"token": []byte(token), "ca.crt": apiCA, "namespace": []byte("streamfusion")},
	}
	mounts := map[string]string{"serviceaccount": "/var/run/secrets/kubernetes.io/serviceaccount"}
	args := []string{"run", "-d", "--name", "sf-shipped-" + kubekit.RandHex(t)[:8], "--network", "host", "--restart", "always",
		"--user", fmt.Sprintf("%d", *pod.SecurityContext.RunAsUser), "--entrypoint", c.Command[0],
		"-e", "KUBERNETES_SERVICE_HOST=127.0.0.1", "-e", "KUBERNETES_SERVICE_PORT=" + k.URL[strings.LastIndex(k.URL, ":")+1:]}
	sc := c.SecurityContext
	if sc != nil && sc.ReadOnlyRootFilesystem != nil && *sc.ReadOnlyRootFilesystem {
		args = append(args, "--read-only")
	}
	if sc != nil && sc.AllowPrivilegeEscalation != nil && !*sc.AllowPrivilegeEscalation {
		args = append(args, "--security-opt", "no-new-privileges")
	}
	if sc != nil && sc.Capabilities != nil {
		for _, d := range sc.Capabilities.Drop {
			args = append(args, "--cap-drop", string(d))
		}
	}
	for _, vm := range c.VolumeMounts {
		mounts[vm.Name] = vm.MountPath
	}
	require.Contains(t, mounts, "tmp")
	args = append(args, "--tmpfs", mounts["tmp"]+":rw,mode=1777")
	for name, files := range volumes {
		require.Contains(t, mounts, name, "the chart mounts no volume %s", name)
		src := filepath.Join(dir, "vol-"+name)
		for f, data := range files {
			require.NoError(t, os.MkdirAll(filepath.Dir(filepath.Join(src, f)), 0o755))
			require.NoError(t, os.WriteFile(filepath.Join(src, f), data, 0o644))
		}
		args = append(args, "-v", src+":"+mounts[name]+":ro")
	}
	args = append(append(args, ref), c.Args...)
	out, err = osexec.Command(podman, args...).CombinedOutput()
	require.NoError(t, err, "podman run: %s", out)
	name := args[3]
	t.Cleanup(func() { _ = osexec.Command(podman, "rm", "-f", "-t", "0", name).Run() })
	logs := func() string {
		b, _ := osexec.Command(podman, "logs", "--tail", "40", name).CombinedOutput()
		return string(b)
	}

	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitReady(t, p, addr, logs)
	pid := containerPID(t, podman, name)
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	require.NoError(t, err)
	assert.Regexp(t, fmt.Sprintf(`(?m)^Uid:\s+%d\s`, *pod.SecurityContext.RunAsUser), string(status), "the webhook's process runs as the chart's user")

	k.register(t, addr, p.caPEM, Fail, 10)
	k.Namespace(t, "flink")
	denied := func() error {
		out, err := k.Apply(kubekit.FDYAML("flink", "probe", plain, "v2_2", ""), "--dry-run=server")
		if err == nil || !strings.Contains(out, "StreamFusion refused") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	}
	kubekit.Eventually(t, "the shipped image denies a refused FlinkDeployment", denied)
	outS, err := k.Apply(kubekit.FDYAML("flink", "good", good, "v2_2", ""))
	require.NoError(t, err, "a consistent FlinkDeployment is admitted: %s\n%s", outS, logs())

	mfs := scrape(t, fmt.Sprintf("http://127.0.0.1:%d/metrics", metricsPort))
	for _, verdict := range []string{"denied", "allowed"} {
		n, ok := value(mfs, "streamfusion_webhook_reviews_total", map[string]string{"kind": "FlinkDeployment", "operation": "CREATE", "verdict": verdict})
		assert.True(t, ok && n >= 1, "reviews_total %s: %v", verdict, n)
	}

	// Killed as a crash or the OOM killer would, it comes back ready.
	require.NoError(t, syscall.Kill(pid, syscall.SIGKILL))
	deadline := time.Now().Add(time.Minute)
	for {
		b, err := osexec.Command(podman, "inspect", "--format", "{{.RestartCount}} {{.State.Pid}}", name).Output()
		if err == nil {
			f := strings.Fields(string(b))
			if len(f) == 2 && f[0] != "0" && f[1] != "0" && f[1] != strconv.Itoa(pid) {
				break
			}
		}
		require.True(t, time.Now().Before(deadline), "not restarted after a minute: %s\n%s", b, logs())
		time.Sleep(200 * time.Millisecond)
	}
	waitReady(t, p, addr, logs)
	require.NoError(t, denied(), "after its restart")
}

// chartDeployment is the Deployment of rendered.
func chartDeployment(t *testing.T, rendered string) appsv1.Deployment {
	t.Helper()
	for _, doc := range kubekit.SplitDocs(t, []byte(rendered)) {
		var d appsv1.Deployment
		require.NoError(t, k8syaml.Unmarshal(doc, &d))
		if d.Kind == "Deployment" {
			return d
		}
	}
	t.Fatal("the chart renders no Deployment")
	return appsv1.Deployment{}
}

func waitReady(t *testing.T, p pki, addr string, logs func() string) {
	t.Helper()
	c := p.client()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.Get("https://" + addr + "/readyz")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
		}
		require.True(t, time.Now().Before(deadline), "the shipped image is not ready after a minute: %v\n%s", err, logs())
		time.Sleep(200 * time.Millisecond)
	}
}

func containerPID(t *testing.T, podman, name string) int {
	t.Helper()
	b, err := osexec.Command(podman, "inspect", "--format", "{{.State.Pid}}", name).Output()
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	require.NotZero(t, pid)
	return pid
}
