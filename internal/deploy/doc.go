// Package deploy reads what Kubernetes or docker compose will run and
// finds every Flink container in it: Kubernetes YAML (multi-document;
// FlinkDeployment and FlinkSessionJob of the Flink Kubernetes Operator,
// Deployment, StatefulSet, Job, Pod) and compose files. For each container
// it names the image, the role the entrypoint will classify from the
// container's argv (JobManager, TaskManager, client), the platform the
// node selector pins, and the cluster it belongs to. It then checks the
// set: one Flink release, one StreamFusion release and build, and one JDK
// major across a cluster, and spec.flinkVersion consistent with the images.
//
// YAML is decoded with go.yaml.in/yaml/v3 (document splitting) and
// sigs.k8s.io/yaml into the k8s.io/api types; the operator's CRDs have no
// maintained Go types outside its Java code, so the few fields read here
// are declared in crd.go with the operator's JSON names.
//
// The package does no I/O beyond reading the files it is given and never
// verifies images: callers verify each image (internal/verdict) and hand
// the facts to CheckSet, which is pure.
package deploy
