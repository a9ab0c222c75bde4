//go:build k8sreal

package webhook

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
	k8syaml "sigs.k8s.io/yaml"
)

// The k8sreal suite runs the webhook behind a real kube-apiserver (built
// by scripts/build-kube-apiserver), Debian's etcd and kubectl, all on
// loopback, started by the test and stopped after. No controller-manager,
// scheduler or kubelet runs: the webhook is `streamfusion webhook` as a
// process on loopback, registered with a URL clientConfig.

// KubeVersion is the kube-apiserver release the suite runs.
const KubeVersion = "v1.37.2"

// tool finds a program the suite needs: outside CI a missing one skips,
// in CI (.ci/run installs them) it fails.
func tool(t testing.TB, env, name string) string {
	t.Helper()
	if p := os.Getenv(env); p != "" {
		return p
	}
	if p, err := osexec.LookPath(name); err == nil {
		return p
	}
	msg := fmt.Sprintf("%s not found (set %s or put it on PATH; make test-k8s provides it)", name, env)
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

func freePort(t testing.TB) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// proc starts a process whose output goes to a log file; it is stopped
// (SIGTERM, then SIGKILL) when the test ends or by stop.
type proc struct {
	name string
	cmd  *osexec.Cmd
	log  string
	done chan struct{}
}

func startProc(t testing.TB, dir, name string, env []string, args ...string) *proc {
	t.Helper()
	logPath := filepath.Join(dir, filepath.Base(name)+fmt.Sprintf("-%d.log", time.Now().UnixNano()))
	f, err := os.Create(logPath)
	require.NoError(t, err)
	cmd := osexec.Command(name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.Env = append(os.Environ(), env...)
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	require.NoError(t, cmd.Start(), "start %s", name)
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); f.Close(); close(p.done) }()
	t.Cleanup(p.stop)
	return p
}

func (p *proc) stop() {
	select {
	case <-p.done:
		return
	default:
	}
	_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(15 * time.Second):
		_ = syscall.Kill(-p.cmd.Process.Pid, syscall.SIGKILL)
		<-p.done
	}
}

func (p *proc) tail() string {
	b, _ := os.ReadFile(p.log)
	if len(b) > 4000 {
		b = b[len(b)-4000:]
	}
	return string(b)
}

// kube is a running API server and the clients the suite uses.
type kube struct {
	dir        string
	url        string
	kubectl    string
	kubeconfig string // admin (system:masters)
	dyn        dynamic.Interface
	apiserver  *proc
}

