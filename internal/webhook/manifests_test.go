package webhook

import (
	"bytes"
	"os"
	osexec "os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/image"
	"github.com/streamfusion/image-entrypoint/internal/jobjar"
	"github.com/streamfusion/image-entrypoint/internal/spool"
	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// manifests are the objects of deploy/webhook (or of the chart, rendered).
type manifests struct {
	webhook    *admissionregistrationv1.ValidatingWebhookConfiguration
	service    *corev1.Service
	deployment *appsv1.Deployment
	account    string
	cert       map[string]any // the cert-manager Certificate (no Go types here)
	pdb        *policyv1.PodDisruptionBudget
	role       *rbacv1.ClusterRole
	binding    *rbacv1.ClusterRoleBinding
	// Present with the chart's metrics.serviceMonitor and
	// metrics.prometheusRule (prometheus-operator's kinds: no Go types
	// here).
	metricsService *corev1.Service
	monitor        map[string]any
	rules          map[string]any
}

func readManifests(t *testing.T, data []byte) manifests {
	t.Helper()
	var m manifests
	for _, doc := range kubekit.SplitDocs(t, data) {
		var h struct{ Kind string }
		require.NoError(t, k8syaml.Unmarshal(doc, &h))
		switch h.Kind {
		case "ValidatingWebhookConfiguration":
			m.webhook = &admissionregistrationv1.ValidatingWebhookConfiguration{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, m.webhook))
		case "Service":
			svc := &corev1.Service{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, svc))
			if strings.HasSuffix(svc.Name, "-metrics") {
				m.metricsService = svc
			} else {
				m.service = svc
			}
		case "ServiceMonitor":
			require.NoError(t, k8syaml.Unmarshal(doc, &m.monitor))
		case "PrometheusRule":
			require.NoError(t, k8syaml.Unmarshal(doc, &m.rules))
		case "Deployment":
			m.deployment = &appsv1.Deployment{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, m.deployment))
		case "ServiceAccount":
			var sa corev1.ServiceAccount
			require.NoError(t, k8syaml.UnmarshalStrict(doc, &sa))
			m.account = sa.Name
		case "Certificate":
			require.NoError(t, k8syaml.Unmarshal(doc, &m.cert))
		case "PodDisruptionBudget":
			m.pdb = &policyv1.PodDisruptionBudget{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, m.pdb))
		case "ClusterRole":
			m.role = &rbacv1.ClusterRole{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, m.role))
		case "ClusterRoleBinding":
			m.binding = &rbacv1.ClusterRoleBinding{}
			require.NoError(t, k8syaml.UnmarshalStrict(doc, m.binding))
		}
	}
	require.NotNil(t, m.webhook, "a ValidatingWebhookConfiguration")
	require.NotNil(t, m.service, "a Service")
	require.NotNil(t, m.deployment, "a Deployment")
	require.NotNil(t, m.cert, "a Certificate")
	require.NotNil(t, m.pdb, "a PodDisruptionBudget")
	require.NotNil(t, m.role, "a ClusterRole")
	require.NotNil(t, m.binding, "a ClusterRoleBinding")
	return m
}

