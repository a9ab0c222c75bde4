// Package image decides on container images for the image tooling
// (cmd/streamfusion) as the entrypoint would when a container of them
// starts, without running them, and bakes StreamFusion images by
// appending one layer. Its rooms: source opens images, flatten reads and
// merges their layers, deep holds the JARs' bytes for the deep check,
// layercache stores what a run learned, sink writes what bake made.
//
// Verify and Bake read an image's layers with package flatten into layer
// facts and a merged view of stand-ins (the layer cache wrapped around the
// image's layers there); for the deep check (VerifyOptions.Deep,
// JobJARs, or an image whose config sets STREAMFUSION_LINKAGE=true), a
// deep.Copies keeps the JARs' bytes as the layers stream by and
// deep.Copies.Read makes the root the deep gathering opens them in. The
// entrypoint's own check (admit.Check) decides on that view, with the image
// guard (guard.go) as the image's own rule. This package holds the
// verdict's side: the options and the run's state (options.go: a run never
// writes its options), the decision (verify.go), the caches of verdicts
// (deepcache.go, views.go) and bake.
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
// JARs in a copy of the kept tree (deep.FS.With). It does not keep the class indexes the
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
