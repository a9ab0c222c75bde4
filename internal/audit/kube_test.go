//go:build k8sreal

package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	osexec "os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/imagekit"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// auditReport is `streamfusion audit --json` as the audit writes it.
type auditReport struct{ Report }

func (r auditReport) row(t testing.TB, ns, kind, name string) Row {
	t.Helper()
	for _, row := range r.Resources {
		if row.Namespace == ns && row.Kind == kind && row.Name == name {
			return row
		}
	}
	require.Failf(t, "no row", "%s %s/%s in %+v", kind, ns, name, r.Resources)
	return Row{}
}

// runningPod is a Pod with the status a kubelet would have written: the
// digest each container started from (no kubelet runs here, so the
// suite writes it through the status subresource, as a kubelet does).
func runningPod(t testing.TB, k *kubekit.Kube, ns, name, labels, owner, container, args, img, imageID string) {
	t.Helper()
	meta := fmt.Sprintf("{name: %s, namespace: %s, labels: {%s}}", name, ns, labels)
	if owner != "" {
		meta = fmt.Sprintf("{name: %s, namespace: %s, labels: {%s}, ownerReferences: [{apiVersion: apps/v1, kind: ReplicaSet, name: %s, uid: 6a1e8a0c-0000-4000-8000-000000000001, controller: true}]}",
			name, ns, labels, owner)
	}
	k.Must(t, fmt.Sprintf(`apiVersion: v1
kind: Pod
metadata: %s
spec:
  containers:
    - {name: %s, image: %s, command: [/docker-entrypoint.sh], args: %s}
`, meta, container, img, args), "apply", "-f", "-")
	status := fmt.Sprintf(`{"status":{"phase":"Running","containerStatuses":[{"name":%q,"image":%q,"imageID":%q,"ready":true,"restartCount":0,"started":true,"state":{"running":{"startedAt":"2026-12-01T00:00:00Z"}}}]}}`,
		container, img, imageID)
	k.Must(t, "", "patch", "pod", name, "-n", ns, "--subresource=status", "--type=merge", "-p", status)
}

// runAudit runs `streamfusion audit` with the kubeconfig given; it returns
// the exit status, standard output and standard error.
func runAudit(t testing.TB, bin, dir, kubeconfig string, args ...string) (int, string, string) {
	t.Helper()
	cmd := osexec.Command(bin, append([]string{"audit", "--kubeconfig", kubeconfig, "--job-jar-any-host"}, args...)...)
	cmd.Env = append(os.Environ(), "XDG_CACHE_HOME="+filepath.Join(dir, "cache"))
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if ee, ok := err.(*osexec.ExitError); ok {
		code = ee.ExitCode()
	} else {
		require.NoError(t, err)
	}
	return code, stdout.String(), stderr.String()
}

func decodeAudit(t testing.TB, out string) auditReport {
	t.Helper()
	var r auditReport
	require.NoError(t, json.Unmarshal([]byte(out), &r), out)
	return r
}

