package judge_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/deploy"
	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/judge/judgetest"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

// The outcomes on images that pass or fail the rules are tested where the
// real images are built (the webhook's reviews, the audit's rows); these
// are the judge's own cases, which need no image.

// offline is a registry that cannot be reached.
type offline struct{}

func (offline) RoundTrip(*http.Request) (*http.Response, error) {
	return nil, errors.New("connection refused")
}

func object(t testing.TB, kind, name, spec string) *deploy.Resource {
	t.Helper()
	res, err := deploy.ParseObject(fmt.Appendf(nil,
		`{"apiVersion":"flink.apache.org/v1beta1","kind":%q,"metadata":{"name":%q,"namespace":"flink"},"spec":%s}`, kind, name, spec))
	require.NoError(t, err)
	return res
}

const unreachable = `{"image":"registry.test/flink:2.2","flinkVersion":"v2_2"}`

func offlineJudge() *judge.Judge {
	return &judge.Judge{Cache: verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(offline{})}})}
}

func rulesOf(fs []judge.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

func TestSessionJobsAndTheirCluster(t *testing.T) {
	fdJSON, err := json.Marshal(map[string]any{"apiVersion": "flink.apache.org/v1beta1", "kind": "FlinkDeployment",
		"metadata": map[string]any{"name": "sessions", "namespace": "flink"}, "spec": json.RawMessage(unreachable)})
	require.NoError(t, err)
	clusters := judgetest.Clusters{Objects: map[string]any{"flink/sessions": json.RawMessage(fdJSON), "flink/torn": json.RawMessage(`{"kind":1}`)}}
	for _, tc := range []struct {
		name, target string
		clusters     judge.Clusters
		refused      bool
		unverified   bool
		rules        []string
		says         string
	}{
		{name: "no API access: admitted with a warning", target: "sessions", says: "not looked up (no API access to read FlinkDeployments is configured)"},
		{name: "no cluster named", target: "", clusters: clusters, refused: true, rules: []string{judge.RuleSessionTarget}, says: "spec.deploymentName: found none"},
		{name: "a cluster that does not exist", target: "gone", clusters: clusters, refused: true, rules: []string{judge.RuleSessionTarget},
			says: "FlinkDeployment flink/gone does not exist"},
		{name: "the API does not answer", target: "sessions", clusters: judgetest.Clusters{Err: errors.New("the FlinkDeployments are not listed yet")},
			unverified: true, rules: []string{judge.RuleUnverified}, says: "its FlinkDeployment flink/sessions could not be read: the FlinkDeployments are not listed yet"},
		{name: "a cluster that does not parse", target: "torn", clusters: clusters, unverified: true, rules: []string{judge.RuleUnverified},
			says: "its FlinkDeployment flink/torn cannot be read"},
		{name: "a cluster whose image cannot be read", target: "sessions", clusters: clusters, unverified: true, rules: []string{judge.RuleUnverified, judge.RuleUnverified},
			says: "runs on FlinkDeployment flink/sessions: flink-main-container (kubernetes-jobmanager) image registry.test/flink:2.2"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			j := offlineJudge()
			j.Clusters = tc.clusters
			sj := object(t, "FlinkSessionJob", "job", fmt.Sprintf(`{"deploymentName":%q,"job":{"jarURI":"https://jars.test/job.jar"}}`, tc.target))
			o := j.SessionJob(context.Background(), sj, time.Second)
			assert.Equal(t, tc.refused, o.Refused)
			assert.Equal(t, tc.unverified, o.Unverified)
			assert.Equal(t, !tc.refused && !tc.unverified, o.Admitted())
			assert.Equal(t, tc.rules, rulesOf(o.Findings))
			assert.Contains(t, o.Message+strings.Join(o.Warnings, "\n"), tc.says)
			if o.Admitted() {
				assert.Empty(t, o.Message, "an admitted object has no message")
			} else {
				assert.True(t, strings.HasPrefix(o.Message, "FlinkSessionJob flink/job"), "the message names the object: %s", o.Message)
			}
		})
	}
}

