package audit

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/streamfusion/image-entrypoint/internal/judge"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
	"github.com/streamfusion/image-entrypoint/internal/verdict"
)

func fd(ns, name, img string) Object {
	raw := fmt.Sprintf(`{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkDeployment","metadata":{"name":%q,"namespace":%q},
"spec":{"image":%q,"flinkVersion":"v2_2","jobManager":{"resource":{"memory":"2048m","cpu":1}},"taskManager":{"resource":{"memory":"2048m","cpu":1}}}}`, name, ns, img)
	return Object{Namespace: ns, Name: name, Raw: []byte(raw)}
}

func sessionJob(ns, name, cluster, jar string) Object {
	raw := fmt.Sprintf(`{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkSessionJob","metadata":{"name":%q,"namespace":%q},
"spec":{"deploymentName":%q,"job":{"jarURI":%q}}}`, name, ns, cluster, jar)
	return Object{Namespace: ns, Name: name, Raw: []byte(raw)}
}

// operatorPod is a Pod the operator made for FlinkDeployment app, running
// imageID.
func operatorPod(ns, name, app, component, img, imageID string) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": app, "component": component, "type": "flink-native-kubernetes"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "flink-main-container", Image: img, Command: []string{"/docker-entrypoint.sh"},
			Args: []string{"bash", "-c", "kubernetes-" + component + ".sh"}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "flink-main-container", Image: img, ImageID: imageID}}},
	}
}

// standalonePod is a TaskManager Pod of a ReplicaSet.
func standalonePod(ns, name, owner, img, imageID string) corev1.Pod {
	yes := true
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{"app": "standalone"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: owner, UID: "u", Controller: &yes}}},
		Spec:   corev1.PodSpec{Containers: []corev1.Container{{Name: "taskmanager", Image: img, Args: []string{"taskmanager"}}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "taskmanager", Image: img, ImageID: imageID}}},
	}
}

func newJudge(t testing.TB) *judge.Judge {
	t.Helper()
	return &judge.Judge{Cache: verdict.New(verdict.Options{Deep: verdict.ImageDeep})}
}

func byName(t testing.TB, rows []Row, kind, name string) Row {
	t.Helper()
	for _, r := range rows {
		if r.Kind == kind && r.Name == name {
			return r
		}
	}
	require.Failf(t, "no row", "%s %s in %v", kind, name, rows)
	return Row{}
}

func rules(fs []judge.Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Rule)
	}
	return out
}

