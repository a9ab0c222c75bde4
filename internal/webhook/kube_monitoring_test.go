//go:build k8sreal

package webhook

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// monitoringCRDs is the directory of prometheus-operator's CRDs
// (scripts/fetch-prometheus-operator-crds, which make test-k8s runs):
// outside CI a missing one skips, in CI it fails.
func monitoringCRDs(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("STREAMFUSION_PROMETHEUS_OPERATOR_CRDS")
	msg := "STREAMFUSION_PROMETHEUS_OPERATOR_CRDS is not set (make test-k8s sets it from scripts/fetch-prometheus-operator-crds)"
	if dir != "" {
		_, err := os.Stat(filepath.Join(dir, "monitoring.coreos.com_prometheusrules.yaml"))
		if err == nil {
			return dir
		}
		msg = fmt.Sprintf("prometheus-operator's CRDs: %v (scripts/fetch-prometheus-operator-crds fetches them)", err)
	}
	if os.Getenv("CI") == "true" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// installMonitoringCRDs applies the ServiceMonitor and PrometheusRule CRDs
// and waits until the API server serves them.
func (k *kube) installMonitoringCRDs(t testing.TB, dir string) {
	t.Helper()
	var crds []string
	for _, kind := range []string{"servicemonitors", "prometheusrules"} {
		b, err := os.ReadFile(filepath.Join(dir, "monitoring.coreos.com_"+kind+".yaml"))
		require.NoError(t, err)
		crds = append(crds, string(b))
	}
	k.Must(t, strings.Join(crds, "\n---\n"), "apply", "--server-side", "-f", "-")
	kubekit.Eventually(t, "prometheus-operator's CRDs established", func() error {
		out, err := k.Run("", "wait", "--for", "condition=established", "--timeout=10s",
			"crd/servicemonitors.monitoring.coreos.com", "crd/prometheusrules.monitoring.coreos.com")
		if err != nil {
			return fmt.Errorf("%v: %s", err, out)
		}
		return nil
	})
}

// object is a rendered manifest as plain maps, to damage.
type object = map[string]any

func objectOf(t testing.TB, doc []byte) object {
	t.Helper()
	var o object
	require.NoError(t, k8syaml.Unmarshal(doc, &o))
	return o
}

// at walks maps and lists: a string is a key, an int an index.
func at(t testing.TB, o any, path ...any) any {
	t.Helper()
	for _, p := range path {
		switch p := p.(type) {
		case string:
			m, ok := o.(map[string]any)
			require.True(t, ok, "%v is no map", p)
			o = m[p]
		case int:
			l, ok := o.([]any)
			require.True(t, ok && p < len(l), "no item %d", p)
			o = l[p]
		}
	}
	return o
}

func jsonOf(t testing.TB, o object) string {
	t.Helper()
	b, err := json.Marshal(o)
	require.NoError(t, err)
	return string(b)
}

func renamed(t testing.TB, o object, name string) object {
	t.Helper()
	b, err := json.Marshal(o)
	require.NoError(t, err)
	var c object
	require.NoError(t, json.Unmarshal(b, &c))
	c["metadata"].(map[string]any)["name"] = name
	return c
}

// TestRealMonitoring: the chart's metrics Service, ServiceMonitor and
// PrometheusRule against a real API server with prometheus-operator's CRDs:
// accepted and stored as rendered; copies with schema mistakes rejected by
// the server; and a PrometheusRule whose expression does not parse accepted
// by the server and rejected by checkRules: the CRD checks the shape, not
// PromQL or templates (TestPrometheusRuleChecks covers those).
func TestRealMonitoring(t *testing.T) {
	crds := monitoringCRDs(t)
	helm := kubekit.Tool(t, "STREAMFUSION_HELM", "helm")
	k := startKube(t)
	k.installMonitoringCRDs(t, crds)
	const ns = "sf-monitoring"
	k.Namespace(t, ns)

	docs := chartDocs(t, helm, ns, monitoringValues...)
	require.Len(t, docs["ServiceMonitor"], 1)
	require.Len(t, docs["PrometheusRule"], 1)
	var metricsService object
	for _, d := range docs["Service"] {
		if o := objectOf(t, d); at(t, o, "metadata", "name") == "sf-metrics" {
			metricsService = o
		}
	}
	require.NotNil(t, metricsService, "the chart's metrics Service")
	monitor, rule := objectOf(t, docs["ServiceMonitor"][0]), objectOf(t, docs["PrometheusRule"][0])

	t.Run("the chart's objects are accepted as rendered", func(t *testing.T) {
		out := k.Must(t, jsonOf(t, metricsService)+"\n"+jsonOf(t, monitor)+"\n"+jsonOf(t, rule), "apply", "--server-side", "-f", "-")
		for _, want := range []string{"service/sf-metrics", "servicemonitor.monitoring.coreos.com/sf", "prometheusrule.monitoring.coreos.com/sf"} {
			assert.Contains(t, out, want+" serverside-applied")
		}
		// Stored as rendered: nothing pruned or defaulted away.
		for _, tc := range []struct {
			kind     string
			rendered object
		}{{"servicemonitor", monitor}, {"prometheusrule", rule}} {
			stored := objectOf(t, []byte(k.Must(t, "", "get", tc.kind, "sf", "-n", ns, "-o", "json")))
			assert.Equal(t, tc.rendered["spec"], stored["spec"], "%s as stored", tc.kind)
		}
		stored := k.Must(t, "", "get", "prometheusrule", "sf", "-n", ns, "-o", "json")
		assert.Equal(t, 8, checkRules(t, ruleFileOf(t, []byte(stored))), "the stored rules pass checkRules")
	})

	// Each copy has one mistake the CRD's schema (or the strict field
	// validation kubectl asks for) catches.
	for i, tc := range []struct {
		name   string
		base   object
		damage func(t *testing.T, o object)
		// What the server answers a create and, where it differs (its
		// typed patch fails before validation), a server-side apply.
		want, applyWant string
	}{
		{"PrometheusRule: for is not a duration", rule, func(t *testing.T, o object) {
			at(t, o, "spec", "groups", 0, "rules", 0).(map[string]any)["for"] = "5 minutes"
		}, `spec.groups[0].rules[0].for: Invalid value: "5 minutes"`, ""},
		{"PrometheusRule: a rule without expr", rule, func(t *testing.T, o object) {
			delete(at(t, o, "spec", "groups", 0, "rules", 2).(map[string]any), "expr")
		}, "spec.groups[0].rules[2].expr: Required value", ""},
		{"PrometheusRule: a group without a name", rule, func(t *testing.T, o object) {
			delete(at(t, o, "spec", "groups", 0).(map[string]any), "name")
		}, "spec.groups[0].name: Required value", `.spec.groups: element 0: associative list with keys has an element that omits all key fields ["name"]`},
		{"PrometheusRule: two groups of one name", rule, func(_ *testing.T, o object) {
			spec := o["spec"].(map[string]any)
			spec["groups"] = append(spec["groups"].([]any), map[string]any{"name": "streamfusion-webhook",
				"rules": []any{map[string]any{"alert": "Other", "expr": "vector(1)"}}})
		}, `spec.groups[1]: Duplicate value: {"name":"streamfusion-webhook"}`, `.spec.groups: duplicate entries for key [name="streamfusion-webhook"]`},
		{"PrometheusRule: a label value that is no string", rule, func(t *testing.T, o object) {
			at(t, o, "spec", "groups", 0, "rules", 0, "labels").(map[string]any)["severity"] = 1
		}, "spec.groups[0].rules[0].labels.severity in body must be of type string", `.rules[0].labels.severity: expected string`},
		{"PrometheusRule: an unknown field in a rule", rule, func(t *testing.T, o object) {
			r := at(t, o, "spec", "groups", 0, "rules", 0).(map[string]any)
			r["annotation"] = r["annotations"]
			delete(r, "annotations")
		}, `strict decoding error: unknown field "spec.groups[0].rules[0].annotation"`, `.rules[0].annotation: field not declared in schema`},
		{"ServiceMonitor: interval is not a duration", monitor, func(t *testing.T, o object) {
			at(t, o, "spec", "endpoints", 0).(map[string]any)["interval"] = "30 seconds"
		}, `spec.endpoints[0].interval: Invalid value: "30 seconds"`, ""},
		{"ServiceMonitor: an unknown scheme", monitor, func(t *testing.T, o object) {
			at(t, o, "spec", "endpoints", 0).(map[string]any)["scheme"] = "ftp"
		}, `spec.endpoints[0].scheme: Unsupported value: "ftp"`, ""},
		{"ServiceMonitor: no selector", monitor, func(_ *testing.T, o object) {
			delete(o["spec"].(map[string]any), "selector")
		}, "spec.selector: Required value", ""},
		{"ServiceMonitor: the port as a number", monitor, func(t *testing.T, o object) {
			at(t, o, "spec", "endpoints", 0).(map[string]any)["port"] = 9090
		}, "spec.endpoints[0].port in body must be of type string", ".spec.endpoints[0].port: expected string"},
	} {
		t.Run("rejected: "+tc.name, func(t *testing.T) {
			name := fmt.Sprintf("sf-bad-%d", i)
			o := renamed(t, tc.base, name)
			tc.damage(t, o)
			// As helm install sends it (a create) and as kubectl apply
			// --server-side does.
			for _, args := range [][]string{{"create", "-f", "-"}, {"apply", "--server-side", "-f", "-"}} {
				out, err := k.Run(jsonOf(t, o), args...)
				require.Error(t, err, "kubectl %s accepted:\n%s", args[0], out)
				want := tc.want
				if args[0] == "apply" && tc.applyWant != "" {
					want = tc.applyWant
				}
				assert.Contains(t, out, want, "kubectl %s", args[0])
				t.Logf("kubectl %s rejected: %s", args[0], strings.TrimSpace(out))
			}
			kind := strings.ToLower(tc.base["kind"].(string))
			out, err := k.Run("", "get", kind, name, "-n", ns)
			require.Error(t, err, "stored:\n%s", out)
			assert.Contains(t, out, "NotFound")
		})
	}

	t.Run("an expression that does not parse: accepted by the server, rejected by checkRules", func(t *testing.T) {
		o := renamed(t, rule, "sf-unparsable")
		at(t, o, "spec", "groups", 0, "rules", 0).(map[string]any)["expr"] = "sum(up"
		out := k.Must(t, jsonOf(t, o), "apply", "--server-side", "-f", "-")
		assert.Contains(t, out, "prometheusrule.monitoring.coreos.com/sf-unparsable serverside-applied")
		stored := k.Must(t, "", "get", "prometheusrule", "sf-unparsable", "-n", ns, "-o", "json")
		_, errs := ruleFileErrors(ruleFileOf(t, []byte(stored)))
		require.NotEmpty(t, errs, "checkRules accepted sum(up")
		assert.Contains(t, errs[0].Error(), "could not parse expression")
		t.Logf("rejected by checkRules: %v", errs[0])
	})
}
