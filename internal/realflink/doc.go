// Package realflink holds the tests that run on real Flink: the
// distributions of PyPI's PyFlink packages (scripts/fetch-flink-dist) and the
// few JARs they lack, by Maven coordinates (testdata/coordinates.txt), all
// cached outside the repository. They run with `make test-real` (build tag
// realjars), never in the plain `make test`, which must work offline.
//
// The linkage tests (issue 19, `make test-linkage`, build tags realjars and
// linkageoracle) add a corpus of real connectors, formats and integrations
// (testdata/linkage-coordinates.txt), job JARs built by the test, and the
// JVM as the oracle: testdata/oracle/LinkageOracle.java, compiled with javac
// against ASM, arranges Flink's class loaders over the same JARs and
// resolves references as the JVM does. They hold the project's linkage
// findings to it; they do not test the engine's internals.
package realflink
