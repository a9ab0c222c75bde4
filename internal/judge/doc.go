// Package judge judges one Kubernetes object as the StreamFusion entrypoint
// would judge its images at start: a FlinkDeployment, a Pod (any workload
// internal/deploy reads), or a FlinkSessionJob on the FlinkDeployment it
// runs on, with its JAR fetched and deep-checked on that cluster's images.
// The admission webhook answers reviews with it and the audit reports what
// already runs with it, so the two cannot disagree.
//
// An Outcome is refused (the rules refuse an image, the set checks refuse
// the cluster, the session job names no cluster or a JAR that is gone),
// unverified (an image not read or not verified in time, a JAR not
// fetched: the caller's failure policy decides, the judge has none), or
// admitted, with its findings, warnings and each container's image.
//
// Images come from internal/verdict's cache, verified at most Judge.Reads
// at once per object, a digest once whatever repository names it. A
// session job's cluster is read through Clusters (APIClusters: client-go's
// informer cache of the FlinkDeployments, get/list/watch only); its JAR
// through internal/jobjar (http and https; the schemes the operator reads
// in its own pod are admitted with a warning).
//
// The package knows nothing of HTTP, AdmissionReview or metrics: an
// ImageVerdict keeps the error that stopped an image (Err, Late) for the
// webhook to count by cause.
package judge
