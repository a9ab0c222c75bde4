// Package image reads and writes container images for the image tooling
// (cmd/streamfusion) with go-containerregistry: it merges what admission
// needs of an image's layers into an fs.FS (an internal/memfs tree), so
// the entrypoint's own host and admission code decides on an image
// without running it, and it bakes StreamFusion images by appending one
// layer.
//
// Verify and Bake read each layer front to back into layer facts
// (facts.go): directories with their owners, links, whiteouts, small files
// such as JDK release files, and for every file below lib, usrlib and
// plugins what payload.Read learned from it (the JAR itself is read from a
// buffer or an unlinked spool file and dropped). The facts of all layers
// are merged top to bottom into a file system of stand-ins that host.Gather
// reads, answering JAR reads from the facts. Links decide what a container
// reads and are known only once the layers are merged: when they lead
// outside what was kept (FLINK_HOME behind a link, a lib JAR linked into
// opt, Flink's config behind a link), the layers are read again keeping
// their targets (widen.go, at most three readings; most images need one).
// Directories a tar does not list are implied. Memory does not grow with the
// size of layers or JARs. A layer's facts are cached by diff ID (and the
// format version and the directories asked for) in layercache; they are
// stored only after the layer's bytes were hashed and matched its diff ID,
// so a cached verdict is about the content that diff ID names, and a layer
// the cache knows is not read again (a saved tarball whose layer bytes were
// swapped under the same config is not detected then; loading it into an
// engine would fail its diff ID check). When the cache knows every layer,
// the layers are not even listed (listing a saved tarball hashes every
// blob for the manifest's digests): the config's diff IDs are the image.
//
// The deep check (VerifyOptions.Deep; deep.go) needs the JARs' bytes,
// which the facts leave out: while the layers are read, every JAR read is
// also copied into a private temporary directory (a layer's first entry of
// a name, the one the merge keeps); once merged, the copies of the lib and
// usrlib JARs the image ends with (and of the plugin folders the check
// judges: those with a JAR not the host's own) are kept and the rest
// deleted, and the
// layers the cache answered are read again for theirs (checked against
// their diff IDs again). The merged tree, with those names answered from
// the copies, is the root host's deep gathering opens JARs in with
// payload.OpenArchive, as in a container; the same rules decide. The
// directory is removed before Verify or Bake returns, on error and
// cancellation too. Job JARs of the machine (VerifyOptions.JobJARs) are
// placed in usrlib for the check. The bytes go to disk, bounded (ErrDeepLimit:
// JARs, bytes, central directory entries); memory grows by the class
// indexes and the parsed classes only.
//
// The deep check's result is cached beside the layer facts (deepcache.go):
// the findings the deep facts added to the decision, keyed by the diff IDs
// in order, the image's Env and platform, the formats, the rule catalogue
// and this build's Go build ID. A deep verify whose key is there keeps no
// copy and reads no layer for the deep check: the decision on the layers'
// facts, the cached findings put where Decide puts them. An entry that does
// not decode exactly (its version, key, checksum, rules, order, bounds) is
// never applied; the check then runs in full and replaces it. Job JARs are
// never cached this way (Views keeps their image's reading instead).
//
// Views (views.go) keeps that merged tree and its directory of copies for
// a few image digests (by count and bytes, least recently used out, the
// directory removed on eviction and Close) so that job JARs checked one
// after another on one image read its layers once: each check places its
// JARs in a copy of the kept tree. It does not keep the class indexes the
// deep gathering builds; each check builds them again.
//
// Bake keeps the base's blobs as they are (package source reads saved
// tarballs without recompressing their layers) and compresses only the new
// layer; package sink writes the result. What this package does not do:
// open an IMAGE argument (source), write an image anywhere (sink), pull or
// push by itself beyond go-containerregistry's remote package, or run
// anything from an image.
//
// The entrypoint binary never imports this package: it links no registry,
// HTTP or TLS code.
package image