// check says that the pieces fit: the webhook calls the Service at
// /validate, the Service reaches the container's port, the server's flags
// match the configuration, and the certificate is the one mounted.
func (m manifests) check(t *testing.T) {
	t.Helper()
	c := m.deployment.Spec.Template.Spec.Containers[0]
	flags := map[string]string{}
	for _, a := range c.Args[1:] {
		k, v, _ := strings.Cut(strings.TrimPrefix(a, "--"), "=")
		flags[k] = v
	}
	assert.Equal(t, "webhook", c.Args[0])
	ports := map[string]int32{}
	for _, p := range c.Ports {
		ports[p.Name] = p.ContainerPort
	}
	require.Len(t, ports, 2)
	assert.Equal(t, ":"+itoa(ports["https"]), flags["listen"])
	assert.Equal(t, ":"+itoa(ports["metrics"]), flags["metrics-listen"])
	svc := m.service
	require.Len(t, svc.Spec.Ports, 1)
	assert.Equal(t, "https", svc.Spec.Ports[0].TargetPort.String(), "the Service targets the container's port")
	m.checkBudget(t, flags)
	for k, v := range svc.Spec.Selector {
		assert.Equal(t, v, m.deployment.Spec.Template.Labels[k], "the Service selects the webhook's pods")
	}
	assert.Equal(t, m.account, m.deployment.Spec.Template.Spec.ServiceAccountName)
	timeout, err := time.ParseDuration(flags["timeout"])
	require.NoError(t, err)

	var resources []string
	for _, w := range m.webhook.Webhooks {
		ref := w.ClientConfig.Service
		require.NotNil(t, ref, w.Name)
		assert.Equal(t, svc.Name, ref.Name, w.Name)
		assert.Equal(t, svc.Namespace, ref.Namespace, w.Name)
		require.NotNil(t, ref.Path)
		assert.Equal(t, "/validate", *ref.Path)
		require.NotNil(t, ref.Port)
		assert.Equal(t, svc.Spec.Ports[0].Port, *ref.Port)
		assert.Equal(t, []string{"v1"}, w.AdmissionReviewVersions)
		require.NotNil(t, w.SideEffects)
		assert.Equal(t, admissionregistrationv1.SideEffectClassNone, *w.SideEffects)
		require.NotNil(t, w.FailurePolicy)
		assert.Equal(t, string(*w.FailurePolicy), flags["failure-policy"], "the server answers in the direction the API server would")
		require.NotNil(t, w.TimeoutSeconds)
		assert.Less(t, timeout, time.Duration(*w.TimeoutSeconds)*time.Second, "the server answers before the API server gives up")
		require.NotNil(t, w.NamespaceSelector)
		excluded := false
		for _, e := range w.NamespaceSelector.MatchExpressions {
			excluded = excluded || e.Key == "kubernetes.io/metadata.name" && e.Operator == "NotIn" && slices.Contains(e.Values, svc.Namespace)
		}
		assert.True(t, excluded, "%s: the webhook's own namespace is never sent to it", w.Name)
		for _, r := range w.Rules {
			resources = append(resources, r.Resources...)
		}
	}
	assert.ElementsMatch(t, []string{"flinkdeployments", "flinksessionjobs", "pods"}, resources)

	spec, _ := m.cert["spec"].(map[string]any)
	meta, _ := m.cert["metadata"].(map[string]any)
	assert.Equal(t, svc.Namespace+"/"+meta["name"].(string), m.webhook.Annotations["cert-manager.io/inject-ca-from"])
	assert.Contains(t, spec["dnsNames"], svc.Name+"."+svc.Namespace+".svc", "the certificate names the Service")
	var tlsSecret string
	for _, v := range m.deployment.Spec.Template.Spec.Volumes {
		if v.Secret != nil {
			tlsSecret = v.Secret.SecretName
		}
	}
	assert.Equal(t, spec["secretName"], tlsSecret, "the Deployment mounts the certificate's Secret")
	var mounted bool
	for _, vm := range c.VolumeMounts {
		mounted = mounted || strings.HasPrefix(flags["tls-cert"], vm.MountPath+"/")
	}
	assert.True(t, mounted, "--tls-cert is below a mount")
	m.checkAvailability(t)
}

