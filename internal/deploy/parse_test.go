package deploy

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/roles"
)

func TestParseOperator(t *testing.T) {
	t.Parallel()
	rs, err := ParsePath("testdata/operator.yaml", nil)
	require.NoError(t, err)
	require.Len(t, rs, 2, "the Service and the empty document run nothing")

	fd := rs[0]
	assert.Equal(t, "FlinkDeployment flink/basic", fd.ID())
	assert.Equal(t, "flink/basic", fd.Cluster)
	assert.Equal(t, "v2_2", fd.FlinkVersion)
	assert.Equal(t, "testdata/operator.yaml#1", fd.Source)
	assert.Equal(t, []Container{
		{Name: MainContainer, Image: "registry.example/flink:2.2.1-streamfusion", Role: roles.K8sJobManager, Group: GroupJobManager, PullSecrets: []string{"regcred"}},
		{Name: MainContainer, Image: "registry.example/flink:2.2.1-streamfusion-arm", Role: roles.K8sTaskManager, Group: GroupTaskManager,
			Platform: "linux/arm64", PullSecrets: []string{"regcred"}},
	}, fd.Containers)

	sj := rs[1]
	assert.Equal(t, "FlinkSessionJob", sj.Kind)
	assert.Equal(t, "flink/basic", sj.Cluster, "a session job belongs to its deployment's cluster")
	assert.Equal(t, "basic", sj.Target)
	assert.Empty(t, sj.Containers)
}

func TestParseStandaloneMode(t *testing.T) {
	t.Parallel()
	doc := `{"apiVersion":"flink.apache.org/v1beta1","kind":"FlinkDeployment","metadata":{"name":"s"},
	"spec":{"image":"f:1","mode":"standalone","flinkVersion":"v1_18","job":{"jarURI":"local:///x.jar"}}}`
	r, err := ParseObject([]byte(doc))
	require.NoError(t, err)
	require.Len(t, r.Containers, 2)
	assert.Equal(t, roles.Application, r.Containers[0].Role)
	assert.Equal(t, roles.TaskManager, r.Containers[1].Role)
	assert.Equal(t, "", r.Containers[0].Platform)
}

func TestParseNative(t *testing.T) {
	t.Parallel()
	rs, err := ParsePath("testdata/native.yaml", nil)
	require.NoError(t, err)
	require.Len(t, rs, 4)
	type got struct {
		id, cluster, container string
		role                   roles.Role
		group                  Group
		platform               string
	}
	var all []got
	for _, r := range rs {
		for _, c := range r.Containers {
			all = append(all, got{r.ID(), r.Cluster, c.Name, c.Role, c.Group, c.Platform})
		}
	}
	assert.Equal(t, []got{
		{"Deployment flink-jobmanager", "flink", "jobmanager", roles.JobManager, GroupJobManager, ""},
		{"StatefulSet flink-taskmanager", "flink", "taskmanager", roles.TaskManager, GroupTaskManager, "linux/amd64"},
		{"Job submit", "flink", "client", roles.Client, GroupClient, ""},
		{"Pod flink/my-session-taskmanager-1-1", "flink/my-session", MainContainer, roles.K8sTaskManager, GroupTaskManager, ""},
	}, all)
	require.Len(t, rs[0].Notes, 1)
	assert.Contains(t, rs[0].Notes[0], "container sidecar", "a Flink image that starts no Flink process is named, not checked")
}

func TestParseCompose(t *testing.T) {
	t.Parallel()
	rs, err := ParsePath("testdata/compose.yaml", nil)
	require.NoError(t, err)
	require.Len(t, rs, 1)
	r := rs[0]
	assert.Equal(t, "compose", r.Kind)
	require.Len(t, r.Containers, 3, "postgres is not Flink")
	assert.Equal(t, Container{Name: "client", Image: "registry.example/flink:2.2.0-streamfusion", Role: roles.Client, Group: GroupClient}, r.Containers[0])
	assert.Equal(t, Container{Name: "jobmanager", Image: "registry.example/flink:2.2.1-streamfusion", Role: roles.JobManager, Group: GroupJobManager, Platform: "linux/arm64"}, r.Containers[1], "the anchor is merged")
	assert.Equal(t, roles.TaskManager, r.Containers[2].Role)
}

