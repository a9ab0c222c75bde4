// Package payload reads JAR files as far as admission needs and no
// further, and concludes what the JVM would: the central directory (read
// in chunks through one reused buffer, never mapped or loaded whole, and
// hashed as it is read for the JAR's Fingerprint) with java.util.jar.JarFile's
// rules, the manifest JarFile reads (parsed as java.util.jar.Manifest parses
// it), flink-dist's version resource, the marks that make a JAR StreamFusion
// content, and a loader's nested core, admitted only where JarFile's and
// JarInputStream's readings agree on its manifest. docs/jar-reading.md
// states the policy; a differential corpus read by a real JVM holds the
// package to it (make test-jvm).
//
// CRC-32 is checked where the JVM checks it: not for a JAR read through its
// central directory (JarFile never checks it, so a lib JAR whose manifest
// fails its CRC still loads), but for the entries a nested core's stream
// reads (JarInputStream checks them, so a nested manifest that fails its
// CRC is refused).
//
// It is hand-written rather than built on archive/zip because archive/zip
// allocates a record per entry up front (flink-dist has ~45,000), reads the
// whole directory before the first entry, and differs from the JVM where it
// matters here (it checks CRCs and entry counts, and trusts end records and
// directory offsets the JVM does not).
//
// The native libraries of a payload are read, when asked for
// (Options.Native), with the standard library's debug/elf: each inflated
// alone within a byte budget, and only their facts kept (native.go).
//
// It knows ZIP and JAR; it does not know the admission rules.
package payload