// startKube starts etcd and kube-apiserver on loopback and waits for
// /readyz.
func startKube(t testing.TB) *kube {
	t.Helper()
	etcd := tool(t, "STREAMFUSION_ETCD", "etcd")
	kubectl := tool(t, "STREAMFUSION_KUBECTL", "kubectl")
	apiserver := os.Getenv("STREAMFUSION_KUBE_APISERVER")
	if apiserver == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		apiserver = filepath.Join(cache, "streamfusion", "kube", KubeVersion, "kube-apiserver")
	}
	if _, err := os.Stat(apiserver); err != nil {
		msg := fmt.Sprintf("kube-apiserver %s: %v (scripts/build-kube-apiserver %s builds it)", apiserver, err, KubeVersion)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	dir, err := os.MkdirTemp("", "k8sreal-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	client, peer := freePort(t), freePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	startProc(t, dir, etcd, nil, "--name", "k8sreal", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("k8sreal=http://127.0.0.1:%d", peer))

	token := randHex(t)
	tokens := filepath.Join(dir, "tokens.csv")
	require.NoError(t, os.WriteFile(tokens, []byte(token+`,admin,admin,"system:masters"`+"\n"), 0o600))
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	saKey := filepath.Join(dir, "sa.key")
	require.NoError(t, os.WriteFile(saKey, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600))
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	require.NoError(t, err)
	saPub := filepath.Join(dir, "sa.pub")
	require.NoError(t, os.WriteFile(saPub, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o600))

	port := freePort(t)
	k := &kube{dir: dir, url: fmt.Sprintf("https://127.0.0.1:%d", port), kubectl: kubectl}
	k.apiserver = startProc(t, dir, apiserver, nil, "--etcd-servers="+etcdURL,
		fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1",
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir="+filepath.Join(dir, "certs"))
	k.kubeconfig = k.writeKubeconfig(t, "admin", token)

	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own API server on loopback
	deadline := time.Now().Add(3 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", k.url+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := insecure.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-k.apiserver.done:
			t.Fatalf("kube-apiserver exited:\n%s", k.apiserver.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3 minutes:\n%s", k.apiserver.tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 1000, 1000
	k.dyn, err = dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return k
}

func randHex(t testing.TB) string {
	b := make([]byte, 16)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return hex.EncodeToString(b)
}

func (k *kube) writeKubeconfig(t testing.TB, user, token string) string {
	t.Helper()
	p := filepath.Join(k.dir, user+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: k8sreal, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: k8sreal, context: {cluster: k8sreal, user: %s}}]
current-context: k8sreal
`, k.url, user, token, user)
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o600))
	return p
}

// run runs kubectl as the admin; stdin may be empty.
func (k *kube) run(stdin string, args ...string) (string, error) {
	cmd := osexec.Command(k.kubectl, append([]string{"--kubeconfig", k.kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

func (k *kube) must(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := k.run(stdin, args...)
	require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// apply is `kubectl apply -f -` (extra flags after).
func (k *kube) apply(obj string, extra ...string) (string, error) {
	return k.run(obj, append([]string{"apply", "-f", "-"}, extra...)...)
}

// namespace creates a namespace and its default ServiceAccount (no
// controller-manager creates it here, and Pods need it).
func (k *kube) namespace(t testing.TB, ns string) {
	t.Helper()
	k.must(t, "", "create", "namespace", ns)
	k.must(t, "", "create", "serviceaccount", "default", "-n", ns)
}

// operatorCRDs reads the operator's CRDs (apiextensions v1) from its API
// JAR and adds the Flink lines its flinkVersion enum lacks (1.10.0 ends at
// v1_20; the images here are Flink 2.2).
func operatorCRDs(t testing.TB) []byte {
	t.Helper()
	jar := os.Getenv("STREAMFUSION_OPERATOR_API_JAR")
	if jar == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		jar = filepath.Join(cache, "streamfusion", "operator-api", "flink-kubernetes-operator-api-1.10.0.jar")
	}
	zr, err := zip.OpenReader(jar)
	if err != nil {
		msg := fmt.Sprintf("the operator's API JAR: %v (make test-k8s fetches org.apache.flink:flink-kubernetes-operator-api)", err)
		if os.Getenv("CI") == "true" {
			t.Fatal(msg)
		}
		t.Skip(msg)
	}
	defer zr.Close()
	var out []byte
	for _, name := range []string{"flinkdeployments", "flinksessionjobs"} {
		f, err := zr.Open("META-INF/fabric8/" + name + ".flink.apache.org-v1.yml")
		require.NoError(t, err)
		data, err := io.ReadAll(f)
		f.Close()
		require.NoError(t, err)
		var doc yaml.Node
		require.NoError(t, yaml.Unmarshal(data, &doc))
		addFlinkVersions(&doc, "v2_0", "v2_1", "v2_2")
		b, err := yaml.Marshal(&doc)
		require.NoError(t, err)
		out = append(append(out, b...), "---\n"...)
	}
	return out
}

// addFlinkVersions appends versions to every flinkVersion property's enum.
func addFlinkVersions(n *yaml.Node, versions ...string) {
	if n.Kind == yaml.MappingNode {
		for i := 0; i+1 < len(n.Content); i += 2 {
			if n.Content[i].Value == "flinkVersion" && n.Content[i+1].Kind == yaml.MappingNode {
				m := n.Content[i+1]
				for j := 0; j+1 < len(m.Content); j += 2 {
					if m.Content[j].Value == "enum" {
						for _, v := range versions {
							m.Content[j+1].Content = append(m.Content[j+1].Content, &yaml.Node{Kind: yaml.ScalarNode, Value: v})
						}
					}
				}
			}
		}
	}
	for _, c := range n.Content {
		addFlinkVersions(c, versions...)
	}
}

// installOperatorCRDs applies the CRDs server-side (the FlinkDeployment
// CRD is too large for client-side apply's annotation) and waits for them.
func (k *kube) installOperatorCRDs(t testing.TB) {
	t.Helper()
	k.must(t, string(operatorCRDs(t)), "apply", "--server-side", "-f", "-")
	// kubectl wait fails on a CRD whose status has no conditions yet.
	eventually(t, "the operator's CRDs established", func() error {
		out, err := k.run("", "wait", "--for", "condition=established", "--timeout=10s",
			"crd/flinkdeployments.flink.apache.org", "crd/flinksessionjobs.flink.apache.org")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// hook is `streamfusion webhook` running on loopback.
type hook struct {
	bin, dir   string
	addr       string
	kubeconfig string
	pki        pki
	args       []string
	env        []string
	p          *proc
}

// buildStreamfusion builds the host CLI once per test binary.
func buildStreamfusion(t testing.TB, dir string) string {
	t.Helper()
	out := filepath.Join(dir, "streamfusion")
	build := osexec.Command("go", "build", "-trimpath", "-o", out, "../../cmd/streamfusion")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	b, err := build.CombinedOutput()
	require.NoError(t, err, "build streamfusion: %s", b)
	return out
}

// startHook starts the webhook with the ServiceAccount token of
// deploy/webhook's streamfusion-webhook account and waits for /readyz
// (which needs the FlinkDeployments listed through that token).
func (k *kube) startHook(t testing.TB, bin string, p pki, env []string, args ...string) *hook {
	t.Helper()
	token := strings.TrimSpace(k.must(t, "", "create", "token", "streamfusion-webhook", "-n", "streamfusion", "--duration=2h"))
	h := &hook{bin: bin, dir: k.dir, addr: fmt.Sprintf("127.0.0.1:%d", freePort(t)), pki: p,
		kubeconfig: k.writeKubeconfig(t, "streamfusion-webhook", token), env: env, args: args}
	h.start(t)
	return h
}

func (h *hook) start(t testing.TB) {
	t.Helper()
	args := append([]string{"webhook", "--listen", h.addr, "--tls-cert", h.pki.certFile, "--tls-key", h.pki.keyFile,
		"--kubeconfig", h.kubeconfig, "--metrics-listen=127.0.0.1:0"}, h.args...)
	h.p = startProc(t, h.dir, h.bin, h.env, args...)
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
		case <-h.p.done:
			t.Fatalf("streamfusion webhook exited:\n%s", h.p.tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("streamfusion webhook not ready after a minute (%v):\n%s", err, h.p.tail())
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
	k.must(t, string(b), "apply", "--server-side", "--force-conflicts", "-f", "-")
}

// eventually retries f until it returns nil (the API server's webhook
// configuration reaches its admission chain through an informer).
func eventually(t testing.TB, what string, f func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

var errAdmitted = errors.New("admitted")
