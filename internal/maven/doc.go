// Package maven resolves artifacts by coordinates
// (group:artifact:version[:classifier]) the way a Maven user's setup says,
// without a repository host of its own: the local repository first
// (settings.xml's localRepository, default ~/.m2/repository), then the
// repositories given on the command line, else the mirrors and the active
// profiles' repositories of settings.xml, with the credentials of its
// <servers>. A download is checked against every checksum file the
// repository serves (.sha512, .sha256, .sha1; at least one must be there)
// and refused on a mismatch, naming the coordinates; what passes is stored
// in the local repository layout, with its .sha1, so Maven reuses it.
//
// settings.xml is read with encoding/xml: no maintained Go library reads
// Maven settings or resolves from Maven repositories (on the JVM that is
// Maven Resolver), and the handful of elements used here (localRepository,
// mirrors, servers, profiles, activeProfiles) do not warrant one.
//
// Deliberately not done: SNAPSHOT resolution through maven-metadata.xml
// (a SNAPSHOT is found only when it is in the local repository), transitive
// dependencies (payloads are self-contained), settings-security.xml
// password decryption (use ${env.NAME} in settings.xml), <proxies> (the
// HTTP(S)_PROXY environment variables apply), and profile activation other
// than activeByDefault and <activeProfiles>.
package maven
