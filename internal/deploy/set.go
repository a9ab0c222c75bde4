package deploy

import (
	"cmp"
	"fmt"
	"path"
	"slices"
	"sort"
	"strings"

	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/flinkconf"
)

// ImageFacts are what the set checks compare, from one image's decision.
type ImageFacts struct {
	Flink        string `json:"flink,omitempty"`
	Line         string `json:"line,omitempty"`
	StreamFusion string `json:"streamfusion,omitempty"`
	Build        string `json:"build,omitempty"`
	JDK          string `json:"jdk,omitempty"`
	JDKMajor     int    `json:"jdkMajor,omitempty"`
	// RunTime is what the image's Flink resolves at run time (its file
	// systems, plugins, reporter factories): a FlinkDeployment's own
	// configuration is judged against it.
	RunTime *admission.FileSystems `json:"runTime,omitempty"`
	// SQL are the image's table-factory-missing findings on the SQL files
	// of its usrlib: a FlinkDeployment whose job's arguments name one of
	// them runs it.
	SQL []admission.Finding `json:"sql,omitempty"`
}

// FactsOf takes the facts from an image's decision: the Flink release, the
// StreamFusion release and build of its loader and core, the JDK major.
func FactsOf(d *admission.Decision) ImageFacts {
	f := ImageFacts{Flink: d.Flink, Line: d.Line, JDK: d.JDK, RunTime: d.RunTime}
	if f.Line == "" {
		f.Line = admission.LineOf(d.Flink)
	}
	if j, err := admission.ParseJava(d.JDK); err == nil {
		f.JDKMajor = j.Major
	}
	for _, fd := range d.Findings {
		if fd.Rule == "table-factory-missing" {
			f.SQL = append(f.SQL, fd)
		}
	}
	for _, id := range d.Payloads {
		if id.Kind != admission.KindLoader && id.Kind != admission.KindCore {
			continue
		}
		if f.StreamFusion == "" {
			f.StreamFusion = id.Version
		}
		if f.Build == "" {
			f.Build = id.BuildID
		}
	}
	return f
}

// Member is one verified container of the set.
type Member struct {
	Resource  *Resource
	Container Container
	Facts     ImageFacts
}

// Finding is a problem of the set, not of one image.
type Finding struct {
	Rule     string             `json:"rule"`
	Severity admission.Severity `json:"severity"`
	Cluster  string             `json:"cluster"`
	Message  string             `json:"message"`
	Fix      string             `json:"fix"`
}

// Text is the finding as one line.
func (f Finding) Text() string { return f.Message + " (fix: " + f.Fix + ")" }

// Set rules.
const (
	RuleFlinkRelease = "deploy-one-flink-release"
	RuleStreamFusion = "deploy-one-streamfusion-build"
	RuleJDK          = "deploy-one-jdk-major"
	RuleFlinkVersion = "deploy-flink-version"
	RuleSessionJob   = "deploy-session-target"
)

// Rules are the set rules' part of the rule catalogue. The config rules
// CheckSet also runs on spec.flinkConfiguration are the entrypoint's.
var Rules = []admission.Rule{
	{ID: RuleFlinkRelease, Severity: admission.Error, Tier: admission.TierDeployment, Doc: "The images of one cluster (client, JobManager, TaskManagers) hold different Flink releases."},
	{ID: RuleStreamFusion, Severity: admission.Error, Tier: admission.TierDeployment, Doc: "The images of one cluster hold different StreamFusion releases or builds."},
	{ID: RuleJDK, Severity: admission.Error, Tier: admission.TierDeployment, Doc: "The images of one cluster run different JDK majors."},
	{ID: RuleFlinkVersion, Severity: admission.Error, Tier: admission.TierDeployment, Doc: "A FlinkDeployment's spec.flinkVersion is not the Flink line of its images (the operator writes the other line's config file)."},
	{ID: RuleSessionJob, Severity: admission.Warning, Tier: admission.TierDeployment, Doc: "A FlinkSessionJob runs on a FlinkDeployment that is not among the resources checked, so the images it runs on were not checked."},
}

