// Package realflink holds the tests that run on real Flink: the
// distributions of PyPI's PyFlink packages (scripts/fetch-flink-dist) and the
// few JARs they lack, by Maven coordinates (testdata/coordinates.txt), all
// cached outside the repository. They run with `make test-real` (build tag
// realjars), never in the plain `make test`, which must work offline.
package realflink
