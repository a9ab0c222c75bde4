// Package flatten reads what admission needs of an image's layers and
// lays them over each other into an fs.FS (an internal/memfs tree), so
// that the entrypoint's own host and admission code decides on an image
// without running it.
//
// Read reads each layer front to back into layer facts (facts.go):
// directories with their owners, links, whiteouts, small files such as
// JDK release files, and for every file below lib, usrlib and plugins
// what payload.Read learned from it (the JAR itself is read from a buffer
// or an unlinked spool file and dropped, after a Keeper, when there is
// one, took its copy). The facts of all layers are merged top to bottom
// into a View: a file system of stand-ins that host.Gather reads,
// answering JAR reads from the facts (View.ReadJAR). Links decide what a
// container reads and are known only once the layers are merged: when they
// lead outside what was kept (FLINK_HOME behind a link, a lib JAR linked
// into opt, Flink's config behind a link), the layers are read again
// keeping their targets (widen.go, at most three readings; most images
// need one). Directories a tar does not list are implied. Memory does not
// grow with the size of layers or JARs.
//
// Where the facts come from is a layers value: the image's blobs, or,
// with Options.Cache, a cache wrapped around them (read.go), as
// go-containerregistry's cache package wraps an image's layers. A layer's
// facts are cached by diff ID (and the format version and the directories
// asked for) in layercache; they are stored only after the layer's bytes
// were hashed and matched its diff ID, so a cached record is about the
// content that diff ID names, and a layer the cache knows is not read
// again (a saved tarball whose layer bytes were swapped under the same
// config is not detected then; loading it into an engine would fail its
// diff ID check). When the cache knows every layer, the layers are not
// even listed (listing a saved tarball hashes every blob for the
// manifest's digests): the config's diff IDs are the image.
//
// Every entry is bounded and checked before it is trusted (ErrLayer): names
// that climb out of the root or are not UTF-8 below the payload
// directories, files larger than maxKeptFile where a JAR is read, a layer
// whose bytes do not match its diff ID. FuzzScanLayer holds that no layer
// makes the scan panic or a name escape.
//
// Hand-written over go-containerregistry's mutate.Extract because that
// flattens whole files into a stream, where this package keeps only the
// facts admission needs of each layer, caches them per layer, and reads
// again what links show it missed.
package flatten
