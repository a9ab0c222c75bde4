package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	admissionv1 "k8s.io/api/admission/v1"

	"github.com/streamfusion/image-entrypoint/internal/judge/judgetest"
)

func sessionJob(cluster string) map[string]any {
	return map[string]any{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkSessionJob", "metadata": map[string]any{"name": "j", "namespace": "flink"},
		"spec": map[string]any{"deploymentName": cluster, "job": map[string]any{"jarURI": "local:///opt/flink/usrlib/job.jar"}}}
}

func TestSessionJobsJudgedByTheirCluster(t *testing.T) {
	imgs := shared(t)
	host := registryWith(t, nil, map[string]v1Image{"good": imgs.good, "plain": imgs.plain})
	good, plain := flinkDeployment(host+"/flink:good", "v2_2", ""), flinkDeployment(host+"/flink:plain", "v2_2", "")
	clusters := judgetest.Clusters{Objects: map[string]any{"flink/good": good, "flink/plain": plain}}
	s := startServer(t, Config{Clusters: clusters}, http.DefaultTransport)
	for _, tc := range []struct {
		name, cluster string
		allowed       bool
		contains      []string
	}{
		{"good cluster", "good", true, nil},
		{"refused cluster", "plain", false, []string{"FlinkSessionJob flink/j runs on FlinkDeployment flink/basic, which StreamFusion refuses: ",
			"flink-main-container (kubernetes-jobmanager) image " + host + "/flink:plain: StreamFusion refused to start kubernetes-jobmanager"}},
		{"missing cluster", "gone", false, []string{`FlinkSessionJob flink/j: spec.deploymentName: found "gone", required an existing FlinkDeployment: FlinkDeployment flink/gone does not exist`}},
		{"no cluster named", "", false, []string{"spec.deploymentName: found none"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out := s.post(t, reviewOf(t, "FlinkSessionJob", admissionv1.Create, sessionJob(tc.cluster)))
			require.Equal(t, tc.allowed, out.Response.Allowed, "%+v", out.Response.Result)
			for _, want := range tc.contains {
				assert.Contains(t, out.Response.Result.Message, want)
			}
		})
	}

	t.Run("the API cannot be read", func(t *testing.T) {
		for _, policy := range []string{Fail, Ignore} {
			s := startServer(t, Config{FailurePolicy: policy, Clusters: judgetest.Clusters{Err: errors.New("connection refused")}}, http.DefaultTransport)
			out := s.post(t, reviewOf(t, "FlinkSessionJob", admissionv1.Create, sessionJob("good")))
			assert.Equal(t, policy == Ignore, out.Response.Allowed)
			text := strings.Join(out.Response.Warnings, "\n")
			if out.Response.Result != nil {
				text += out.Response.Result.Message
			}
			assert.Contains(t, text, "its FlinkDeployment flink/good could not be read: connection refused")
		}
	})
	t.Run("readyz names the clusters' cache", func(t *testing.T) {
		s := startServer(t, Config{Clusters: judgetest.Clusters{Err: errors.New("the FlinkDeployments are not listed yet")}}, http.DefaultTransport)
		resp, err := s.client.Get(s.url + "/readyz")
		require.NoError(t, err)
		defer resp.Body.Close()
		assert.Equal(t, http.StatusServiceUnavailable, resp.StatusCode)
	})
}
