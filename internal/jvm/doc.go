// Package jvm models the class loaders Flink runs a job's classes in: lib's
// loader and usrlib's, child-first over lib except for the parent-first
// patterns flink-dist defines. Package admission judges what the model
// finds.
package jvm
