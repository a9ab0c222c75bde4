package admission_test

import (
	"testing/fstest"

	"github.com/streamfusion/image-entrypoint/internal/testkit"
)

// A job JAR that bundles the planner's code generators (issue 28); the
// real planner shaded into a job JAR is internal/realflink's
// TestPlannerBundledInAJobJAR.
func init() {
	cases = append(cases, ruleCase{name: "a job bundles the planner", rule: "layout-planner-bundled", set: deep, root: func() fstest.MapFS {
		return job(testkit.Class{Name: "com/acme/Main"},
			testkit.Class{Name: "org/apache/flink/table/planner/codegen/ExprCodeGenerator"},
			testkit.Class{Name: "org/apache/flink/table/planner/codegen/CodeGeneratorContext"})
	}})
}
