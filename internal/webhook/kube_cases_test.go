//go:build k8sreal

package webhook

import (
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/report"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

func tmPodTemplate(img string) string {
	return fmt.Sprintf(`  taskManager:
    resource: {memory: 2048m, cpu: 1}
    podTemplate:
      spec:
        containers:
          - {name: flink-main-container, image: %s}
`, img)
}

func podYAML(ns, name, img string, labels string) string {
	return fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: {name: %s, namespace: %s, labels: {%s}}
spec:
  containers:
    - {name: taskmanager, image: %s, args: [taskmanager]}
`, name, ns, labels, img)
}

func sessionJobYAML(ns, name, cluster string) string {
	return kubekit.SessionJobJARYAML(ns, name, cluster, "local:///opt/flink/usrlib/job.jar")
}

// TestRealAPIServer: deploy/ and the chart against a real kube-apiserver,
// and the webhook called by it at kubectl apply.
func TestRealAPIServer(t *testing.T) {
	k := startKube(t)
	k.InstallOperatorCRDs(t)
	imgs := shared(t)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) })
	// A registry on loopback; once written, the tag "hang" never answers
	// its manifest.
	var hang atomic.Bool
	host := registryWith(t, func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if hang.Load() && strings.HasSuffix(r.URL.Path, "/manifests/hang") {
				select {
				case <-release:
				case <-r.Context().Done():
				}
				return
			}
			next.ServeHTTP(w, r)
		})
	}, map[string]v1Image{"good": imgs.good, "jdk11": imgs.jdk11, "plain": imgs.plain, "hang": imgs.good})
	hang.Store(true)
	good, jdk11, plain := host+"/flink:good", host+"/flink:jdk11", host+"/flink:plain"
	res, err := image.Verify(context.Background(), imgs.plain)
	require.NoError(t, err)

	// deploy/webhook applied for real, but for the cert-manager kinds (no
	// package registry here serves cert-manager's CRDs: the parse tests
	// check them) and the webhook configuration (dry run: its Service has
	// no endpoints without a kubelet, and it would fail every Flink object).
	t.Run("deploy/webhook", func(t *testing.T) {
		objs, configs := manifestsWithout(t, readDir(t, "../../deploy/webhook"), "Issuer", "Certificate")
		k.Must(t, objs, "apply", "--server-side", "-f", "-")
		k.Must(t, configs, "apply", "--server-side", "--dry-run=server", "-f", "-")
		out := k.Must(t, "", "get", "poddisruptionbudget", "streamfusion-webhook", "-n", "streamfusion", "-o", "jsonpath={.spec.minAvailable}")
		assert.Equal(t, "1", out)
	})
	t.Run("the chart", func(t *testing.T) {
		helm := kubekit.Tool(t, "STREAMFUSION_HELM", "helm")
		k.Namespace(t, "sf-chart")
		cmd := osexec.Command(helm, "template", "sf", "../../deploy/helm/streamfusion-webhook", "--namespace", "sf-chart",
			"--set", "priorityClassName=system-cluster-critical", "--set", "webhook.pullSecrets={regcred}",
			"--set", "audit.enabled=true", "--set", "audit.imageMap={registry.example/flink=registry.example/flink:2.2.1}")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		rendered, err := cmd.Output()
		require.NoError(t, err, stderr.String())
		objs, configs := manifestsWithout(t, string(rendered), "Issuer", "Certificate")
		out := k.Must(t, objs+"---\n"+configs, "apply", "--server-side", "--dry-run=server", "-f", "-")
		for _, want := range []string{"poddisruptionbudget.policy/sf", "clusterrole.rbac.authorization.k8s.io/sf", "deployment.apps/sf",
			"validatingwebhookconfiguration.admissionregistration.k8s.io/sf",
			"cronjob.batch/sf-audit", "clusterrole.rbac.authorization.k8s.io/sf-audit", "serviceaccount/sf-audit"} {
			assert.Contains(t, out, want+" serverside-applied (server dry run)")
		}
	})
	t.Run("RBAC: the webhook's ServiceAccount reads FlinkDeployments and nothing else", func(t *testing.T) {
		as := "--as=system:serviceaccount:streamfusion:streamfusion-webhook"
		for _, tc := range []struct {
			args []string
			want string
		}{
			{[]string{"get", "flinkdeployments.flink.apache.org", "-n", "flink"}, "yes"},
			{[]string{"list", "flinkdeployments.flink.apache.org", "--all-namespaces"}, "yes"},
			{[]string{"watch", "flinkdeployments.flink.apache.org", "--all-namespaces"}, "yes"},
			{[]string{"create", "flinkdeployments.flink.apache.org", "-n", "flink"}, "no"},
			{[]string{"update", "flinkdeployments.flink.apache.org", "-n", "flink"}, "no"},
			{[]string{"get", "flinksessionjobs.flink.apache.org", "-n", "flink"}, "no"},
			{[]string{"get", "secrets", "-n", "streamfusion"}, "no"},
			{[]string{"list", "pods", "--all-namespaces"}, "no"},
			{[]string{"get", "configmaps", "-n", "flink"}, "no"},
		} {
			out, _ := k.Run("", append(append([]string{"auth", "can-i"}, tc.args...), as)...) // exit 1 means "no"
			assert.Equal(t, tc.want, strings.TrimSpace(out), "can-i %s", strings.Join(tc.args, " "))
		}
		// Beyond what every account may do (an account with no binding of
		// its own, in a namespace of its own), it may read FlinkDeployments.
		k.Namespace(t, "nobody")
		rules := func(as string) map[string]bool {
			out := k.Must(t, "", "auth", "can-i", "--list", "-n", "nobody", as)
			set := map[string]bool{}
			for _, line := range strings.Split(out, "\n")[1:] {
				if f := strings.Join(strings.Fields(line), " "); f != "" {
					set[f] = true
				}
			}
			return set
		}
		everyone := rules("--as=system:serviceaccount:nobody:default")
		var extra []string
		for r := range rules(as) {
			if !everyone[r] {
				extra = append(extra, r)
			}
		}
		assert.Equal(t, []string{"flinkdeployments.flink.apache.org [] [] [get list watch]"}, extra)
	})

	for _, ns := range []string{"flink", "examples"} {
		k.Namespace(t, ns)
	}
	// A refused cluster from before the webhook was installed.
	k.Must(t, kubekit.FDYAML("flink", "refused", plain, "v2_2", ""), "apply", "-f", "-")

	dir := t.TempDir()
	bin := kubekit.BuildStreamfusion(t, dir)
	first, second := newPKI(t, dir, "first"), newPKI(t, dir, "second")
	second.certFile, second.keyFile = first.certFile, first.keyFile
	first.write(t, time.Now().Add(-time.Minute))
	// Session jobs' JARs on a loopback server (the webhook refuses
	// loopback addresses unless --job-jar-any-host).
	jars := kubekit.NewJARServer(t, kubekit.JobJARs())
	down := httptest.NewServer(http.NotFoundHandler())
	down.Close()
	h := k.startHook(t, bin, first, []string{"XDG_CACHE_HOME=" + filepath.Join(dir, "cache")}, "--timeout=8s", "--failure-policy=Fail",
		"--job-jar-any-host", "--job-jar-max-size=1Mi")
	caBundle := append(append([]byte{}, first.caPEM...), second.caPEM...)
	k.register(t, h.addr, caBundle, Fail, 10)
	kubekit.Eventually(t, "the webhook denies a refused image", func() error {
		out, err := k.Apply(kubekit.FDYAML("flink", "probe", plain, "v2_2", ""), "--dry-run=server")
		if err == nil || !strings.Contains(out, "StreamFusion refused") {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})

	jm, tm := report.Summary("kubernetes-jobmanager", res.Decision), report.Summary("taskmanager", res.Decision)
	for _, tc := range []struct {
		name     string
		obj      string
		dryRun   bool
		allowed  bool
		contains []string
	}{
		{name: "consistent FlinkDeployment (flinkVersion v2_2, added to the CRD's enum)", obj: kubekit.FDYAML("flink", "good", good, "v2_2", ""), allowed: true},
		{name: "refused image", obj: kubekit.FDYAML("flink", "bad", plain, "v2_2", ""), dryRun: true,
			contains: []string{`admission webhook "flink-resources.streamfusion-webhook.streamfusion.svc" denied the request: FlinkDeployment flink/bad: flink-main-container (kubernetes-jobmanager) image ` + plain + ": " + firstLine(jm)}},
		{name: "a TaskManager podTemplate on another JDK", obj: kubekit.FDYAML("flink", "mixed", good, "v2_2", tmPodTemplate(jdk11)), dryRun: true,
			contains: []string{"cluster flink/mixed mixes JDK majors: 11 in taskmanager " + jdk11 + "; 17 in jobmanager " + good}},
		{name: "a refused image in spec.podTemplate", dryRun: true, obj: kubekit.FDYAML("flink", "podtpl", good, "v2_2", fmt.Sprintf(`  podTemplate:
    spec:
      containers:
        - {name: flink-main-container, image: %s}
`, plain)), contains: []string{"image " + plain + ": " + firstLine(jm)}},
		{name: "flinkVersion of another line", obj: kubekit.FDYAML("flink", "v118", good, "v1_18", ""), dryRun: true, contains: []string{"spec.flinkVersion is v1_18"}},
		// issue 38: the deployment's own configuration against what its image's Flink resolves at run time
		{name: "an s3 checkpoint directory the image has no file system for", dryRun: true,
			obj:      kubekit.FDYAML("flink", "cp-s3", good, "v2_2", "  flinkConfiguration:\n    execution.checkpointing.dir: s3://bucket/cp\n"),
			contains: []string{"[fs-scheme-unserved]", "s3://bucket/cp", "org.apache.flink:flink-s3-fs-hadoop:"}},
		{name: "a reporter whose factory no plugin provides: admitted, with a warning", dryRun: true, allowed: true,
			obj:      kubekit.FDYAML("flink", "prom", good, "v2_2", "  flinkConfiguration:\n    metrics.reporter.prom.factory.class: org.apache.flink.metrics.prometheus.PrometheusReporterFactory\n"),
			contains: []string{"Warning:", "reporter-unavailable", "PrometheusReporterFactory"}},
		{name: "a good TaskManager Pod", obj: podYAML("flink", "tm-good", good, "component: taskmanager"), dryRun: true, allowed: true},
		{name: "a refused TaskManager Pod", obj: podYAML("flink", "tm-bad", plain, "component: taskmanager"), dryRun: true,
			contains: []string{`admission webhook "flink-pods.streamfusion-webhook.streamfusion.svc" denied the request`, firstLine(tm)}},
		{name: "a Pod without the component label is not sent", obj: podYAML("flink", "other", plain, "app: other"), dryRun: true, allowed: true},
		// Deployments are not sent (the rules name pods): the ReplicaSet
		// controller's Pods are. No controller runs here, so the next case
		// creates the Pod its template makes.
		{name: "a Deployment is not sent", dryRun: true, allowed: true, obj: fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: tm, namespace: flink}
spec:
  replicas: 1
  selector: {matchLabels: {component: taskmanager}}
  template:
    metadata: {labels: {component: taskmanager}}
    spec:
      containers:
        - {name: taskmanager, image: %s, args: [taskmanager]}
`, plain)},
		{name: "the Deployment's Pod", obj: podYAML("flink", "tm-abc12", plain, "component: taskmanager"), dryRun: true, contains: []string{firstLine(tm)}},
		{name: "session job on a good cluster", obj: sessionJobYAML("flink", "sj-good", "good"), allowed: true},
		{name: "session job whose JAR links against its cluster's lib", obj: kubekit.SessionJobJARYAML("flink", "sj-jar-good", "good", jars.URL+"/good-job.jar"), allowed: true},
		{name: "session job whose JAR does not link against its cluster's lib", obj: kubekit.SessionJobJARYAML("flink", "sj-jar-bad", "good", jars.URL+"/mismatched-job.jar"),
			contains: []string{`admission webhook "flink-resources.streamfusion-webhook.streamfusion.svc" denied the request: FlinkSessionJob flink/sj-jar-bad: spec.job.jarURI ` + jars.URL + "/mismatched-job.jar (sha256 ",
				"on FlinkDeployment flink/good, which StreamFusion refuses for this job:", "/opt/flink/usrlib/mismatched-job.jar: " + testkit.MismatchedJobJARFinding}},
		{name: "session job whose JAR is over --job-jar-max-size", obj: kubekit.SessionJobJARYAML("flink", "sj-jar-big", "good", jars.URL+"/big-job.jar"),
			contains: []string{"StreamFusion could not verify this object (failure policy Fail): FlinkSessionJob flink/sj-jar-big: spec.job.jarURI " + jars.URL + "/big-job.jar on FlinkDeployment flink/good: the JAR is not fetched",
				"larger than the limit: the server says 2 MiB, the limit is 1 MiB (--job-jar-max-size, 1 MiB)"}},
		{name: "session job whose JAR server is down", obj: kubekit.SessionJobJARYAML("flink", "sj-jar-down", "good", down.URL+"/job.jar"),
			contains: []string{"StreamFusion could not verify this object (failure policy Fail): FlinkSessionJob flink/sj-jar-down: spec.job.jarURI " + down.URL + "/job.jar on FlinkDeployment flink/good: the JAR is not fetched", "connection refused"}},
		{name: "session job whose JAR is not there", obj: kubekit.SessionJobJARYAML("flink", "sj-jar-404", "good", jars.URL+"/nope.jar"),
			contains: []string{"FlinkSessionJob flink/sj-jar-404: spec.job.jarURI " + jars.URL + "/nope.jar: found 404 Not Found from its server, required a JAR the operator can fetch"}},
		{name: "session job on a refused cluster", obj: sessionJobYAML("flink", "sj-refused", "refused"),
			contains: []string{"FlinkSessionJob flink/sj-refused runs on FlinkDeployment flink/refused, which StreamFusion refuses: flink-main-container (kubernetes-jobmanager) image " + plain}},
		{name: "session job on a missing cluster", obj: sessionJobYAML("flink", "sj-missing", "nope"),
			contains: []string{`FlinkSessionJob flink/sj-missing: spec.deploymentName: found "nope", required an existing FlinkDeployment: FlinkDeployment flink/nope does not exist`}},
		{name: "UPDATE of an admitted FlinkDeployment to a refused image", obj: kubekit.FDYAML("flink", "good", plain, "v2_2", ""),
			contains: []string{"error when applying patch", "FlinkDeployment flink/good: flink-main-container (kubernetes-jobmanager) image " + plain}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var extra []string
			if tc.dryRun {
				extra = append(extra, "--dry-run=server")
			}
			out, err := k.Apply(tc.obj, extra...)
			if tc.allowed {
				require.NoError(t, err, out)
				for _, want := range tc.contains {
					assert.Contains(t, out, want) // kubectl's admission warnings
				}
				return
			}
			require.Error(t, err, "admitted: %s", out)
			for _, want := range tc.contains {
				assert.Contains(t, out, want)
			}
		})
	}
	out := k.Must(t, "", "get", "flinkdeployment", "good", "-n", "flink", "-o", "jsonpath={.spec.image}")
	assert.Equal(t, good, out, "the denied UPDATE left the object as it was")

	t.Run("the operator's example shapes through verify -f and the webhook", func(t *testing.T) {
		exdir := filepath.Join(dir, "examples")
		require.NoError(t, os.MkdirAll(exdir, 0o755))
		files, err := filepath.Glob("testdata/operator-examples/*.yaml")
		require.NoError(t, err)
		require.Len(t, files, 4)
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			b = bytes.ReplaceAll(bytes.ReplaceAll(b, []byte("IMAGE"), []byte(good)), []byte("JARS"), []byte(jars.URL))
			require.NoError(t, os.WriteFile(filepath.Join(exdir, filepath.Base(f)), b, 0o600))
		}
		verify := osexec.Command(bin, "verify", "-f", exdir)
		verify.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
		vout, err := verify.CombinedOutput()
		require.NoError(t, err, "verify -f: %s", vout)
		for _, f := range files {
			out, err := k.Run("", "apply", "-n", "examples", "-f", filepath.Join(exdir, filepath.Base(f)))
			require.NoError(t, err, "%s: %s", f, out)
		}
		// The same shapes on the refused image are denied (an UPDATE of
		// the objects just created; a session job follows its cluster).
		for _, f := range files {
			b, err := os.ReadFile(f)
			require.NoError(t, err)
			obj := strings.ReplaceAll(strings.ReplaceAll(string(b), "IMAGE", plain), "JARS", jars.URL)
			out, err := k.Apply(obj, "-n", "examples", "--dry-run=server")
			require.Error(t, err, "%s on the plain image admitted: %s", f, out)
			assert.Contains(t, out, "StreamFusion refused", f)
		}
	})

	t.Run("the API server's timeoutSeconds is shorter than --timeout", func(t *testing.T) {
		k.register(t, h.addr, caBundle, Fail, 3)
		var out string
		kubekit.Eventually(t, "the webhook answers within the API server's 3 s", func() error {
			begin := time.Now()
			o, err := k.Apply(kubekit.FDYAML("flink", "hang", host+"/flink:hang", "v2_2", ""), "--dry-run=server")
			out = o
			if err == nil {
				return errAdmitted
			}
			if !strings.Contains(o, "not verified within 2s") {
				return fmt.Errorf("after %s: %s", time.Since(begin), o)
			}
			return nil
		})
		assert.Contains(t, out, "StreamFusion could not verify this object (failure policy Fail)")
		k.register(t, h.addr, caBundle, Fail, 10)
	})

	t.Run("the serving certificate rotated while the API server keeps calling", func(t *testing.T) {
		var allowed, failed atomic.Int64
		var lastErr atomic.Value
		stop := make(chan struct{})
		var wg sync.WaitGroup
		fd := kubekit.Object(t, kubekit.FDYAML("flink", "rotate", good, "v2_2", ""))
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				_, err := k.Dyn.Resource(judge.FlinkDeployments).Namespace("flink").Create(context.Background(), fd.DeepCopy(), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
				if err != nil {
					failed.Add(1)
					lastErr.Store(err.Error())
				} else {
					allowed.Add(1)
				}
			}
		})
		time.Sleep(time.Second)
		second.write(t, time.Now())
		// The new pair is what a new connection gets.
		conn, err := tls.Dial("tcp", h.addr, &tls.Config{RootCAs: second.caPool, MinVersion: tls.VersionTLS12})
		require.NoError(t, err, "the rotated certificate is served")
		conn.Close()
		time.Sleep(2 * time.Second)
		// An unreadable pair: the last good one serves, /readyz says so.
		key, err := os.ReadFile(second.keyFile)
		require.NoError(t, err)
		require.NoError(t, os.Remove(second.keyFile))
		resp, err := second.client().Get("https://" + h.addr + "/readyz")
		require.NoError(t, err)
		resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
		time.Sleep(time.Second)
		require.NoError(t, os.WriteFile(second.keyFile, key, 0o600))
		close(stop)
		wg.Wait()
		t.Logf("dry-run creates while rotating: %d admitted, %d failed", allowed.Load(), failed.Load())
		assert.Positive(t, allowed.Load())
		assert.Zero(t, failed.Load(), "last error: %v", lastErr.Load())
	})

	t.Run("the webhook down", func(t *testing.T) {
		h.p.Stop()
		obj := kubekit.FDYAML("flink", "down", good, "v2_2", "")
		k.register(t, h.addr, caBundle, Fail, 10)
		kubekit.Eventually(t, "failurePolicy Fail rejects", func() error {
			out, err := k.Apply(obj, "--dry-run=server")
			if err == nil {
				return errAdmitted
			}
			if !strings.Contains(out, "failed calling webhook") {
				return fmt.Errorf("%s", out)
			}
			return nil
		})
		k.register(t, h.addr, caBundle, Ignore, 10)
		kubekit.Eventually(t, "failurePolicy Ignore admits", func() error {
			out, err := k.Apply(obj, "--dry-run=server")
			if err != nil {
				return fmt.Errorf("%s", out)
			}
			return nil
		})
		// Ignore lets a refused image through while the webhook is down.
		out, err := k.Apply(kubekit.FDYAML("flink", "down-bad", plain, "v2_2", ""), "--dry-run=server")
		require.NoError(t, err, out)
	})
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

func readDir(t testing.TB, dir string) string {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	require.NoError(t, err)
	var all []string
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(all, string(b))
	}
	return strings.Join(all, "\n---\n")
}

// manifestsWithout splits YAML into the objects to apply (without the
// kinds named) and the ValidatingWebhookConfigurations.
func manifestsWithout(t *testing.T, data string, kinds ...string) (objs, configs string) {
	t.Helper()
	var o, c []string
	for _, doc := range kubekit.SplitDocs(t, []byte(data)) {
		var h struct{ Kind string }
		require.NoError(t, k8syaml.Unmarshal(doc, &h))
		switch {
		case h.Kind == "ValidatingWebhookConfiguration":
			c = append(c, string(doc))
		case !contains(kinds, h.Kind):
			o = append(o, string(doc))
		}
	}
	return strings.Join(o, "---\n"), strings.Join(c, "---\n")
}

func contains(xs []string, x string) bool {
	for _, v := range xs {
		if v == x {
			return true
		}
	}
	return false
}
