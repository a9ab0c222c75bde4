package admission

import (
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/payload"
)

// plannerCodegen is the package of the planner's code generators, which
// only the planner itself holds (the Hive connector's classes under
// org/apache/flink/table/planner/delegation/hive are its own dialect, not
// the planner).
const plannerCodegen = "org/apache/flink/table/planner/codegen/"

// plannerBundled (issue 28): a job JAR in usrlib, or a lib JAR other than
// the planner's own, that bundles Flink's table planner (its code
// generators among its classes). TaskManagers restore generated Calc and
// filter bindings without the planner; an ExprCodeGenerator or
// CodeGeneratorContext linkage failure there means the compiler and runtime
// payloads do not match, which a planner copied into the job does not fix:
// it is a second planner, of whatever release it was built with, beside
// the host's. Deep facts only: the class index says what a JAR holds.
func plannerBundled(v *view) []Finding {
	if v.Deep == nil || v.Deep.Err != nil {
		return nil
	}
	var out []Finding
	check := func(j *payload.JAR, a *payload.Archive, usrlib bool) {
		if a == nil || j == nil {
			return
		}
		base := path.Base(j.Path)
		if !usrlib && (isPlannerLoader(base) || isPlannerScala(base)) {
			return
		}
		var planner, codegen int
		var examples []string
		for name := range a.Classes {
			if !strings.HasPrefix(name, "org/apache/flink/table/planner/") {
				continue
			}
			planner++
			if strings.HasPrefix(name, plannerCodegen) {
				codegen++
				if strings.HasSuffix(name, "/ExprCodeGenerator") || strings.HasSuffix(name, "/CodeGeneratorContext") {
					examples = append(examples, javaName(name))
				}
			}
		}
		if codegen == 0 {
			return
		}
		where := "lib, beside the host's planner"
		leave := "remove " + base + " from lib"
		if usrlib {
			where = "the job's class loader, child of lib"
			leave = "leave flink-table-planner out of " + base + " (provided scope in its build)"
		}
		ex := ""
		if len(examples) > 0 {
			slices.Sort(examples)
			ex = " (" + strings.Join(examples, ", ") + " among them)"
		}
		out = append(out, Finding{Path: j.Path,
			Message:  base + " bundles Flink's table planner, its code generators" + ex + " included",
			Found:    fmt.Sprintf("%s under org.apache.flink.table.planner, %d of them under %s, loaded by %s", plural(planner, "class"), codegen, javaName(strings.TrimSuffix(plannerCodegen, "/")), where),
			Required: "the planner only as the host's own (flink-table-planner-loader in lib, or flink-table-planner_2.12 moved there from opt)",
			Fix: leave + "; an ExprCodeGenerator or CodeGeneratorContext linkage failure on a TaskManager means the compiler and runtime payloads do not match: " +
				"install the same StreamFusion release and Flink line where the job graph is compiled and where it runs, and regenerate the job graph (adding the whole planner to worker job resources is not the fix)"})
	}
	for i, a := range v.Deep.Lib {
		// With a baked verdict and usrlib as it was baked, lib's class
		// index is read only for the plugins: lib stays the verdict's.
		if i < len(v.Classpath) && (v.Deep.Baked == nil || len(v.Deep.Usrlib) > 0) {
			check(v.Classpath[i], a, false)
		}
	}
	for i, a := range v.Deep.Usrlib {
		if i < len(v.Usrlib) {
			check(v.Usrlib[i], a, true)
		}
	}
	return out
}