func TestParseDirAndStdin(t *testing.T) {
	t.Parallel()
	rs, err := ParsePath("testdata", nil)
	require.NoError(t, err)
	assert.Len(t, rs, 7, "compose (1), native (4), operator (2), in file order")
	assert.Equal(t, "compose", rs[0].Kind)

	rs, err = ParsePath("-", strings.NewReader("kind: List\napiVersion: v1\nitems:\n- apiVersion: v1\n  kind: Pod\n  metadata: {name: p}\n  spec:\n    containers: [{name: c, image: 'f:1', args: [taskmanager]}]\n"))
	require.NoError(t, err)
	require.Len(t, rs, 1)
	assert.Equal(t, "-#1.items[0]", rs[0].Source)
	assert.Equal(t, roles.TaskManager, rs[0].Containers[0].Role)
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, tc := range []struct{ name, data, want string }{
		{"not yaml", "kind: [unclosed", "document 1"},
		{"second document broken", "kind: Service\n---\nkind: Pod\nspec: {containers: 3}\n", "document 2"},
		{"no kind", "metadata: {name: x}\n", "no kind"},
		{"wrong type", "kind: Pod\nspec: {containers: 3}\n", "document 1"},
		{"alias bomb", laughs(8), "excessive aliasing"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := filepath.Join(dir, strings.ReplaceAll(tc.name, " ", "-")+".yaml")
			require.NoError(t, os.WriteFile(f, []byte(tc.data), 0o644))
			_, err := ParsePath(f, nil)
			require.Error(t, err)
			assert.ErrorIs(t, err, ErrInput)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
	_, err := ParseObject([]byte(`{"kind":"Service","metadata":{"name":"x"}}`))
	assert.ErrorIs(t, err, ErrNoWorkload)
	_, err = ParseObject([]byte(`{"kind":"Pod","spec":{"containers":"x"}}`))
	assert.ErrorIs(t, err, ErrInput)
}

func TestCheckSet(t *testing.T) {
	t.Parallel()
	fd := &Resource{Kind: "FlinkDeployment", Name: "basic", Cluster: "basic", FlinkVersion: "v2_2"}
	good := ImageFacts{Flink: "2.2.1", Line: "2.2", StreamFusion: "0.1.0", Build: "3f9c0d1e", JDK: "17.0.15", JDKMajor: 17}
	jm := Container{Image: "f:jm", Role: roles.K8sJobManager, Group: GroupJobManager}
	tm := Container{Image: "f:tm", Role: roles.K8sTaskManager, Group: GroupTaskManager}
	mod := func(f func(*ImageFacts)) ImageFacts { g := good; f(&g); return g }
	for _, tc := range []struct {
		name  string
		tm    ImageFacts
		rules []string
		text  string
	}{
		{"one release", good, nil, ""},
		{"two Flink releases", mod(func(f *ImageFacts) { f.Flink = "2.2.0" }), []string{RuleFlinkRelease}, "2.2.0 in taskmanager f:tm; 2.2.1 in jobmanager f:jm"},
		{"two builds", mod(func(f *ImageFacts) { f.Build = "77aa" }), []string{RuleStreamFusion}, "0.1.0 (build 77aa) in taskmanager f:tm"},
		{"two JDK majors", mod(func(f *ImageFacts) { f.JDKMajor = 21 }), []string{RuleJDK}, "21 in taskmanager f:tm"},
		{"another line", mod(func(f *ImageFacts) { f.Flink, f.Line = "1.18.1", "1.18" }), []string{RuleFlinkRelease, RuleFlinkVersion}, "spec.flinkVersion is v2_2"},
		{"unknown facts are not compared", ImageFacts{}, nil, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fs := CheckSet([]*Resource{fd}, []Member{{fd, jm, good}, {fd, tm, tc.tm}})
			var rules []string
			for _, f := range fs {
				rules = append(rules, f.Rule)
				assert.Equal(t, admission.Error, f.Severity)
			}
			assert.Equal(t, tc.rules, rules)
			if tc.text != "" {
				require.NotEmpty(t, fs)
				assert.Contains(t, fs[len(fs)-1].Message, tc.text)
			}
		})
	}
	sj := &Resource{Kind: "FlinkSessionJob", Name: "j", Cluster: "elsewhere"}
	fs := CheckSet([]*Resource{fd, sj}, nil)
	require.Len(t, fs, 1)
	assert.Equal(t, RuleSessionJob, fs[0].Rule)
	assert.Equal(t, admission.Warning, fs[0].Severity)
	assert.Empty(t, CheckSet([]*Resource{fd, {Kind: "FlinkSessionJob", Name: "j", Cluster: "basic"}}, nil))
}

func TestFactsOf(t *testing.T) {
	t.Parallel()
	d := &admission.Decision{Flink: "2.2.1", JDK: "1.8.0_392", Payloads: []*admission.Identity{
		{Kind: admission.KindExtension, Version: "9.9.9"},
		{Kind: admission.KindLoader, Version: "0.1.0"},
		{Kind: admission.KindCore, Version: "0.1.0", BuildID: "3f9c"},
	}}
	assert.Equal(t, ImageFacts{Flink: "2.2.1", Line: "2.2", StreamFusion: "0.1.0", Build: "3f9c", JDK: "1.8.0_392", JDKMajor: 8}, FactsOf(d))
}

// laughs is a document whose aliases expand to 9^n values.
func laughs(n int) string {
	var b strings.Builder
	b.WriteString("kind: Pod\nl0: &l0 [x, x, x, x, x, x, x, x, x]\n")
	for i := 1; i <= n; i++ {
		ref := fmt.Sprintf("*l%d", i-1)
		fmt.Fprintf(&b, "l%d: &l%d [%s]\n", i, i, strings.TrimSuffix(strings.Repeat(ref+", ", 9), ", "))
	}
	return b.String()
}

// A FlinkDeployment's flinkConfiguration is judged with the config rules
// against its images' release: the operator writes it into the pods' config.
func TestFlinkConfigurationJudged(t *testing.T) {
	t.Parallel()
	doc := `apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: basic, namespace: flink}
spec:
  image: registry.example/flink-sf:2.2.1
  flinkVersion: v2_2
  flinkConfiguration:
    taskmanager.numberOfTaskSlot: "2"
    state.backend.type: rocksdb
    state.backend: hashmap
    metrics.reporter.prom.port: "9249"
    env:
      java:
        opts:
          taskmanager: -Darrow.enable_unsafe_memory_access=true
`
	fd, err := ParseObject([]byte(doc))
	require.NoError(t, err)
	rs := []*Resource{fd}
	assert.Contains(t, fd.Config, admission.Entry{Key: "env.java.opts.taskmanager", Value: "-Darrow.enable_unsafe_memory_access=true",
		Source: "spec.flinkConfiguration of FlinkDeployment flink/basic"})
	good := ImageFacts{Flink: "2.2.1", Line: "2.2", StreamFusion: "0.1.0", Build: "3f9c0d1e", JDK: "17.0.15", JDKMajor: 17}
	var members []Member
	for _, c := range fd.Containers {
		members = append(members, Member{fd, c, good})
	}
	fs := CheckSet(rs, members)
	var rules []string
	for _, f := range fs {
		rules = append(rules, f.Rule)
		assert.Equal(t, admission.Warning, f.Severity, f.Text())
	}
	assert.ElementsMatch(t, []string{"config-unknown-key", "config-key-conflict", "config-taskmanager-flags"}, rules, "each once, the flags for the TaskManager only")
	text := ""
	for _, f := range fs {
		text += f.Text() + "\n"
	}
	assert.Contains(t, text, "rename taskmanager.numberOfTaskSlot to taskmanager.numberOfTaskSlots")
	assert.Contains(t, text, "add them to env.java.opts.taskmanager (spec.flinkConfiguration")

	// Without StreamFusion payloads in the image: no flags to ask for.
	good.StreamFusion = ""
	for i := range members {
		members[i].Facts = good
	}
	for _, f := range CheckSet(rs, members) {
		assert.NotEqual(t, "config-taskmanager-flags", f.Rule)
	}
}

// A FlinkDeployment's locations and reporters are judged against what its
// image's Flink resolves at run time (ImageFacts.RunTime, from the image's
// check): an s3 checkpoint directory on an image whose plugins serve only
// gs is refused once, for the cluster; a reporter factory no plugin
// provides is a warning.
func TestFlinkConfigurationAgainstTheImagesFileSystems(t *testing.T) {
	t.Parallel()
	doc := `apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: cp, namespace: flink}
spec:
  image: registry.example/flink-sf:2.2.1
  flinkVersion: v2_2
  flinkConfiguration:
    execution.checkpointing.dir: %s
    metrics.reporter.prom.factory.class: %s
`
	runTime := &admission.FileSystems{FactoriesRead: true, ReportersRead: true, Complete: true, PluginsDir: "/opt/flink/plugins",
		Factories: []admission.Factory{{Provider: admission.Provider{Class: "x.GS", JAR: "/opt/flink/plugins/gs/gs.jar", Plugin: "gs"}, Scheme: "gs"}},
		Reporters: []admission.Provider{{Service: "org.apache.flink.metrics.reporter.MetricReporterFactory", Class: "r.Prom", JAR: "/opt/flink/plugins/prom/p.jar", Plugin: "prom"}}}
	for _, tc := range []struct {
		dir, factory string
		runTime      *admission.FileSystems
		want         []string
	}{
		{"s3://bucket/cp", "r.Prom", runTime, []string{"fs-scheme-unserved/error"}},
		{"gs://bucket/cp", "r.Other", runTime, []string{"reporter-unavailable/warning"}},
		{"gs://bucket/cp", "r.Prom", runTime, nil},
		{"s3://bucket/cp", "r.Other", nil, nil}, // an image whose run time was not read: not judged
	} {
		fd, err := ParseObject(fmt.Appendf(nil, doc, tc.dir, tc.factory))
		require.NoError(t, err)
		facts := ImageFacts{Flink: "2.2.1", Line: "2.2", StreamFusion: "0.1.0", Build: "3f9c0d1e", JDK: "17.0.15", JDKMajor: 17, RunTime: tc.runTime}
		var members []Member
		for _, c := range fd.Containers {
			members = append(members, Member{fd, c, facts})
		}
		var got []string
		for _, f := range CheckSet([]*Resource{fd}, members) {
			if f.Rule == "fs-scheme-unserved" || f.Rule == "reporter-unavailable" {
				got = append(got, f.Rule+"/"+string(f.Severity))
				assert.Contains(t, f.Text(), "spec.flinkConfiguration")
			}
		}
		assert.Equal(t, tc.want, got, "%s %s", tc.dir, tc.factory)
	}
}
