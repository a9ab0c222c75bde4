// Package verdict verifies images by reference and remembers the verdict
// by digest: an image digest names its content, so its verdict never
// changes and a known image answers without reading a layer. A tag is
// resolved with one manifest HEAD per call; a digest reference whose
// verdict is known needs no registry at all. Concurrent calls for one
// image share one verification (singleflight), which runs detached from
// any one caller's deadline so that a caller that gives up still leaves
// the verdict for the next.
//
// The verification itself is internal/image's Verify, the entrypoint's own
// rules over the facts read from the image's layers; with the layer-facts
// cache (Options.Read), a cold verdict of an image whose base layers are
// known reads only its new layers.
//
// VerifyJob is the same with a session job's JAR placed in the image's
// usrlib for the deep check (Options.Deep): those verdicts are kept by
// image digest and JAR digest, so a JAR judged on a cluster's image before
// answers without a byte of either. The JAR's file is the caller's; the
// cache releases it (JobJAR.Release) when the verification that reads it
// ends, which may be after the caller gave up. With ViewsDeep as
// Options.Deep, a new JAR on an image deep-checked before is checked on
// the image's lib kept by image.Views instead of reading its layers again.
//
// A verification is detached from its callers' deadlines and fills the
// cache for their retries; a caller that stops waiting gets a
// PendingError saying what the verification was doing (resolving a tag,
// waiting for the spool budget). Its waits for the spool budget end with
// the last caller waiting (spool.WithWait), so a verification nobody
// waits for holds no more of the budget than it had. Registry retries are
// 100 ms and 200 ms apart (RetryBackoff), within a review's deadline;
// registry and transport errors are never kept, only verdicts (an image
// whose settings or layer entries the rules refuse is one).
//
// Credentials come from a keychain per call: the Docker config
// (authn.DefaultKeychain, DOCKER_CONFIG) and pull-secret files (Secrets).
package verdict
