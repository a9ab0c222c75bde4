package webhook

import (
	"bytes"
	"fmt"
	"log/slog"
	"os"
	osexec "os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/rulefmt"
	"github.com/prometheus/prometheus/promql/parser"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	yaml "go.yaml.in/yaml/v3"
	k8syaml "sigs.k8s.io/yaml"

	"github.com/streamfusion/image-entrypoint/internal/testkit/kubekit"
)

// The chart's PrometheusRule is checked by Prometheus' own rule-file code
// (github.com/prometheus/prometheus/model/rulefmt, a test-only dependency:
// the binaries do not link it), which is what `promtool check rules` runs:
// the YAML strictly (an unknown field fails), group names, `record` or
// `alert`, each `expr` through the PromQL parser (syntax and types), `for`
// and `keep_firing_for` as durations, label and annotation names, and every
// label and annotation value through the alert template parser. Like
// promtool's duplicate-rules lint, a rule whose name and labels another rule
// of the file has fails too. The API server checks the PrometheusRule's
// schema only (TestRealMonitoring): an expression that does not parse passes
// it.

// ruleFileErrors is what `promtool check rules` reports for a rule file
// (data: `groups: [...]`, the spec of a PrometheusRule), with the
// duplicate-rules lint and a second YAML document (which Prometheus
// ignores, with a warning) as errors. It returns the number of rules.
func ruleFileErrors(data []byte) (int, []error) {
	var warnings bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&warnings, &slog.HandlerOptions{Level: slog.LevelWarn}))
	groups, errs := rulefmt.Parse(data, false, model.UTF8Validation, parser.NewParser(parser.Options{}), logger)
	if warnings.Len() > 0 {
		errs = append(errs, fmt.Errorf("rulefmt warned: %s", strings.TrimSpace(warnings.String())))
	}
	if groups == nil {
		return 0, errs
	}
	n := 0
	seen := map[string]string{}
	for _, g := range groups.Groups {
		for i, r := range g.Rules {
			n++
			name := r.Alert
			if name == "" {
				name = r.Record
			}
			// The series a rule writes: its name and labels, the group's
			// under the rule's own.
			ls := map[string]string{}
			for k, v := range g.Labels {
				ls[k] = v
			}
			for k, v := range r.Labels {
				ls[k] = v
			}
			keys := make([]string, 0, len(ls))
			for k := range ls {
				keys = append(keys, k)
			}
			slices.Sort(keys)
			var key strings.Builder
			key.WriteString(name)
			for _, k := range keys {
				fmt.Fprintf(&key, "\x00%s=%s", k, ls[k])
			}
			where := fmt.Sprintf("group %q, rule %d", g.Name, i+1)
			if first, ok := seen[key.String()]; ok {
				errs = append(errs, fmt.Errorf("%s, %q: duplicate rule: the same name and labels as %s", where, name, first))
				continue
			}
			seen[key.String()] = where
		}
	}
	return n, errs
}

// checkRules fails t unless the rule file passes ruleFileErrors; it
// returns the number of rules.
func checkRules(t testing.TB, data []byte) int {
	t.Helper()
	n, errs := ruleFileErrors(data)
	for _, err := range errs {
		t.Errorf("rule file: %v", err)
	}
	if len(errs) > 0 {
		t.Logf("the rule file:\n%s", data)
	}
	return n
}

// ruleFileOf is a PrometheusRule's spec (its `groups`) as a Prometheus rule
// file: what prometheus-operator writes for Prometheus to load.
func ruleFileOf(t testing.TB, prometheusRule []byte) []byte {
	t.Helper()
	var obj struct {
		Kind string
		Spec map[string]any
	}
	require.NoError(t, k8syaml.Unmarshal(prometheusRule, &obj))
	require.Equal(t, "PrometheusRule", obj.Kind)
	require.NotEmpty(t, obj.Spec["groups"], "spec.groups")
	b, err := yaml.Marshal(obj.Spec)
	require.NoError(t, err)
	return b
}