// CheckSet compares the members of each cluster: one Flink release, one
// StreamFusion release and build, one JDK major across client, JobManager
// and TaskManagers; spec.flinkVersion against the images' Flink line; and
// every FlinkSessionJob's FlinkDeployment present. Facts left empty (an
// image that could not be read, or has no StreamFusion) are not compared:
// the image's own refusal says why. Pure: no I/O.
func CheckSet(resources []*Resource, members []Member) []Finding {
	var out []Finding
	byCluster := map[string][]Member{}
	var clusters []string
	for _, m := range members {
		c := m.Resource.Cluster
		if _, ok := byCluster[c]; !ok {
			clusters = append(clusters, c)
		}
		byCluster[c] = append(byCluster[c], m)
	}
	sort.Strings(clusters)
	for _, c := range clusters {
		ms := byCluster[c]
		out = append(out, same(c, ms, RuleFlinkRelease, "Flink releases", func(f ImageFacts) string { return f.Flink },
			"build every image of the cluster from the same Flink release")...)
		out = append(out, same(c, ms, RuleStreamFusion, "StreamFusion releases and builds", func(f ImageFacts) string {
			if f.StreamFusion == "" {
				return ""
			}
			return f.StreamFusion + " (build " + cmp.Or(f.Build, "none") + ")"
		}, "bake every image of the cluster with the same StreamFusion payloads (streamfusion bake with the same --payload set)")...)
		out = append(out, same(c, ms, RuleJDK, "JDK majors", func(f ImageFacts) string {
			if f.JDKMajor == 0 {
				return ""
			}
			return fmt.Sprint(f.JDKMajor)
		}, "use base images of one Java major for the client, the JobManager and the TaskManagers")...)
		for _, m := range ms {
			want := operatorLine(m.Resource.FlinkVersion)
			if want == "" || m.Facts.Line == "" || want == m.Facts.Line {
				continue
			}
			out = append(out, Finding{Rule: RuleFlinkVersion, Severity: admission.Error, Cluster: c,
				Message: fmt.Sprintf("%s: spec.flinkVersion is %s but %s's image %s holds Flink %s (line %s)",
					m.Resource.ID(), m.Resource.FlinkVersion, m.Container.Role, m.Container.Image, m.Facts.Flink, m.Facts.Line),
				Fix: fmt.Sprintf("set spec.flinkVersion to v%s, or use an image of Flink %s", strings.ReplaceAll(m.Facts.Line, ".", "_"), want)})
		}
	}
	out = append(out, checkConfigs(members)...)
	out = append(out, checkJobSQL(members)...)
	deployments := map[string]bool{}
	for _, r := range resources {
		if r.Kind == "FlinkDeployment" {
			deployments[r.Cluster] = true
		}
	}
	for _, r := range resources {
		if r.Kind == "FlinkSessionJob" && !deployments[r.Cluster] {
			out = append(out, Finding{Rule: RuleSessionJob, Severity: admission.Warning, Cluster: r.Cluster,
				Message: fmt.Sprintf("%s runs on FlinkDeployment %s, which is not in the input: the images it runs on were not checked", r.ID(), r.Cluster),
				Fix:     "verify the session job together with its FlinkDeployment"})
		}
	}
	return out
}

// same reports a cluster whose members disagree on one fact, naming each
// value with the roles and images that have it.
func same(cluster string, ms []Member, rule, what string, value func(ImageFacts) string, fix string) []Finding {
	who := map[string][]string{}
	var values []string
	for _, m := range ms {
		v := value(m.Facts)
		if v == "" {
			continue
		}
		if _, ok := who[v]; !ok {
			values = append(values, v)
		}
		who[v] = appendNew(who[v], fmt.Sprintf("%s %s", m.Container.Group, m.Container.Image))
	}
	if len(values) < 2 {
		return nil
	}
	sort.Strings(values)
	var parts []string
	for _, v := range values {
		parts = append(parts, v+" in "+strings.Join(who[v], ", "))
	}
	return []Finding{{Rule: rule, Severity: admission.Error, Cluster: cluster,
		Message: fmt.Sprintf("cluster %s mixes %s: %s; one is required across client, JobManager and TaskManagers", cluster, what, strings.Join(parts, "; ")),
		Fix:     fix}}
}

// operatorLine maps the operator's FlinkVersion (v1_18, v2_2) to a line.
func operatorLine(v string) string {
	s, ok := strings.CutPrefix(strings.TrimSpace(v), "v")
	if !ok {
		return ""
	}
	return strings.ReplaceAll(s, "_", ".")
}

