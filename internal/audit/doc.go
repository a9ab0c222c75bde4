// Package audit judges what already runs in a Kubernetes cluster as the
// admission webhook would judge it now: every FlinkDeployment, every
// FlinkSessionJob on its cluster, and the Pods of standalone and native
// Flink clusters the operator does not manage (their roles as their argv
// says). It reads through the Kubernetes API, read-only (Read: list on
// flinkdeployments, flinksessionjobs and pods), and judges with the
// webhook's own judge (judge.Judge's Object and SessionJobOn over
// internal/verdict's cache), so an image is verified once per digest
// across the whole audit.
//
// What runs is not always what the spec says: a Pod reports the digest it
// was started from in status.containerStatuses[].imageID, and a tag may
// have moved since. Each resource is judged on the digests its Pods run
// and on its images as the spec names them now; when a tag points
// elsewhere the report says so and both are judged.
//
// A what-if (WhatIf) judges each resource again as if its images were
// replaced (OLD=NEW) or a JAR added to or removed from each image's lib:
// the new lib is a layer appended in memory on top of the image
// (go-containerregistry's mutate.Append), registered with the verdict
// cache (verdict.Cache.Register) and judged by the same calls. The report
// says, per resource, the verdict today and after, and the findings that
// flip.
//
// The package does not write to the API, does not read Secrets (registry
// credentials are the webhook's: a Docker config and mounted pull
// secrets), and does not judge the operator's own Deployments or
// ReplicaSets: the Pods they make are what runs. Hand-written here: only
// the parsing of a runtime's imageID (no maintained library parses the
// container runtimes' several forms; fuzzed), and the JUnit XML, written
// with encoding/xml.
package audit