// helmOrSkip is helm on PATH: outside CI a missing one skips; in CI (.ci/run
// installs it) it fails.
func helmOrSkip(t testing.TB) string {
	t.Helper()
	helm, err := osexec.LookPath("helm")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatal("helm is not on PATH (.ci/run installs it)")
		}
		t.Skip("helm is not on PATH")
	}
	return helm
}

// chartDocs renders the chart (`helm template sf` in namespace ns, with
// args) and returns its documents by kind (each kind's documents in order).
func chartDocs(t testing.TB, helm, ns string, args ...string) map[string][][]byte {
	t.Helper()
	cmd := osexec.Command(helm, append([]string{"template", "sf", "../../deploy/helm/streamfusion-webhook", "--namespace", ns}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	require.NoError(t, err, stderr.String())
	docs := map[string][][]byte{}
	for _, doc := range kubekit.SplitDocs(t, out) {
		var h struct{ Kind string }
		require.NoError(t, k8syaml.Unmarshal(doc, &h))
		docs[h.Kind] = append(docs[h.Kind], doc)
	}
	return docs
}

// monitoringValues turns on the chart's ServiceMonitor and PrometheusRule.
var monitoringValues = []string{"--set", "metrics.serviceMonitor.enabled=true", "--set", "metrics.prometheusRule.enabled=true"}

// chartRuleFile is the chart's PrometheusRule, rendered with args on top of
// monitoringValues, as a rule file.
func chartRuleFile(t testing.TB, helm string, args ...string) []byte {
	t.Helper()
	docs := chartDocs(t, helm, "streamfusion", append(slices.Clone(monitoringValues), args...)...)
	require.Len(t, docs["PrometheusRule"], 1)
	return ruleFileOf(t, docs["PrometheusRule"][0])
}

// ruleDoc is a rule file as plain maps, to damage.
type ruleDoc = map[string]any

func rulesOf(t testing.TB, doc ruleDoc, group int) []any {
	t.Helper()
	groups, ok := doc["groups"].([]any)
	require.True(t, ok, "groups")
	rules, ok := groups[group].(map[string]any)["rules"].([]any)
	require.True(t, ok, "rules")
	return rules
}

func ruleAt(t testing.TB, doc ruleDoc, group, rule int) map[string]any {
	t.Helper()
	r, ok := rulesOf(t, doc, group)[rule].(map[string]any)
	require.True(t, ok)
	return r
}

// TestPrometheusRuleChecks: the chart's rules pass checkRules under every
// setting that changes them, and each of a set of damaged copies of them
// (one mistake each, the kinds made by hand in a rule file) is rejected, for
// the reason given.
func TestPrometheusRuleChecks(t *testing.T) {
	helm := helmOrSkip(t)
	var rendered []byte
	for _, tc := range []struct {
		name string
		args []string
	}{
		{"defaults", nil},
		{"Ignore, 15s, 30 days, ratio 0.5", []string{"--set", "webhook.failurePolicy=Ignore", "--set", "webhook.timeoutSeconds=15",
			"--set", "metrics.prometheusRule.certificateDays=30", "--set", "metrics.prometheusRule.latencyRatio=0.5"}},
		{"rule labels", []string{"--set", "metrics.prometheusRule.labels.release=kube-prometheus-stack"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := chartRuleFile(t, helm, tc.args...)
			assert.Equal(t, 8, checkRules(t, f), "the chart's alerts (docs/webhook.md)")
			if tc.args == nil {
				rendered = f
			}
		})
	}
	require.NotNil(t, rendered)

	for _, tc := range []struct {
		name   string
		damage func(t *testing.T, doc ruleDoc)
		want   string // in one of the errors
	}{
		{"PromQL: an unclosed call", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["expr"] = "sum(up"
		}, "could not parse expression"},
		{"PromQL: an unknown function", func(t *testing.T, d ruleDoc) {
			r := ruleAt(t, d, 0, 1)
			r["expr"] = strings.Replace(r["expr"].(string), "rate(", "rat(", 1)
		}, `unknown function with name "rat"`},
		{"PromQL: rate of an instant vector", func(t *testing.T, d ruleDoc) {
			r := ruleAt(t, d, 0, 3)
			r["expr"] = strings.Replace(r["expr"].(string), "[10m]", "", 1)
		}, "expected type range vector"},
		{"PromQL: an empty expression", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["expr"] = ""
		}, "field 'expr' must be set"},
		{"for: not a duration", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["for"] = "5 minutes"
		}, `unknown unit " minutes" in duration "5 minutes"`},
		{"keep_firing_for: a duration without a unit", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["keep_firing_for"] = "300"
		}, `not a valid duration string: "300"`},
		{"no alert name", func(t *testing.T, d ruleDoc) {
			delete(ruleAt(t, d, 0, 2), "alert")
		}, "one of 'record' or 'alert' must be set"},
		{"both alert and record", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 2)["record"] = "streamfusion:slow_reviews"
		}, "only one of 'record' and 'alert' must be set"},
		{"annotation: an unclosed action", func(t *testing.T, d ruleDoc) {
			a := ruleAt(t, d, 0, 1)["annotations"].(map[string]any)
			a["summary"] = strings.Replace(a["summary"].(string), "$labels.verdict }}", "$labels.verdict }", 1)
		}, `annotation "summary"`},
		{"annotation: an unknown template function", func(t *testing.T, d ruleDoc) {
			a := ruleAt(t, d, 0, 2)["annotations"].(map[string]any)
			a["summary"] = strings.Replace(a["summary"].(string), "humanizeDuration", "humaniseDuration", 1)
		}, `function "humaniseDuration" not defined`},
		{"label: a template that does not parse", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["labels"].(map[string]any)["severity"] = "{{ if $labels.pod }}critical"
		}, `label "severity"`},
		{"label: __name__", func(t *testing.T, d ruleDoc) {
			ruleAt(t, d, 0, 0)["labels"].(map[string]any)["__name__"] = "x"
		}, "invalid label name: __name__"},
		{"a duplicate rule", func(t *testing.T, d ruleDoc) {
			groups := d["groups"].([]any)
			g := groups[0].(map[string]any)
			g["rules"] = append(g["rules"].([]any), ruleAt(t, d, 0, 6))
		}, `"StreamFusionWebhookCertificateExpiresSoon": duplicate rule`},
		{"an unknown field in a rule", func(t *testing.T, d ruleDoc) {
			r := ruleAt(t, d, 0, 0)
			r["annotation"] = r["annotations"]
			delete(r, "annotations")
		}, "field annotation not found"},
		{"an unknown field in a group", func(_ *testing.T, d ruleDoc) {
			d["groups"].([]any)[0].(map[string]any)["evaluation_interval"] = "1m"
		}, "field evaluation_interval not found"},
		{"a repeated group name", func(_ *testing.T, d ruleDoc) {
			d["groups"] = append(d["groups"].([]any), map[string]any{"name": "streamfusion-webhook",
				"rules": []any{map[string]any{"alert": "Other", "expr": "vector(1)"}}})
		}, `groupname: "streamfusion-webhook" is repeated`},
		{"a recording rule with annotations", func(t *testing.T, d ruleDoc) {
			r := ruleAt(t, d, 0, 4)
			r["record"] = r["alert"]
			delete(r, "alert")
			delete(r, "for")
		}, "invalid field 'annotations' in recording rule"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var doc ruleDoc
			require.NoError(t, yaml.Unmarshal(rendered, &doc))
			tc.damage(t, doc)
			damaged, err := yaml.Marshal(doc)
			require.NoError(t, err)
			require.NotEqual(t, string(rendered), string(damaged), "the damage changed the file")
			_, errs := ruleFileErrors(damaged)
			require.NotEmpty(t, errs, "accepted:\n%s", damaged)
			var msgs []string
			for _, err := range errs {
				msgs = append(msgs, err.Error())
			}
			assert.Contains(t, strings.Join(msgs, "\n"), tc.want)
			t.Logf("rejected: %s", msgs[0])
		})
	}

	t.Run("a second YAML document", func(t *testing.T) {
		_, errs := ruleFileErrors(append(slices.Clone(rendered), "---\ngroups: []\n"...))
		require.Len(t, errs, 1)
		assert.Contains(t, errs[0].Error(), "Multiple document yaml rules files are not supported")
	})
}
