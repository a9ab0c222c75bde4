package deploy

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// TestJobSQLOfTheDeployment: an image whose usrlib holds a SQL file naming
// a connector no factory answers gets a warning from its own check
// (nothing its process is given names the file); a FlinkDeployment whose
// spec.job.args (or program-args) name that file runs it, and is refused
// for it, unless its flinkConfiguration adds JARs. The image's facts come
// from the image check itself (host.Gather, admission.Decide, FactsOf).
func TestJobSQLOfTheDeployment(t *testing.T) {
	t.Parallel()
	const file = "/" + testkit.FlinkHome + "/usrlib/sql/job.sql"
	fsys := testkit.Good("2.2.1").MapFS()
	fsys[strings.TrimPrefix(file, "/")] = &fstest.MapFile{Data: []byte("CREATE TABLE t (a INT) WITH ('connector' = 'kafka');\n"), Mode: 0o644}
	f, err := host.Gather(context.Background(), fsys, host.Settings{LibDir: "/" + testkit.LibDir, JavaHome: "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64", Deep: true}, nil)
	require.NoError(t, err)
	d := admission.Decide(f)
	f.Deep.Close()
	facts := FactsOf(d)
	require.Len(t, facts.SQL, 1, "the image's own check: %v", d.Findings)
	require.Equal(t, admission.Warning, facts.SQL[0].Severity)

	doc := `apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: sql, namespace: flink}
spec:
  image: registry.example/flink-sf:2.2.1
  flinkVersion: v2_2
  flinkConfiguration: {%s}
  podTemplate:
    spec:
      containers:
      - name: flink-main-container
        volumeMounts: [{name: v, mountPath: %s}]
  job:
    jarURI: %s
    args: [%s]
`
	const inUsrlib = "local:///" + testkit.FlinkHome + "/usrlib/sql-runner.jar"
	for _, tc := range []struct {
		name, conf, mount, jar, args string
		want                         string // severity of the finding; "" none
	}{
		{"the job's args name the file", "", "/tmp", inUsrlib, file, "error"},
		{"program-args name it", `"$internal.application.program-args": "` + file + `"`, "/tmp", inUsrlib, "", "error"},
		{"another file", "", "/tmp", inUsrlib, "/opt/flink/usrlib/other.sql", ""},
		{"no args", "", "/tmp", inUsrlib, "", ""},
		{"pipeline.jars may bring the connector", "pipeline.jars: file:///opt/flink/extra/kafka.jar", "/tmp", inUsrlib, file, "warning"},
		{"the job's JAR, outside usrlib, may bring it", "", "/tmp", "local:///opt/app/sql-runner-fat.jar", file, "warning"},
		{"a volume mounted over the file's directory: not the image's file", "", "/" + testkit.FlinkHome + "/usrlib/sql", inUsrlib, file, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := ParseObject(fmt.Appendf(nil, doc, tc.conf, tc.mount, tc.jar, tc.args))
			require.NoError(t, err)
			var members []Member
			for _, c := range r.Containers {
				members = append(members, Member{r, c, facts})
			}
			var got []string
			for _, f := range CheckSet([]*Resource{r}, members) {
				if f.Rule == "table-factory-missing" {
					got = append(got, string(f.Severity))
					assert.Contains(t, f.Message, file)
					assert.Contains(t, f.Message, "'kafka'")
					assert.NotContains(t, f.Message, "nothing the process is given names it")
					assert.NotEmpty(t, f.Fix)
				}
			}
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			assert.Equal(t, []string{tc.want}, got, "one finding for the resource, however many containers")
		})
	}
	// The JobManager runs the application's SQL: a volume of its own
	// decides, the TaskManager's does not.
	for role, want := range map[string]int{"jobManager": 0, "taskManager": 1} {
		r, err := ParseObject(fmt.Appendf(nil, `apiVersion: flink.apache.org/v1beta1
kind: FlinkDeployment
metadata: {name: sql, namespace: flink}
spec:
  image: registry.example/flink-sf:2.2.1
  flinkVersion: v2_2
  %s:
    podTemplate:
      spec:
        containers:
        - name: flink-main-container
          volumeMounts: [{name: v, mountPath: /%s/usrlib/sql}]
  job: {jarURI: "%s", args: ["%s"]}
`, role, testkit.FlinkHome, inUsrlib, file))
		require.NoError(t, err)
		var members []Member
		for _, c := range r.Containers {
			members = append(members, Member{r, c, facts})
		}
		n := 0
		for _, f := range CheckSet([]*Resource{r}, members) {
			if f.Rule == "table-factory-missing" {
				n++
			}
		}
		assert.Equal(t, want, n, "the volume in %s", role)
	}
}
