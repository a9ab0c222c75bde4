// Package realflink holds the tests that run admission on real Flink
// release JARs, fetched by Maven coordinates (testdata/coordinates.txt) into
// a cache outside the repository. They run with `make test-real` (build tag
// realjars), never in the plain `make test`, which must work offline.
package realflink