// TestImagesNotJudged: an image that cannot be read is unverified, not
// refused, with the error kept for the caller (the webhook counts it by
// cause); one whose deadline passed while it was verified is Late.
func TestImagesNotJudged(t *testing.T) {
	res := object(t, "FlinkDeployment", "app", unreachable)
	o := offlineJudge().Object(context.Background(), res, time.Second)
	require.True(t, o.Unverified, "%+v", o)
	assert.False(t, o.Refused)
	assert.Equal(t, []string{judge.RuleUnverified, judge.RuleUnverified}, rulesOf(o.Findings), "the JobManager's and the TaskManager's")
	for _, f := range o.Findings {
		assert.True(t, f.Unverified)
		assert.Contains(t, f.Fix, "imagePullSecrets")
	}
	require.Len(t, o.Images, 2)
	for _, iv := range o.Images {
		assert.Error(t, iv.Err)
		assert.False(t, iv.Late)
		assert.False(t, iv.Admitted)
		assert.Equal(t, iv.Err.Error(), iv.Error)
	}
	assert.True(t, strings.HasPrefix(o.Message, "FlinkDeployment flink/app: "), o.Message)

	t.Run("the deadline passes while the image is read", func(t *testing.T) {
		// By digest: no tag to resolve, so the verification itself is
		// under way (reading the manifest) when the deadline passes. The
		// context is live when judging starts, so the image is started,
		// not left unstarted.
		ref := "registry.test/flink@sha256:" + strings.Repeat("ab", 32)
		reg := &stalled{asked: make(chan struct{}), release: make(chan struct{})}
		t.Cleanup(func() { close(reg.release) })
		j := &judge.Judge{Cache: verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(reg)}})}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		o := j.Object(ctx, object(t, "FlinkDeployment", "app", fmt.Sprintf(`{"image":%q,"flinkVersion":"v2_2"}`, ref)), time.Second)
		select {
		case <-reg.asked:
		case <-time.After(5 * time.Second):
			t.Fatal("the registry was never asked: the verification did not start")
		}
		require.True(t, o.Unverified, "%+v", o)
		assert.False(t, o.Refused)
		require.Len(t, o.Images, 2, "the JobManager's and the TaskManager's, one verification")
		for _, iv := range o.Images {
			assert.True(t, iv.Late, "%s: %v", iv.Container.Role, iv.Err)
			assert.ErrorIs(t, iv.Err, context.DeadlineExceeded)
			assert.False(t, iv.Admitted)
		}
		late := ": not verified within 1s (the verification goes on; a retry is answered from its result)"
		assert.Equal(t, "FlinkDeployment flink/app: "+
			"flink-main-container (kubernetes-jobmanager) image "+ref+late+"; "+
			"flink-main-container (kubernetes-taskmanager) image "+ref+late, o.Message)
		assert.Equal(t, []string{judge.RuleUnverified, judge.RuleUnverified}, rulesOf(o.Findings))
	})

	t.Run("an image not started by the deadline", func(t *testing.T) {
		// One image at a time: the JobManager's holds the only slot until
		// the deadline, so the TaskManager's is never started.
		jm := "registry.test/flink@sha256:" + strings.Repeat("cd", 32)
		reg := &stalled{asked: make(chan struct{}), release: make(chan struct{})}
		t.Cleanup(func() { close(reg.release) })
		j := &judge.Judge{Cache: verdict.New(verdict.Options{Remote: []remote.Option{remote.WithTransport(reg)}}), Reads: 1}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		o := j.Object(ctx, object(t, "FlinkDeployment", "app", fmt.Sprintf(`{"image":%q,"flinkVersion":"v2_2",
			"taskManager":{"podTemplate":{"spec":{"containers":[{"name":"flink-main-container","image":"registry.test/other:1"}]}}}}`, jm)), time.Second)
		require.True(t, o.Unverified, "%+v", o)
		require.Len(t, o.Images, 2)
		assert.True(t, o.Images[0].Late, "the JobManager's image was being read")
		assert.False(t, o.Images[1].Late, "the TaskManager's image was never started")
		assert.ErrorIs(t, o.Images[1].Err, context.DeadlineExceeded)
		assert.Equal(t, "FlinkDeployment flink/app: "+
			"flink-main-container (kubernetes-jobmanager) image "+jm+": not verified within 1s (the verification goes on; a retry is answered from its result); "+
			"flink-main-container (kubernetes-taskmanager) image registry.test/other:1: not verified within 1s: "+
			"not started: the deadline passed before its verification began (1 other image(s) of the object were started first, at most 1 at once)", o.Message)
	})
}

// stalled is a registry that answers nothing until the test ends (or the
// request's own context does): an image read from it is still being read
// when the judging context's deadline passes.
type stalled struct {
	once    sync.Once
	asked   chan struct{} // closed at the first request
	release chan struct{} // closed when the test ends
}

func (s *stalled) RoundTrip(req *http.Request) (*http.Response, error) {
	s.once.Do(func() { close(s.asked) })
	select {
	case <-req.Context().Done():
		return nil, req.Context().Err()
	case <-s.release:
		return nil, errors.New("connection refused")
	}
}
