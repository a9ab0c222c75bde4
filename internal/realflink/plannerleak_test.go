//go:build realjars

package realflink

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/host"
	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// The real flink-table-planner_2.12 2.2.0 shaded into a job JAR (what the
// maven-shade-plugin writes when the planner is left in compile scope), in
// usrlib of the real 2.2.0 distribution: layout-planner-bundled refuses it
// with the real fix (issue 28). The same job without the planner does not
// get the finding.
func TestPlannerBundledInAJobJAR(t *testing.T) {
	const main = "org.apache.flink.connector.kafka.source.reader.fetcher.KafkaSourceFetcherManager"
	kafka := []string{jarPath(t, "flink-connector-kafka", "5.0.0-2.2"), jarPath(t, "kafka-clients", "4.2.0")}
	job := shadedJob(t, main, nil, append(kafka, jarPath(t, "flink-table-planner_2.12", "2.2.0"))...)
	got := allFindings(t, deepLayout(t, "2.2.0", nil, map[string][]byte{"job.jar": job}))
	var leak []admission.Finding
	for _, f := range got {
		if f.Rule == "layout-planner-bundled" {
			leak = append(leak, f)
		}
	}
	require.Len(t, leak, 1, "%v", got)
	f := leak[0]
	assert.Equal(t, admission.Error, f.Severity)
	assert.True(t, strings.HasSuffix(f.Path, "/usrlib/job.jar"), f.Path)
	assert.Contains(t, f.Message, "org.apache.flink.table.planner.codegen.CodeGeneratorContext, org.apache.flink.table.planner.codegen.ExprCodeGenerator")
	assert.Contains(t, f.Fix, "regenerate the job graph")
	assert.Contains(t, f.Fix, "leave flink-table-planner out of job.jar")

	plain := shadedJob(t, main, nil, kafka...)
	got = allFindings(t, deepLayout(t, "2.2.0", nil, map[string][]byte{"job.jar": plain}))
	for _, f := range got {
		assert.NotEqual(t, "layout-planner-bundled", f.Rule, f.Message)
	}
}

// allFindings is the deep decision's every finding on a layout.
func allFindings(t *testing.T, root string) []admission.Finding {
	t.Helper()
	facts, err := host.Gather(context.Background(), os.DirFS("/"), host.Settings{
		LibDir: root + "/opt/flink/lib", JavaHome: root + "/" + testkit.JavaHome, OS: "linux", Arch: "x86_64", Deep: true,
	}, nil)
	require.NoError(t, err)
	defer facts.Deep.Close()
	return admission.Decide(facts).Findings
}
