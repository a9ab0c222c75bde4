//go:build k8sreal

package webhook

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// The k8sreal suite runs the webhook behind a real kube-apiserver (built
// by scripts/build-kube-apiserver), Debian's etcd and kubectl, all on
// loopback, started by the test and stopped after (kubekit). No
// controller-manager, scheduler or kubelet runs: the webhook is
// `streamfusion webhook` as a process on loopback, registered with a URL
// clientConfig.

// kube is the test kit's API server with the webhook's own steps.
type kube struct{ *kubekit.Kube }

// startKube starts etcd and kube-apiserver on loopback and waits for
// /readyz.
func startKube(t testing.TB) *kube {
	t.Helper()
	return &kube{kubekit.Start(t)}
}

// hook is `streamfusion webhook` running on loopback.
type hook struct {
	bin, dir   string
	addr       string
	kubeconfig string
	pki        pki
	args       []string
	env        []string
	p          *kubekit.Proc
}

// startHook starts the webhook with the ServiceAccount token of
// deploy/webhook's streamfusion-webhook account and waits for /readyz
// (which needs the FlinkDeployments listed through that token).
func (k *kube) startHook(t testing.TB, bin string, p pki, env []string, args ...string) *hook {
	t.Helper()
	token := strings.TrimSpace(k.Must(t, "", "create", "token", "streamfusion-webhook", "-n", "streamfusion", "--duration=2h"))
	h := &hook{bin: bin, dir: k.Dir, addr: fmt.Sprintf("127.0.0.1:%d", kubekit.FreePort(t)), pki: p,
		kubeconfig: k.WriteKubeconfig(t, "streamfusion-webhook", token), env: env, args: args}
	h.start(t)
	return h
}

func (h *hook) start(t testing.TB) {
	t.Helper()
	args := append([]string{"webhook", "--listen", h.addr, "--tls-cert", h.pki.certFile, "--tls-key", h.pki.keyFile,
		"--kubeconfig", h.kubeconfig, "--metrics-listen=127.0.0.1:0"}, h.args...)
	h.p = kubekit.StartProc(t, h.dir, h.bin, h.env, args...)
	c := h.pki.client()
	deadline := time.Now().Add(time.Minute)
	for {
		resp, err := c.Get("https://" + h.addr + "/readyz")
		if err == nil {
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return
			}
			err = fmt.Errorf("%d %s", resp.StatusCode, b)
		}
		select {
		case <-h.p.Done():
			t.Fatalf("streamfusion webhook exited:\n%s", h.p.Tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("streamfusion webhook not ready after a minute (%v):\n%s", err, h.p.Tail())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// webhookConfig is deploy/webhook's ValidatingWebhookConfiguration.
func webhookConfig(t testing.TB) *admissionregistrationv1.ValidatingWebhookConfiguration {
	t.Helper()
	b, err := os.ReadFile("../../deploy/webhook/validatingwebhookconfiguration.yaml")
	require.NoError(t, err)
	var w admissionregistrationv1.ValidatingWebhookConfiguration
	require.NoError(t, k8syaml.UnmarshalStrict(b, &w))
	return &w
}

// register applies deploy/webhook's configuration with each webhook's
// clientConfig a URL to h (no kubelet runs its Deployment here), the CA
// bundle, failure policy and timeout given.
func (k *kube) register(t testing.TB, addr string, caBundle []byte, policy string, timeoutSeconds int32) {
	t.Helper()
	w := webhookConfig(t)
	delete(w.Annotations, "cert-manager.io/inject-ca-from")
	w.APIVersion, w.Kind = "admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration"
	fp := admissionregistrationv1.FailurePolicyType(policy)
	url := "https://" + addr + "/validate"
	for i := range w.Webhooks {
		w.Webhooks[i].ClientConfig = admissionregistrationv1.WebhookClientConfig{URL: &url, CABundle: caBundle}
		w.Webhooks[i].FailurePolicy = &fp
		w.Webhooks[i].TimeoutSeconds = &timeoutSeconds
	}
	b, err := json.Marshal(w)
	require.NoError(t, err)
	k.Must(t, string(b), "apply", "--server-side", "--force-conflicts", "-f", "-")
}

var errAdmitted = errors.New("admitted")
