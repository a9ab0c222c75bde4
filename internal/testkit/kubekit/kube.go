package kubekit

import (
	"archive/zip"
	"bytes"
	"crypto/rand"
	"crypto/rsa"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"io"
	"net/http"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/clientcmd"
)

// Kube is a running API server and the clients the suite uses.
type Kube struct {
	Dir        string // the server's files: etcd's data, certs/, kubeconfigs, logs
	URL        string // https://127.0.0.1:port
	Kubeconfig string // admin (system:masters)
	Dyn        dynamic.Interface
	APIServer  *Proc
	kubectl    string
}

// Start starts etcd and kube-apiserver on loopback and waits for /readyz.
// etcd and kubectl are found by Tool (STREAMFUSION_ETCD,
// STREAMFUSION_KUBECTL), kube-apiserver at STREAMFUSION_KUBE_APISERVER or
// where scripts/build-kube-apiserver caches it; a missing one skips the
// test outside CI.
func Start(t testing.TB) *Kube {
	t.Helper()
	etcd := Tool(t, "STREAMFUSION_ETCD", "etcd")
	kubectl := Tool(t, "STREAMFUSION_KUBECTL", "kubectl")
	apiserver := os.Getenv("STREAMFUSION_KUBE_APISERVER")
	if apiserver == "" {
		cache, err := os.UserCacheDir()
		require.NoError(t, err)
		apiserver = filepath.Join(cache, "streamfusion", "kube", KubeVersion, "kube-apiserver")
	}
	if _, err := os.Stat(apiserver); err != nil {
		missing(t, fmt.Sprintf("kube-apiserver %s: %v (scripts/build-kube-apiserver %s builds it)", apiserver, err, KubeVersion))
	}
	dir, err := os.MkdirTemp("", "k8sreal-")
	require.NoError(t, err)
	t.Cleanup(func() { os.RemoveAll(dir) })

	client, peer := FreePort(t), FreePort(t)
	etcdURL := fmt.Sprintf("http://127.0.0.1:%d", client)
	StartProc(t, dir, etcd, nil, "--name", "k8sreal", "--data-dir", filepath.Join(dir, "etcd"),
		"--listen-client-urls", etcdURL, "--advertise-client-urls", etcdURL,
		"--listen-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-advertise-peer-urls", fmt.Sprintf("http://127.0.0.1:%d", peer),
		"--initial-cluster", fmt.Sprintf("k8sreal=http://127.0.0.1:%d", peer))

	token := RandHex(t)
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

	port := FreePort(t)
	k := &Kube{Dir: dir, URL: fmt.Sprintf("https://127.0.0.1:%d", port), kubectl: kubectl}
	k.APIServer = StartProc(t, dir, apiserver, nil, "--etcd-servers="+etcdURL,
		fmt.Sprintf("--secure-port=%d", port), "--bind-address=127.0.0.1",
		"--token-auth-file="+tokens, "--authorization-mode=RBAC",
		"--service-account-key-file="+saPub, "--service-account-signing-key-file="+saKey,
		"--service-account-issuer=https://kubernetes.default.svc", "--service-cluster-ip-range=10.0.0.0/24",
		"--cert-dir="+filepath.Join(dir, "certs"))
	k.Kubeconfig = k.WriteKubeconfig(t, "admin", token)

	insecure := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}} //nolint:gosec // the test's own API server on loopback
	deadline := time.Now().Add(3 * time.Minute)
	for {
		req, _ := http.NewRequest("GET", k.URL+"/readyz", nil)
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := insecure.Do(req)
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		select {
		case <-k.APIServer.Done():
			t.Fatalf("kube-apiserver exited:\n%s", k.APIServer.Tail())
		default:
		}
		if time.Now().After(deadline) {
			t.Fatalf("kube-apiserver not ready after 3 minutes:\n%s", k.APIServer.Tail())
		}
		time.Sleep(500 * time.Millisecond)
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", k.Kubeconfig)
	require.NoError(t, err)
	cfg.QPS, cfg.Burst = 1000, 1000
	k.Dyn, err = dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	return k
}

// WriteKubeconfig writes a kubeconfig for user with a bearer token (the
// server's certificate is not verified) and returns its path.
func (k *Kube) WriteKubeconfig(t testing.TB, user, token string) string {
	t.Helper()
	p := filepath.Join(k.Dir, user+".kubeconfig")
	cfg := fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: k8sreal, cluster: {server: %q, insecure-skip-tls-verify: true}}]
users: [{name: %s, user: {token: %q}}]
contexts: [{name: k8sreal, context: {cluster: k8sreal, user: %s}}]
current-context: k8sreal
`, k.URL, user, token, user)
	require.NoError(t, os.WriteFile(p, []byte(cfg), 0o600))
	return p
}

// Run runs kubectl as the admin; stdin may be empty. It returns standard
// output and error together.
func (k *Kube) Run(stdin string, args ...string) (string, error) {
	cmd := osexec.Command(k.kubectl, append([]string{"--kubeconfig", k.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	return out.String(), err
}

// Must is Run that fails the test when kubectl does.
func (k *Kube) Must(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	out, err := k.Run(stdin, args...)
	require.NoError(t, err, "kubectl %s:\n%s", strings.Join(args, " "), out)
	return out
}

// Apply is `kubectl apply -f -` (extra flags after).
func (k *Kube) Apply(obj string, extra ...string) (string, error) {
	return k.Run(obj, append([]string{"apply", "-f", "-"}, extra...)...)
}

// Namespace creates a namespace and its default ServiceAccount (no
// controller-manager creates it here, and Pods need it).
func (k *Kube) Namespace(t testing.TB, ns string) {
	t.Helper()
	k.Must(t, "", "create", "namespace", ns)
	k.Must(t, "", "create", "serviceaccount", "default", "-n", ns)
}

// operatorCRDs reads the operator's CRDs (apiextensions v1) from its API
// JAR (STREAMFUSION_OPERATOR_API_JAR, or where make test-k8s caches it)
// and adds the Flink lines its flinkVersion enum lacks (1.10.0 ends at
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
		missing(t, fmt.Sprintf("the operator's API JAR: %v (make test-k8s fetches org.apache.flink:flink-kubernetes-operator-api)", err))
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

// InstallOperatorCRDs applies the operator's CRDs server-side (the
// FlinkDeployment CRD is too large for client-side apply's annotation) and
// waits for them.
func (k *Kube) InstallOperatorCRDs(t testing.TB) {
	t.Helper()
	k.Must(t, string(operatorCRDs(t)), "apply", "--server-side", "-f", "-")
	// kubectl wait fails on a CRD whose status has no conditions yet.
	Eventually(t, "the operator's CRDs established", func() error {
		out, err := k.Run("", "wait", "--for", "condition=established", "--timeout=10s",
			"crd/flinkdeployments.flink.apache.org", "crd/flinksessionjobs.flink.apache.org")
		if err != nil {
			return fmt.Errorf("%w: %s", err, out)
		}
		return nil
	})
}
