// Package jobjar fetches a FlinkSessionJob's JAR (spec.job.jarURI) for the
// admission webhook, the way the Flink Kubernetes Operator does before it
// uploads the JAR to the session cluster's JobManager: an http or https
// GET, followed through a bounded number of redirects (http and https
// only), within the caller's deadline (the review's) and a size limit,
// written to a temporary file while its SHA-256 is computed.
//
// What it guards: a response larger than Options.MaxBytes is refused as
// soon as its Content-Length says so, or when the body passes the limit
// (ErrTooLarge, naming the limit); TLS uses the system roots plus an
// optional CA file; the request headers of the session job
// (kubernetes.operator.user.artifacts.http.header, ParseHeaders) go to
// the jarURI's own host only, never to the host of a redirect, as the
// operator's HttpArtifactFetcher does; a connection to a link-local,
// loopback, multicast or unspecified address (a cloud metadata endpoint,
// the webhook's own pod) is refused at dial time, after name resolution,
// unless Options.AnyHost is set.
//
// What it remembers: per URI, the ETag or Last-Modified the server sent
// and the SHA-256 it served, so a later review asks with If-None-Match or
// If-Modified-Since and a 304 answers with the known digest without a
// byte of the body (Fetch with Known). Verdicts on a JAR are kept by
// whoever judges it (internal/verdict, by image digest and JAR digest),
// not here.
//
// What it does not do: other schemes. The operator reads anything that is
// not http or https through Flink's FileSystem inside the operator's own
// pod (file://, and s3://, gs://, abfs://, hdfs:// with their plugins);
// `local://` names no file system there (Flink answers "Could not find a
// file system implementation for scheme 'local'"), and none of them is a
// path in the cluster's image. Classify says which of these a URI is; the
// webhook warns that such a JAR is not judged. net/http, crypto/tls and
// crypto/sha256 do the work: nothing here parses HTTP or TLS.
package jobjar