// checkConfigs judges each FlinkDeployment's flinkConfiguration with the
// config rules (admission.JudgeConfig), against the release of each
// container's image and for its role: the operator writes it into the
// config file of the pods it starts. A finding shared by the JobManager and
// the TaskManager is reported once.
func checkConfigs(members []Member) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, m := range members {
		if m.Resource.Config == nil || m.Facts.Flink == "" {
			continue
		}
		c := admission.Config{Role: string(m.Container.Role), File: "spec.flinkConfiguration", Entries: m.Resource.Config}
		if admission.IsTaskManager(c.Role) {
			c.JVMOptions = flinkconf.TaskManagerJVM(c.Entries, nil)
		}
		for _, f := range admission.JudgeConfig(m.Facts.Flink, m.Facts.StreamFusion != "", c, m.Facts.RunTime) {
			msg := fmt.Sprintf("%s: %s: found %s, required %s", m.Resource.ID(), f.Message, f.Found, f.Required)
			if seen[f.Rule+msg] {
				continue
			}
			seen[f.Rule+msg] = true
			out = append(out, Finding{Rule: f.Rule, Severity: f.Severity, Cluster: m.Resource.Cluster, Message: msg,
				Fix: strings.ReplaceAll(f.Fix, "config file or FLINK_PROPERTIES", "spec.flinkConfiguration")})
		}
	}
	return out
}

// checkJobSQL judges the SQL files a FlinkDeployment's job is given (a
// .sql path in spec.job.args, or in $internal.application.program-args of
// its flinkConfiguration) as the entrypoint judges a file its process is
// given: a table-factory-missing finding the image's check made a warning
// only because nothing named the file is an error for the deployment that
// names it. What else keeps it a warning (a JAR the SQL or the
// configuration adds, a computed identifier) still does, and so does
// pipeline.jars or pipeline.classpaths in the flinkConfiguration.
func checkJobSQL(members []Member) []Finding {
	var out []Finding
	seen := map[string]bool{}
	for _, m := range members {
		named := JobSQLFiles(m.Resource)
		if len(named) == 0 || len(m.Facts.SQL) == 0 || m.Container.Group != GroupJobManager {
			continue // the JobManager runs an application's SQL
		}
		adds := ""
		for _, k := range admission.AddedJARKeys {
			if e, ok := flinkconf.Last(m.Resource.Config, k); ok && strings.TrimSpace(e.Value) != "" {
				adds = k
			}
		}
		for _, f := range m.Facts.SQL {
			base, unnamed := strings.CutSuffix(f.Message, admission.SQLUnnamed)
			if !named[f.Path] || !unnamed || mounted(m.Container.Mounts, f.Path) {
				continue // a volume's file is not the image's
			}
			sev, msg := admission.Error, fmt.Sprintf("%s: %s, the SQL file spec.job.args names: %s", m.Resource.ID(), f.Path, base)
			switch {
			case adds != "":
				sev, msg = admission.Warning, msg+", unless a JAR of "+adds+" (spec.flinkConfiguration) answers it"
			case !inUsrlibOf(m.Resource.JobJarURI, f.Path):
				// The job's JAR (the operator puts it in pipeline.jars) is
				// not one the image's check read: it may bundle the factory.
				sev, msg = admission.Warning, msg+", unless the job's JAR "+m.Resource.JobJarURI+" (spec.job.jarURI) answers it"
			}
			if seen[msg] {
				continue
			}
			seen[msg] = true
			out = append(out, Finding{Rule: f.Rule, Severity: sev, Cluster: m.Resource.Cluster,
				Message: msg + ": found " + f.Found + ", required " + f.Required, Fix: f.Fix})
		}
	}
	return out
}

// NeedsImageSQL says whether a container reads one of a job's SQL files
// from its image: one not below a volume it mounts.
func NeedsImageSQL(c Container, files map[string]bool) bool {
	for f := range files {
		if !mounted(c.Mounts, f) {
			return true
		}
	}
	return false
}

// mounted says whether a volume mounted at one of mounts covers p.
func mounted(mounts []string, p string) bool {
	for _, m := range mounts {
		if p == m || strings.HasPrefix(p, strings.TrimSuffix(m, "/")+"/") {
			return true
		}
	}
	return false
}

// inUsrlibOf says whether a job's jarURI is a JAR the image's check read
// with the SQL file at sql: none, or a local:// JAR in the usrlib that
// holds the file.
func inUsrlibOf(jarURI, sql string) bool {
	if jarURI == "" {
		return true
	}
	p, ok := strings.CutPrefix(jarURI, "local://")
	i := strings.Index(sql, "/usrlib/")
	return ok && i >= 0 && strings.HasPrefix(path.Clean(p), sql[:i+len("/usrlib/")])
}

// JobSQLFiles are the absolute .sql paths a resource's job is given.
func JobSQLFiles(r *Resource) map[string]bool {
	args := r.JobArgs
	if e, ok := flinkconf.Last(r.Config, "$internal.application.program-args"); ok {
		args = append(slices.Clone(args), strings.Split(e.Value, ";")...)
	}
	out := map[string]bool{}
	for _, a := range args {
		if a = strings.TrimSpace(a); path.IsAbs(a) && strings.HasSuffix(a, ".sql") {
			out[path.Clean(a)] = true
		}
	}
	return out
}
