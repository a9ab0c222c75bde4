package deploy

import (
	"github.com/streamfusion/image-entrypoint/internal/admission"
	"github.com/streamfusion/image-entrypoint/internal/roles"
)

// Group is the part a container plays in a Flink cluster.
type Group string

// Groups, as the set checks compare them.
const (
	GroupJobManager  Group = "jobmanager"
	GroupTaskManager Group = "taskmanager"
	GroupClient      Group = "client"
	GroupOther       Group = "other" // history server, or a Flink image whose argv names no role
)

// GroupOf maps the entrypoint's role to its group.
func GroupOf(r roles.Role) Group {
	switch r {
	case roles.JobManager, roles.Application, roles.K8sJobManager:
		return GroupJobManager
	case roles.TaskManager, roles.K8sTaskManager:
		return GroupTaskManager
	case roles.Client:
		return GroupClient
	}
	return GroupOther
}

// Resource is one object of the input: a Kubernetes document or a compose
// service set.
type Resource struct {
	Kind      string `json:"kind"`
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	Source    string `json:"source"` // file and document number
	// Cluster groups the resources whose containers must agree: a
	// FlinkDeployment and its session jobs, native Kubernetes objects by
	// their "app" label, a compose file.
	Cluster string `json:"cluster"`
	// FlinkVersion is the operator's spec.flinkVersion (v2_2, v1_18).
	FlinkVersion string `json:"flinkVersion,omitempty"`
	// Config is a FlinkDeployment's spec.flinkConfiguration, flattened to
	// Flink's keys in key order; nil when it has none.
	Config []admission.Entry `json:"flinkConfiguration,omitempty"`
	// Target is the FlinkDeployment a FlinkSessionJob runs on.
	Target string `json:"deploymentName,omitempty"`
	// JarURI is a FlinkSessionJob's spec.job.jarURI: the JAR the operator
	// fetches and uploads to that FlinkDeployment's JobManager.
	JarURI string `json:"jarURI,omitempty"`
	// JobArgs are a FlinkDeployment's spec.job.args: the arguments of its
	// application's main class (a SQL runner's .sql file).
	JobArgs []string `json:"jobArgs,omitempty"`
	// JobJarURI is a FlinkDeployment's spec.job.jarURI: the operator adds
	// it to pipeline.jars.
	JobJarURI  string      `json:"jobJarURI,omitempty"`
	Containers []Container `json:"containers"`
	// Notes say what was seen but not checked (sidecars, a Pod template
	// without a Flink container).
	Notes []string `json:"notes,omitempty"`
}

// ID names the resource in reports: Kind namespace/name.
func (r *Resource) ID() string {
	if r.Namespace != "" {
		return r.Kind + " " + r.Namespace + "/" + r.Name
	}
	return r.Kind + " " + r.Name
}

// Container is one Flink container of a resource.
type Container struct {
	Name  string     `json:"name"`
	Image string     `json:"image"`
	Role  roles.Role `json:"role"` // what the entrypoint will classify
	Group Group      `json:"group"`
	// Platform is OS/ARCH from the node selector (kubernetes.io/os,
	// kubernetes.io/arch) or compose's platform; empty when nothing pins it.
	Platform string `json:"platform,omitempty"`
	// PullSecrets are the pod's imagePullSecrets names.
	PullSecrets []string `json:"pullSecrets,omitempty"`
	// Mounts are the mount paths of the container's volumes: what is
	// below them is not the image's.
	Mounts []string `json:"mounts,omitempty"`
}
