package deploy

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Flink Kubernetes Operator's resources, as far as this package reads
// them, with the operator's JSON field names (flink.apache.org/v1beta1).
// spec.podTemplate and the per-component podTemplate are Pods in the
// operator's schema; only their metadata and spec matter here, which a
// PodTemplateSpec decodes (apiVersion and kind are ignored).

type flinkDeployment struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta   `json:"metadata"`
	Spec            flinkDeploymentSpec `json:"spec"`
}

type flinkDeploymentSpec struct {
	Image        string `json:"image"`
	FlinkVersion string `json:"flinkVersion"`
	Mode         string `json:"mode"` // native (default) or standalone
	// FlinkConfiguration is written by the operator into the config file
	// of the pods it starts: flat keys with string values, or (newer
	// operators) nested objects.
	FlinkConfiguration map[string]any          `json:"flinkConfiguration"`
	PodTemplate        *corev1.PodTemplateSpec `json:"podTemplate"`
	JobManager         *componentSpec          `json:"jobManager"`
	TaskManager        *componentSpec          `json:"taskManager"`
	Job                *struct {
		JarURI string   `json:"jarURI"`
		Args   []string `json:"args"`
	} `json:"job"`
}

type componentSpec struct {
	PodTemplate *corev1.PodTemplateSpec `json:"podTemplate"`
}

type flinkSessionJob struct {
	metav1.TypeMeta `json:",inline"`
	Metadata        metav1.ObjectMeta `json:"metadata"`
	Spec            struct {
		DeploymentName     string         `json:"deploymentName"`
		FlinkConfiguration map[string]any `json:"flinkConfiguration"`
		Job                *struct {
			JarURI string `json:"jarURI"`
		} `json:"job"`
	} `json:"spec"`
}

// composeFile is the part of a compose file read here.
type composeFile struct {
	Services map[string]composeService `json:"services"`
}

type composeService struct {
	Image      string `json:"image"`
	Platform   string `json:"platform"`
	Command    any    `json:"command"`    // a string or a list
	Entrypoint any    `json:"entrypoint"` // a string or a list
}