// TestAudit judges a snapshot of what runs: the verdicts today, the tag
// that moved, Pods of one owner as one row, session jobs, and each image
// verified once.
func TestAudit(t *testing.T) {
	imgs := testImages(t)
	host := serve(t, map[string]v1.Image{"good": imgs.good, "plain": imgs.plain, "moving": imgs.plain})
	good, plain, moving := host+"/flink:good", host+"/flink:plain", host+"/flink:moving"
	goodID := "docker-pullable://" + host + "/flink@" + digestOf(t, imgs.good)
	snap := Snapshot{
		Deployments: []Object{fd("flink", "good", good), fd("flink", "bad", plain), fd("flink", "moved", moving)},
		SessionJobs: []Object{sessionJob("flink", "sj-good", "good", "local:///opt/flink/usrlib/job.jar"), sessionJob("flink", "sj-bad", "bad", "local:///job.jar"),
			sessionJob("flink", "sj-missing", "nope", "local:///job.jar")},
		Pods: []corev1.Pod{
			operatorPod("flink", "good-jm", "good", "jobmanager", good, goodID),
			operatorPod("flink", "good-tm-1", "good", "taskmanager", good, goodID),
			// The tag moved after these started: they run the good image.
			operatorPod("flink", "moved-jm", "moved", "jobmanager", moving, goodID),
			operatorPod("flink", "moved-tm-1", "moved", "taskmanager", moving, goodID),
			standalonePod("team", "tm-abc-1", "tm-abc", good, goodID),
			standalonePod("team", "tm-abc-2", "tm-abc", good, host+"/flink@"+digestOf(t, imgs.good)),
			{ObjectMeta: metav1.ObjectMeta{Namespace: "team", Name: "nginx"}, Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: "nginx:1"}}}},
		},
	}
	items, unread := Plan(snap)
	require.Empty(t, unread)
	require.Len(t, items, 7, "3 FlinkDeployments, 3 session jobs, one group of Pods; nginx is not Flink")
	jg := newJudge(t)
	a := &Auditor{Judge: jg, Concurrency: 3}
	var progress []int
	a.Progress = func(done, _ int) { progress = append(progress, done) }
	rows := a.Run(context.Background(), items)
	assert.Len(t, progress, 7)

	r := byName(t, rows, "FlinkDeployment", "good")
	assert.Equal(t, Admitted, r.Today.Verdict, "%+v", r.Today)
	assert.Equal(t, r.Today, r.After, "no what-if: after is today")
	assert.Equal(t, 2, r.Pods)
	require.Len(t, r.Images, 2)
	assert.Equal(t, []string{host + "/flink@" + digestOf(t, imgs.good)}, r.Images[0].Running)
	assert.False(t, r.Images[0].TagMoved)

	r = byName(t, rows, "FlinkDeployment", "bad")
	assert.Equal(t, Refused, r.Today.Verdict)
	require.NotEmpty(t, r.Today.Findings)
	assert.NotEmpty(t, r.Today.Findings[0].Fix)
	assert.Contains(t, r.Today.Message, "FlinkDeployment flink/bad: flink-main-container (kubernetes-jobmanager) image "+plain, "the webhook's own denial")

	r = byName(t, rows, "FlinkDeployment", "moved")
	assert.Equal(t, Refused, r.Today.Verdict, "the tag now names the plain image: a new Pod would be refused")
	assert.True(t, r.Images[0].TagMoved)
	assert.Equal(t, digestOf(t, imgs.plain), r.Images[0].Digest)
	require.NotEmpty(t, r.Notes)
	assert.Contains(t, r.Notes[0], "the tag "+moving+" now points to "+digestOf(t, imgs.plain)+", the Pods run "+host+"/flink@"+digestOf(t, imgs.good))
	// Both were judged: the running image admitted, the tag's refused.
	for _, f := range r.Today.Findings {
		assert.Contains(t, f.Subject, moving, "only the tag's image is refused")
	}

	r = byName(t, rows, "Pods", "ReplicaSet/tm-abc")
	assert.Equal(t, 2, r.Pods)
	assert.Equal(t, Admitted, r.Today.Verdict)
	assert.Equal(t, "taskmanager", r.Images[0].Role)

	r = byName(t, rows, "FlinkSessionJob", "sj-good")
	assert.Equal(t, Admitted, r.Today.Verdict)
	assert.Equal(t, "good", r.Cluster)
	r = byName(t, rows, "FlinkSessionJob", "sj-bad")
	assert.Equal(t, Refused, r.Today.Verdict)
	assert.Contains(t, r.Today.Message, "FlinkSessionJob flink/sj-bad runs on FlinkDeployment flink/bad, which StreamFusion refuses")
	r = byName(t, rows, "FlinkSessionJob", "sj-missing")
	assert.Equal(t, Refused, r.Today.Verdict)
	assert.Equal(t, []string{judge.RuleSessionTarget}, rules(r.Today.Findings))

	assert.Equal(t, int64(2), jg.Cache.Stats.Verified.Load(), "two images, each verified once across the audit")

	rep := NewReport(nil, WhatIf{}, snap, unread, rows, time.Second)
	assert.Equal(t, ExitRefused, rep.ExitCode())
	assert.Equal(t, 7, rep.Summary.Resources)
	assert.Equal(t, 4, rep.Summary.RefusedToday) // bad, moved, sj-bad, sj-missing
	var table bytes.Buffer
	require.NoError(t, rep.WriteTable(&table))
	assert.Contains(t, table.String(), "NAMESPACE  RESOURCE")
	assert.Contains(t, table.String(), "FlinkDeployment bad")
	assert.Contains(t, table.String(), moving+" (tag moved)")
	assert.Contains(t, table.String(), "Pods of ReplicaSet/tm-abc (2)")
	var junit bytes.Buffer
	require.NoError(t, rep.WriteJUnit(&junit))
	var back junitSuites
	require.NoError(t, xml.Unmarshal(junit.Bytes(), &back))
	assert.Equal(t, 7, back.Tests)
	assert.Equal(t, 4, back.Failures)
	var js bytes.Buffer
	require.NoError(t, json.NewEncoder(&js).Encode(rep))
	assert.Contains(t, js.String(), `"tagMoved":true`)
}

