// Package payload reads JAR files as far as admission needs and no
// further: the central directory (walked through one reused buffer, never
// loaded whole), the main section of the manifest, flink-dist's version
// resource, the marks that make a JAR StreamFusion content, and a loader's
// nested core (read in place when stored, inflated only up to its manifest
// when deflated). It refuses what it cannot trust (truncated or prepended
// archives, ambiguous manifests, local headers that disagree with the
// directory, special files named *.jar) with an error saying why.
//
// It knows ZIP and JAR; it does not know the admission rules.
package payload