// checkAvailability: the PDB and the spread select the webhook's pods, the
// readiness probe is /readyz, and the ServiceAccount may read
// FlinkDeployments and nothing else (the k8sreal suite asks a real API
// server the same).
func (m manifests) checkAvailability(t *testing.T) {
	t.Helper()
	pod := m.deployment.Spec.Template
	selects := func(sel *metav1.LabelSelector) bool {
		s, err := metav1.LabelSelectorAsSelector(sel)
		require.NoError(t, err)
		return !s.Empty() && s.Matches(labels.Set(pod.Labels))
	}
	require.NotNil(t, m.pdb.Spec.MinAvailable)
	assert.Equal(t, "1", m.pdb.Spec.MinAvailable.String())
	assert.True(t, selects(m.pdb.Spec.Selector), "the PDB selects the webhook's pods")
	assert.Equal(t, m.deployment.Namespace, m.pdb.Namespace)
	assert.GreaterOrEqual(t, *m.deployment.Spec.Replicas, int32(2), "a replica stays while one is evicted")
	var byNode bool
	for _, c := range pod.Spec.TopologySpreadConstraints {
		byNode = byNode || c.TopologyKey == "kubernetes.io/hostname" && c.WhenUnsatisfiable == corev1.DoNotSchedule && selects(c.LabelSelector)
	}
	assert.True(t, byNode, "replicas are spread across nodes")
	c := pod.Spec.Containers[0]
	require.NotNil(t, c.ReadinessProbe)
	require.NotNil(t, c.ReadinessProbe.HTTPGet)
	assert.Equal(t, "/readyz", c.ReadinessProbe.HTTPGet.Path)
	require.NotNil(t, c.LivenessProbe)
	assert.Equal(t, "/healthz", c.LivenessProbe.HTTPGet.Path, "liveness does not restart a pod for its certificate")
	require.NotNil(t, pod.Spec.AutomountServiceAccountToken)
	assert.True(t, *pod.Spec.AutomountServiceAccountToken, "the token reads FlinkDeployments")
	assert.Equal(t, []rbacv1.PolicyRule{{APIGroups: []string{"flink.apache.org"}, Resources: []string{"flinkdeployments"},
		Verbs: []string{"get", "list", "watch"}}}, m.role.Rules)
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: m.role.Name}, m.binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: m.account, Namespace: m.deployment.Namespace}}, m.binding.Subjects)
}

func itoa(n int32) string { return strconv.Itoa(int(n)) }

// checkBudget: /tmp's emptyDir holds the spool budget with room to spare
// (at least a quarter more), and the kept images' copies, which the
// budget counts, leave reviews room in it.
func (m manifests) checkBudget(t *testing.T, flags map[string]string) {
	t.Helper()
	budget, err := resource.ParseQuantity(flags["spool-budget"])
	require.NoError(t, err, "--spool-budget")
	kept, err := resource.ParseQuantity(flags["kept-images-size"])
	require.NoError(t, err, "--kept-images-size")
	var limit *resource.Quantity
	for _, v := range m.deployment.Spec.Template.Spec.Volumes {
		if v.Name == "tmp" {
			require.NotNil(t, v.EmptyDir)
			limit = v.EmptyDir.SizeLimit
		}
	}
	require.NotNil(t, limit, "/tmp has a sizeLimit")
	assert.GreaterOrEqual(t, limit.Value(), budget.Value()+budget.Value()/4, "sizeLimit %s, --spool-budget %s", limit, flags["spool-budget"])
	assert.Less(t, kept.Value(), budget.Value(), "--kept-images-size below --spool-budget")
}