// auditRBAC applies the chart's audit ServiceAccount, ClusterRole and
// binding (release sf in namespace streamfusion) and returns a kubeconfig
// with that account's token.
func auditRBAC(t testing.TB, k *kubekit.Kube) string {
	t.Helper()
	helm := kubekit.Tool(t, "STREAMFUSION_HELM", "helm")
	cmd := osexec.Command(helm, "template", "sf", "../../deploy/helm/streamfusion-webhook", "--namespace", "streamfusion", "--set", "audit.enabled=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	rendered, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	var docs []string
	for _, doc := range kubekit.SplitDocs(t, rendered) {
		var h struct {
			Kind     string
			Metadata metav1.ObjectMeta
		}
		require.NoError(t, k8syaml.Unmarshal(doc, &h))
		if h.Metadata.Labels["app.kubernetes.io/component"] == "audit" && h.Kind != "CronJob" {
			docs = append(docs, string(doc))
		}
	}
	require.Len(t, docs, 3, "ServiceAccount, ClusterRole, ClusterRoleBinding")
	k.Must(t, strings.Join(docs, "---\n"), "apply", "-f", "-")
	token := strings.TrimSpace(k.Must(t, "", "create", "token", "sf-audit", "-n", "streamfusion", "--duration=2h"))
	return k.WriteKubeconfig(t, "sf-audit", token)
}

// TestRealAudit: `streamfusion audit` reads a real API server with the
// chart's read-only account and judges what was created before any
// webhook existed, in a namespace a webhook exempts, on a tag that moved
// after the Pods started, a session job whose JAR its cluster's image
// refuses; and its what-if flips an admitted deployment to refused and
// fixes a refused one.
func TestRealAudit(t *testing.T) {
	k := kubekit.Start(t)
	k.InstallOperatorCRDs(t)
	imgs := testImages(t)
	host := serve(t, map[string]v1.Image{"good": imgs.good, "plain": imgs.plain, "moving": imgs.good})
	good, plain, moving := host+"/flink:good", host+"/flink:plain", host+"/flink:moving"
	goodDigest, err := imgs.good.Digest()
	require.NoError(t, err)
	goodID := "docker-pullable://" + host + "/flink@" + goodDigest.String()
	jars := kubekit.NewJARServer(t, kubekit.JobJARs())
	for _, ns := range []string{"flink", "streamfusion", "team"} {
		k.Namespace(t, ns)
	}

	// No webhook is registered: everything below is created as it was
	// before one existed, refused images included.
	k.Must(t, kubekit.FDYAML("flink", "good", good, "v2_2", ""), "apply", "-f", "-")
	k.Must(t, kubekit.FDYAML("flink", "bad", plain, "v2_2", ""), "apply", "-f", "-")
	k.Must(t, kubekit.FDYAML("streamfusion", "exempt", plain, "v2_2", ""), "apply", "-f", "-") // the webhook's own namespace, never sent to it
	k.Must(t, kubekit.FDYAML("flink", "moved", moving, "v2_2", ""), "apply", "-f", "-")
	k.Must(t, kubekit.SessionJobJARYAML("flink", "sj-good", "good", jars.URL+"/good-job.jar"), "apply", "-f", "-")
	k.Must(t, kubekit.SessionJobJARYAML("flink", "sj-jar-bad", "good", jars.URL+"/mismatched-job.jar"), "apply", "-f", "-")
	native := `[bash, -c, kubernetes-%s.sh]`
	for _, c := range []string{"jobmanager", "taskmanager"} {
		labels := "app: good, component: " + c + ", type: flink-native-kubernetes"
		runningPod(t, k, "flink", "good-"+c, labels, "", "flink-main-container", fmt.Sprintf(native, c), good, goodID)
		labels = "app: moved, component: " + c + ", type: flink-native-kubernetes"
		runningPod(t, k, "flink", "moved-"+c, labels, "", "flink-main-container", fmt.Sprintf(native, c), moving, goodID)
	}
	for _, p := range []string{"tm-abc-1", "tm-abc-2"} {
		runningPod(t, k, "team", p, "app: standalone", "tm-abc", "taskmanager", "[taskmanager]", good, goodID)
	}
	// The tag moves after the Pods started: a Pod started now pulls the
	// plain image.
	push(t, moving, imgs.plain)

	kubeconfig := auditRBAC(t, k)
	as := "--as=system:serviceaccount:streamfusion:sf-audit"
	for _, tc := range []struct{ args, want string }{
		{"list flinkdeployments.flink.apache.org --all-namespaces", "yes"},
		{"list flinksessionjobs.flink.apache.org --all-namespaces", "yes"},
		{"list pods --all-namespaces", "yes"},
		{"create flinkdeployments.flink.apache.org -n flink", "no"},
		{"delete pods -n flink", "no"},
		{"get secrets -n flink", "no"},
		{"watch pods --all-namespaces", "no"},
	} {
		out, _ := k.Run("", append(append([]string{"auth", "can-i"}, strings.Fields(tc.args)...), as)...)
		assert.Equal(t, tc.want, strings.TrimSpace(out), "can-i %s", tc.args)
	}

	dir := t.TempDir()
	bin := kubekit.BuildStreamfusion(t, dir)

	t.Run("today", func(t *testing.T) {
		junit := filepath.Join(dir, "audit.xml")
		code, out, stderr := runAudit(t, bin, dir, kubeconfig, "--json", "--junit", junit)
		assert.Equal(t, 78, code, "something would be refused: %s", stderr)
		r := decodeAudit(t, out)
		assert.Empty(t, r.Unread)
		assert.Equal(t, 7, r.Summary.Resources, "4 FlinkDeployments, 2 session jobs, the Pods of one ReplicaSet")

		row := r.row(t, "flink", "FlinkDeployment", "good")
		assert.Equal(t, "admitted", row.Today.Verdict)
		assert.Equal(t, 2, row.Pods)
		assert.Equal(t, []string{host + "/flink@" + goodDigest.String()}, row.Images[0].Running)

		row = r.row(t, "flink", "FlinkDeployment", "bad")
		assert.Equal(t, "refused", row.Today.Verdict)
		assert.Contains(t, row.Today.Message, "FlinkDeployment flink/bad: flink-main-container (kubernetes-jobmanager) image "+plain+": StreamFusion refused")

		row = r.row(t, "streamfusion", "FlinkDeployment", "exempt")
		assert.Equal(t, "refused", row.Today.Verdict, "a namespace the webhook exempts is audited all the same")

		row = r.row(t, "flink", "FlinkDeployment", "moved")
		assert.Equal(t, "refused", row.Today.Verdict)
		require.NotEmpty(t, row.Images)
		assert.True(t, row.Images[0].TagMoved)
		assert.Contains(t, strings.Join(row.Notes, "\n"), "the tag "+moving+" now points to ")
		assert.Contains(t, strings.Join(row.Notes, "\n"), "the Pods run "+host+"/flink@"+goodDigest.String())

		row = r.row(t, "team", "Pods", "ReplicaSet/tm-abc")
		assert.Equal(t, 2, row.Pods)
		assert.Equal(t, "admitted", row.Today.Verdict)

		row = r.row(t, "flink", "FlinkSessionJob", "sj-good")
		assert.Equal(t, "admitted", row.Today.Verdict)
		row = r.row(t, "flink", "FlinkSessionJob", "sj-jar-bad")
		assert.Equal(t, "refused", row.Today.Verdict, "its JAR does not link against its cluster's lib")
		var texts []string
		for _, f := range row.Today.Findings {
			texts = append(texts, f.Text)
		}
		assert.Contains(t, strings.Join(texts, "\n"), testkit.MismatchedJobJARFinding)

		// Two images (good, also under the moved tag's running digest;
		// plain, also under the tag now) verified once each, and each
		// session job's JAR checked once on good.
		assert.Equal(t, int64(2), r.Summary.ImagesVerified)
		assert.Equal(t, int64(2), r.Summary.JobJARsChecked)

		var suites struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
		}
		b, err := os.ReadFile(junit)
		require.NoError(t, err)
		require.NoError(t, xml.Unmarshal(b, &suites))
		assert.Equal(t, 7, suites.Tests)
		assert.Equal(t, 4, suites.Failures) // bad, exempt, moved, sj-jar-bad
	})

	t.Run("a table", func(t *testing.T) {
		code, out, _ := runAudit(t, bin, dir, kubeconfig, "--namespace", "flink")
		assert.Equal(t, 78, code)
		assert.Contains(t, out, "NAMESPACE  RESOURCE")
		assert.Contains(t, out, moving+" (tag moved)")
		assert.NotContains(t, out, "exempt", "--namespace flink only")
	})

	t.Run("a namespace where nothing would be refused", func(t *testing.T) {
		code, out, stderr := runAudit(t, bin, dir, kubeconfig, "--namespace", "team", "--json")
		assert.Equal(t, 0, code, stderr)
		assert.Equal(t, 1, decodeAudit(t, out).Summary.Resources)
	})

	t.Run("what-if: an admitted deployment refused, a refused one fixed", func(t *testing.T) {
		code, out, stderr := runAudit(t, bin, dir, kubeconfig, "--json", "--namespace", "flink",
			"--image-map", good+"="+plain, "--image-map", plain+"="+good)
		assert.Equal(t, 78, code, stderr)
		r := decodeAudit(t, out)
		row := r.row(t, "flink", "FlinkDeployment", "good")
		assert.Equal(t, "admitted", row.Today.Verdict)
		assert.Equal(t, "refused", row.After.Verdict)
		require.NotEmpty(t, row.New, "the findings that flip")
		assert.Empty(t, row.Fixed)
		assert.Equal(t, plain, row.Images[0].After)
		row = r.row(t, "flink", "FlinkDeployment", "bad")
		assert.Equal(t, "refused", row.Today.Verdict)
		assert.Equal(t, "admitted", row.After.Verdict)
		require.NotEmpty(t, row.Fixed)
		assert.Empty(t, row.New)
		row = r.row(t, "flink", "FlinkSessionJob", "sj-good")
		assert.Equal(t, "refused", row.After.Verdict, "a session job follows its cluster")
	})

	t.Run("what-if: fixing the refused ones passes", func(t *testing.T) {
		mapFile := filepath.Join(dir, "map.txt")
		require.NoError(t, os.WriteFile(mapFile, []byte("# the fix\n"+host+"/flink:plain="+good+"\n"+host+"/flink:moving="+good+"\n"), 0o600))
		code, out, stderr := runAudit(t, bin, dir, kubeconfig, "--json", "--namespace", "streamfusion", "--image-map-file", mapFile)
		assert.Equal(t, 0, code, "%s\n%s", out, stderr)
		row := decodeAudit(t, out).row(t, "streamfusion", "FlinkDeployment", "exempt")
		assert.Equal(t, "refused", row.Today.Verdict)
		assert.Equal(t, "admitted", row.After.Verdict)
	})

	t.Run("an account that may read nothing: incomplete, and says what", func(t *testing.T) {
		k.Must(t, "", "create", "serviceaccount", "nobody", "-n", "team")
		token := strings.TrimSpace(k.Must(t, "", "create", "token", "nobody", "-n", "team", "--duration=1h"))
		code, out, _ := runAudit(t, bin, dir, k.WriteKubeconfig(t, "nobody", token))
		assert.Equal(t, 75, code)
		assert.Contains(t, out, "NOT READ: list flinkdeployments.flink.apache.org in all namespaces:")
		assert.Contains(t, out, "forbidden")
		assert.Contains(t, out, "NOT READ: list pods in all namespaces:")
	})
}