// TestWhatIf: an image map that flips an admitted deployment to refused
// and fixes a refused one, and lib changes judged on images made in
// memory.
func TestWhatIf(t *testing.T) {
	imgs := testImages(t)
	host := serve(t, map[string]v1.Image{"good": imgs.good, "plain": imgs.plain})
	good, plain := host+"/flink:good", host+"/flink:plain"
	snap := Snapshot{Deployments: []Object{fd("flink", "good", good), fd("flink", "bad", plain)},
		SessionJobs: []Object{sessionJob("flink", "sj", "good", "local:///job.jar")}}
	items, _ := Plan(snap)

	t.Run("image map", func(t *testing.T) {
		m1, err := ParseImageMap(good + "=" + plain)
		require.NoError(t, err)
		m2, err := ParseImageMap(host + "/flink:plain=" + good)
		require.NoError(t, err)
		w := WhatIf{Images: []ImageMap{m1, m2}}
		rows := (&Auditor{Judge: newJudge(t), WhatIf: w}).Run(context.Background(), items)
		r := byName(t, rows, "FlinkDeployment", "good")
		assert.Equal(t, Admitted, r.Today.Verdict)
		assert.Equal(t, Refused, r.After.Verdict)
		require.NotEmpty(t, r.New, "the findings that flip")
		assert.Empty(t, r.Fixed)
		assert.Equal(t, r.After.Findings[0].Key(), r.New[0].Key())
		assert.Equal(t, plain, r.Images[0].After)
		r = byName(t, rows, "FlinkDeployment", "bad")
		assert.Equal(t, Refused, r.Today.Verdict)
		assert.Equal(t, Admitted, r.After.Verdict)
		keys := map[string]bool{}
		for _, f := range r.Today.Findings {
			keys[f.Key()] = true
		}
		assert.Len(t, r.Fixed, len(keys), "every finding of today fixed (the JobManager's and the TaskManager's are the same finding)")
		assert.Empty(t, r.New)
		r = byName(t, rows, "FlinkSessionJob", "sj")
		assert.Equal(t, Admitted, r.Today.Verdict)
		assert.Equal(t, Refused, r.After.Verdict, "the session job follows its cluster's new image")
		rep := NewReport(nil, w, snap, nil, rows, time.Second)
		assert.Equal(t, 3, rep.Summary.Flipped)
		assert.Equal(t, ExitRefused, rep.ExitCode())
		var table bytes.Buffer
		require.NoError(t, rep.WriteTable(&table))
		assert.Contains(t, table.String(), "fixed: FlinkDeployment flink/bad: [")
		assert.Contains(t, table.String(), "new:   FlinkDeployment flink/good: [")
	})
	t.Run("a repository maps every tag", func(t *testing.T) {
		m, err := ParseImageMap(host + "/flink=" + plain)
		require.NoError(t, err)
		rows := (&Auditor{Judge: newJudge(t), WhatIf: WhatIf{Images: []ImageMap{m}}}).Run(context.Background(), items)
		assert.Equal(t, Refused, byName(t, rows, "FlinkDeployment", "good").After.Verdict)
	})
	t.Run("remove a JAR from lib", func(t *testing.T) {
		jg := newJudge(t)
		w := WhatIf{Remove: []string{"streamfusion-core*.jar", "nothing-*.jar"}}
		require.NoError(t, w.Validate())
		rows := (&Auditor{Judge: jg, WhatIf: w}).Run(context.Background(), items)
		r := byName(t, rows, "FlinkDeployment", "good")
		assert.Equal(t, Admitted, r.Today.Verdict)
		assert.Equal(t, Refused, r.After.Verdict, "%+v", r.After)
		require.NotEmpty(t, r.New)
		assert.Contains(t, rules(r.New), "core-missing", "%+v", r.New)
		assert.Contains(t, r.Images[0].After, "(what-if: lib -streamfusion-core*.jar -nothing-*.jar)")
		assert.Contains(t, r.Notes, "--remove-jar nothing-*.jar: no JAR of "+good+"'s lib matches")
		// good, plain, and the one what-if image of good (the plain one
		// has no lib to change: it is refused as it was).
		assert.LessOrEqual(t, jg.Cache.Stats.Verified.Load(), int64(4))
	})
	t.Run("add a JAR to lib", func(t *testing.T) {
		p := filepath.Join(t.TempDir(), "zz-second-loader.jar")
		require.NoError(t, os.WriteFile(p, testkit.Loader("2.2", "0.1.0").Bytes(), 0o644))
		j, err := ReadJAR(p)
		require.NoError(t, err)
		rows := (&Auditor{Judge: newJudge(t), WhatIf: WhatIf{Add: []JAR{j}}}).Run(context.Background(), items)
		r := byName(t, rows, "FlinkDeployment", "good")
		assert.Equal(t, Refused, r.After.Verdict, "two loaders")
		require.NotEmpty(t, r.New)
		assert.Contains(t, r.New[0].Text, "zz-second-loader.jar")
	})
}