// checkMonitoring: the metrics Service reaches the container's metrics
// port, the ServiceMonitor selects it by its port's name, every metric a
// rule reads is one the server's real registry gathers, every `for` is a
// Prometheus duration, and the rules, as a rule file, pass checkRules
// (what `promtool check rules` runs).
func (m manifests) checkMonitoring(t *testing.T) {
	t.Helper()
	require.NotNil(t, m.metricsService, "a metrics Service")
	require.NotNil(t, m.monitor, "a ServiceMonitor")
	require.NotNil(t, m.rules, "a PrometheusRule")
	require.Len(t, m.metricsService.Spec.Ports, 1)
	assert.Equal(t, "metrics", m.metricsService.Spec.Ports[0].TargetPort.String())
	pod := m.deployment.Spec.Template
	for k, v := range m.metricsService.Spec.Selector {
		assert.Equal(t, v, pod.Labels[k], "the metrics Service selects the webhook's pods")
	}
	spec, _ := m.monitor["spec"].(map[string]any)
	sel, _ := spec["selector"].(map[string]any)
	match, _ := sel["matchLabels"].(map[string]any)
	require.NotEmpty(t, match)
	for k, v := range match {
		assert.Equal(t, v, m.metricsService.Labels[k], "the ServiceMonitor selects the metrics Service")
	}
	_, selectsWebhookService := m.service.Labels["app.kubernetes.io/component"]
	assert.False(t, selectsWebhookService, "the ServiceMonitor does not scrape the HTTPS Service")
	endpoints, _ := spec["endpoints"].([]any)
	require.Len(t, endpoints, 1)
	assert.Equal(t, "metrics", endpoints[0].(map[string]any)["port"])

	groups, err := yaml.Marshal(m.rules["spec"])
	require.NoError(t, err)
	assert.Equal(t, 8, checkRules(t, groups), "the chart's alerts")
	var alerts []string
	var doc struct {
		Groups []struct {
			Rules []struct{ Alert, Expr, For string }
		}
	}
	require.NoError(t, yaml.Unmarshal(groups, &doc))
	exposed := exposedMetrics(t)
	for _, g := range doc.Groups {
		for _, r := range g.Rules {
			alerts = append(alerts, r.Alert)
			assert.Contains(t, r.Expr, `job="`+m.metricsService.Name+`"`, "%s: the rule reads this release's metrics", r.Alert)
			_, err := model.ParseDuration(r.For)
			assert.NoError(t, err, "%s: for: %q", r.Alert, r.For)
			for _, name := range metricName.FindAllString(r.Expr, -1) {
				assert.True(t, exposed[name], "%s: %s is not a metric the server exposes", r.Alert, name)
			}
		}
	}
	assert.Subset(t, alerts, []string{"StreamFusionWebhookDown", "StreamFusionWebhookFailurePolicyDecisions", "StreamFusionWebhookSlowReviews",
		"StreamFusionWebhookRegistryErrors", "StreamFusionWebhookSpoolBudgetFull", "StreamFusionWebhookCertificateExpiresSoon"})
}

// metricName finds this server's metric names in a PromQL expression.
var metricName = regexp.MustCompile(`streamfusion_webhook_[a-z0-9_]+`)

// exposedMetrics are the names a webhook's real metrics registry gathers
// with every source watched (a histogram's series included).
func exposedMetrics(t *testing.T) map[string]bool {
	t.Helper()
	m := NewMetrics()
	p := newPKI(t, t.TempDir(), "metrics")
	p.write(t, time.Now())
	certs, err := NewCertReloader(p.certFile, p.keyFile)
	require.NoError(t, err)
	jobs, err := jobjar.New(jobjar.Options{})
	require.NoError(t, err)
	m.Watch(Sources{Cache: verdict.New(verdict.Options{}), Budget: spool.New(1, "x"), Views: image.NewViews(1, 1), Jobs: jobs, Certs: certs,
		RegistryMax: 1, ReviewReads: 1, FailurePolicy: Fail})
	// Series with labels appear once used.
	m.reviews.WithLabelValues("Pod", "CREATE", VerdictAllowed).Inc()
	m.duration.WithLabelValues("Pod").Observe(1)
	m.badRequests.WithLabelValues("400").Inc()
	m.imageFailures.WithLabelValues(causeDeadline).Inc()
	m.regRequests.WithLabelValues("blob").Inc()
	m.regErrors.WithLabelValues("timeout").Inc()
	mfs, err := m.Registry.Gather()
	require.NoError(t, err)
	names := map[string]bool{}
	for _, mf := range mfs {
		names[mf.GetName()] = true
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			for _, sfx := range []string{"_bucket", "_sum", "_count"} {
				names[mf.GetName()+sfx] = true
			}
		}
	}
	return names
}