// BenchmarkRealAudit measures `streamfusion audit` of 200 FlinkDeployments
// over 20 distinct images (10 each, in 4 namespaces), each with a
// JobManager and a TaskManager Pod whose status names the digest it runs
// (400 Pods), on the real API server, with the chart's read-only account.
// The 20 images differ in their config (a label): with the layer-facts
// cache they share every layer; with STREAMFUSION_NO_CACHE=1 each is read
// whole. Each run is a new process (no verdict kept); the cache directory
// is emptied before the cold runs. Run with -benchtime 1x (make
// bench-audit): the runs below are the benchmark's own.
func BenchmarkRealAudit(b *testing.B) {
	k := kubekit.Start(b)
	k.InstallOperatorCRDs(b)
	imgs := testImages(b)
	host := serve(b, map[string]v1.Image{"good": imgs.good})
	const images, perImage = 20, 10
	namespaces := []string{"a", "b", "c", "d"}
	for _, ns := range append(namespaces, "streamfusion") {
		k.Namespace(b, ns)
	}
	ctx := context.Background()
	var refs []string
	for i := range images {
		img, err := imagekit.WithEnv(imgs.good, fmt.Sprint("BENCH_COLD=", i, time.Now().UnixNano()))
		require.NoError(b, err)
		d, err := img.Digest()
		require.NoError(b, err)
		ref, err := name.ParseReference(fmt.Sprintf("%s/flink:audit-%d", host, i))
		require.NoError(b, err)
		require.NoError(b, remote.Write(ref, img))
		refs = append(refs, ref.String()+"|docker-pullable://"+host+"/flink@"+d.String())
	}
	pods := k.Dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "pods"})
	begin := time.Now()
	for n := range images * perImage {
		img, imageID, _ := strings.Cut(refs[n%images], "|")
		ns, fdName := namespaces[n%len(namespaces)], fmt.Sprintf("fd-%03d", n)
		_, err := k.Dyn.Resource(judge.FlinkDeployments).Namespace(ns).Create(ctx, kubekit.Object(b, kubekit.FDYAML(ns, fdName, img, "v2_2", "")), metav1.CreateOptions{})
		require.NoError(b, err)
		for _, c := range []string{"jobmanager", "taskmanager"} {
			pod := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod",
				"metadata": map[string]any{"name": fdName + "-" + c, "namespace": ns,
					"labels": map[string]any{"app": fdName, "component": c, "type": "flink-native-kubernetes"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "flink-main-container", "image": img,
					"command": []any{"/docker-entrypoint.sh"}, "args": []any{"bash", "-c", "kubernetes-" + c + ".sh"}}}}}}
			created, err := pods.Namespace(ns).Create(ctx, pod, metav1.CreateOptions{})
			require.NoError(b, err)
			require.NoError(b, unstructured.SetNestedSlice(created.Object, []any{map[string]any{"name": "flink-main-container", "image": img,
				"imageID": imageID, "ready": true, "restartCount": int64(0), "started": true,
				"state": map[string]any{"running": map[string]any{"startedAt": "2026-12-01T00:00:00Z"}}}}, "status", "containerStatuses"))
			_, err = pods.Namespace(ns).UpdateStatus(ctx, created, metav1.UpdateOptions{})
			require.NoError(b, err)
		}
	}
	b.Logf("created %d FlinkDeployments and %d Pods in %s", images*perImage, 2*images*perImage, time.Since(begin).Round(time.Millisecond))
	kubeconfig := auditRBAC(b, k)
	dir := b.TempDir()
	bin := kubekit.BuildStreamfusion(b, dir)
	cache := filepath.Join(dir, "cache")

	run := func(label string, env []string, args ...string) {
		cmd := osexec.Command(bin, append([]string{"audit", "--kubeconfig", kubeconfig, "--json"}, args...)...)
		cmd.Env = append(append(os.Environ(), "XDG_CACHE_HOME="+cache), env...)
		var stdout, stderr bytes.Buffer
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		start := time.Now()
		err := cmd.Run()
		took := time.Since(start)
		require.NoError(b, err, "%s\n%s", stdout.String(), stderr.String())
		r := decodeAudit(b, stdout.String())
		require.Equal(b, images*perImage, r.Summary.Resources)
		require.Zero(b, r.Summary.RefusedToday)
		require.Equal(b, int64(images), r.Summary.ImagesVerified, "each image verified once")
		b.Logf("%s: %d resources over %d images in %s (%d images verified)", label, r.Summary.Resources, images, took.Round(time.Millisecond), r.Summary.ImagesVerified)
		b.ReportMetric(took.Seconds(), strings.NewReplacer(" ", "-", ",", "", "=", "").Replace(label)+"-s")
	}
	require.NoError(b, os.RemoveAll(cache))
	run("no layer cache, concurrency 4", []string{"STREAMFUSION_NO_CACHE=1"})
	run("no layer cache, concurrency 1", []string{"STREAMFUSION_NO_CACHE=1"}, "--concurrency", "1")
	run("layer cache empty, concurrency 4", nil)
	run("layer cache warm, concurrency 4", nil)
	for range b.N {
		_ = b.N
	}
}
