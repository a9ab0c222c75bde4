// Package baked is the deep verdict baked into an image: what `streamfusion
// bake` (and `install`) concluded of the shadowing and linkage rules on the
// lib it produced, and the class index of that classpath, so that a start
// applies the verdict for the price of the JARs' fingerprints and judges
// only the JARs added to usrlib since, against the index, without reading
// flink-dist again.
//
// The file (host.VerdictFile inside lib) is versioned and checksummed in
// two sections: a header (the rule catalogue it was judged with, the JDK
// major, the parent-first patterns, each JAR's path and
// payload.Fingerprint, the deep rules' findings) that every start reads,
// and the class index (per lib JAR: every class with the CRC and size its
// directory records, its supertypes and its members, the strings in one
// table) that only a start with new usrlib JARs reads. The index decodes a
// class's members only when the linkage rules ask for that class.
//
// The format is ours: it is a handful of varint-prefixed lists, and no
// maintained library encodes them without a schema compiler or a
// reflection pass that would cost a start more than the reading. Decode
// is bounded by the bytes it is given and fuzzed (FuzzDecode).
//
// It encodes and decodes; it does not decide what a verdict covers (host
// compares the fingerprints) nor judge (admission does).
package baked