func TestDeployManifests(t *testing.T) {
	var all []byte
	files, err := filepath.Glob("../../deploy/webhook/*.yaml")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		b, err := os.ReadFile(f)
		require.NoError(t, err)
		all = append(append(all, b...), []byte("\n---\n")...)
	}
	readManifests(t, all).check(t)
}

func TestExampleFlinkDeployment(t *testing.T) {
	rs, err := deploy.ParsePath("../../deploy/examples/flinkdeployment.yaml", nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "v2_2", rs[0].FlinkVersion)
	require.Len(t, rs[0].Containers, 2)
	for _, c := range rs[0].Containers {
		assert.Contains(t, c.Image, "streamfusion")
		assert.Equal(t, []string{"regcred"}, c.PullSecrets)
	}
}

// TestHelmChart renders the chart with the real helm and checks the
// result as the plain manifests are checked. Outside CI a missing helm
// skips; in CI (.ci/run installs it) it fails.
func TestHelmChart(t *testing.T) {
	helm, err := osexec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm is not on PATH (.ci/run installs it)")
		}
		t.Skip("helm is not on PATH")
	}
	chart := "../../deploy/helm/streamfusion-webhook"
	out, err := osexec.Command(helm, "lint", "--strict", chart).CombinedOutput()
	require.NoError(t, err, "%s", out)
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"pull secrets, Ignore, 15s, a priority class", []string{"--set", "webhook.pullSecrets={regcred,other}", "--set", "webhook.failurePolicy=Ignore", "--set", "webhook.timeoutSeconds=15",
			"--set", "priorityClassName=system-cluster-critical"}},
		{"a ServiceMonitor and a PrometheusRule, a larger budget", []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true",
			"--set", "webhook.spoolBudgetMiB=4096"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"template", "sf", chart, "--namespace", "streamfusion"}, tc.args...)
			cmd := osexec.Command(helm, args...)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			require.NoError(t, err, stderr.String())
			m := readManifests(t, out)
			m.check(t)
			assert.Equal(t, "sf", m.service.Name)
			var paths []string
			for _, v := range m.deployment.Spec.Template.Spec.Volumes {
				if v.Projected != nil {
					for _, src := range v.Projected.Sources {
						for _, it := range src.Secret.Items {
							paths = append(paths, it.Path)
						}
					}
				}
			}
			if strings.Contains(tc.name, "ServiceMonitor") {
				m.checkMonitoring(t)
				assert.Contains(t, m.deployment.Spec.Template.Spec.Containers[0].Args, "--spool-budget=4096Mi")
				return
			}
			assert.Nil(t, m.monitor, "no ServiceMonitor unless asked")
			assert.Nil(t, m.rules, "no PrometheusRule unless asked")
			if tc.args != nil {
				assert.Equal(t, []string{"regcred/.dockerconfigjson", "other/.dockerconfigjson"}, paths, "each pull secret in its own directory")
				assert.Equal(t, "system-cluster-critical", m.deployment.Spec.Template.Spec.PriorityClassName)
			} else {
				assert.Empty(t, paths)
				assert.Empty(t, m.deployment.Spec.Template.Spec.PriorityClassName)
			}
		})
	}
}

// TestHelmChartAudit renders the chart's optional audit CronJob: off by
// default; on, a read-only ServiceAccount of its own runs
// `streamfusion audit --json` once per schedule, the what-if and the
// records claim as the values say. The k8sreal suite applies it to a
// real API server (server-side dry run), and internal/audit's
// TestRealAudit runs the audit with its ClusterRole.
func TestHelmChartAudit(t *testing.T) {
	helm, err := osexec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm is not on PATH (.ci/run installs it)")
		}
		t.Skip("helm is not on PATH")
	}
	chart := "../../deploy/helm/streamfusion-webhook"
	render := func(args ...string) (audit map[string][]byte, rest []byte) {
		cmd := osexec.Command(helm, append([]string{"template", "sf", chart, "--namespace", "streamfusion"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		require.NoError(t, err, stderr.String())
		audit = map[string][]byte{}
		for _, doc := range kubekit.SplitDocs(t, out) {
			var h struct {
				Kind     string
				Metadata metav1.ObjectMeta
			}
			require.NoError(t, k8syaml.Unmarshal(doc, &h))
			if h.Metadata.Labels["app.kubernetes.io/component"] == "audit" {
				require.NotContains(t, audit, h.Kind)
				audit[h.Kind] = doc
				continue
			}
			rest = append(append(rest, doc...), "\n---\n"...)
		}
		return audit, rest
	}
	off, _ := render()
	assert.Empty(t, off, "no audit unless audit.enabled")

	on, rest := render("--set", "audit.enabled=true", "--set", "audit.namespaces={flink,team}",
		"--set", "audit.imageMap={registry.example/flink=registry.example/flink:2.2.1-sf-0.2.0}", "--set", "audit.recordsClaimName=audit-records",
		"--set", "webhook.pullSecrets={regcred}")
	readManifests(t, rest).check(t) // the webhook's objects are as before
	var cj batchv1.CronJob
	require.NoError(t, k8syaml.UnmarshalStrict(on["CronJob"], &cj))
	var sa corev1.ServiceAccount
	require.NoError(t, k8syaml.UnmarshalStrict(on["ServiceAccount"], &sa))
	var role rbacv1.ClusterRole
	require.NoError(t, k8syaml.UnmarshalStrict(on["ClusterRole"], &role))
	var binding rbacv1.ClusterRoleBinding
	require.NoError(t, k8syaml.UnmarshalStrict(on["ClusterRoleBinding"], &binding))

	assert.Equal(t, []rbacv1.PolicyRule{
		{APIGroups: []string{"flink.apache.org"}, Resources: []string{"flinkdeployments", "flinksessionjobs"}, Verbs: []string{"get", "list"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list"}},
	}, role.Rules, "read-only")
	assert.Equal(t, rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: role.Name}, binding.RoleRef)
	assert.Equal(t, []rbacv1.Subject{{Kind: "ServiceAccount", Name: sa.Name, Namespace: "streamfusion"}}, binding.Subjects)

	assert.Equal(t, batchv1.ForbidConcurrent, cj.Spec.ConcurrencyPolicy)
	job := cj.Spec.JobTemplate.Spec
	require.NotNil(t, job.BackoffLimit)
	assert.Equal(t, int32(0), *job.BackoffLimit, "a refused audit is one failed Job")
	pod := job.Template.Spec
	assert.Equal(t, sa.Name, pod.ServiceAccountName)
	assert.Equal(t, corev1.RestartPolicyNever, pod.RestartPolicy)
	require.Len(t, pod.Containers, 1)
	c := pod.Containers[0]
	assert.Equal(t, []string{"/streamfusion"}, c.Command)
	assert.Equal(t, []string{"audit", "--json"}, c.Args[:2])
	for _, want := range []string{"--namespace=flink", "--namespace=team", "--image-map=registry.example/flink=registry.example/flink:2.2.1-sf-0.2.0",
		"--json-file=/records/audit.json", "--pull-secrets=/etc/streamfusion/pull-secrets"} {
		assert.Contains(t, c.Args, want)
	}
	mounts := map[string]string{}
	for _, m := range c.VolumeMounts {
		mounts[m.Name] = m.MountPath
	}
	assert.Equal(t, "/records", mounts["records"])
	assert.Equal(t, "/tmp", mounts["tmp"])
	for _, v := range pod.Volumes {
		if v.Name == "records" {
			require.NotNil(t, v.PersistentVolumeClaim)
			assert.Equal(t, "audit-records", v.PersistentVolumeClaim.ClaimName)
		}
	}
	require.NotNil(t, c.SecurityContext)
	assert.True(t, *c.SecurityContext.ReadOnlyRootFilesystem)
}
