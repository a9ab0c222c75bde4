// Package memfs is a small read-only file system held in memory: a map
// from names to files, with directories, symbolic links, modes and times.
// The image tooling merges an image's layers into one (internal/image),
// and install lays the payloads it is about to write over the live lib
// (internal/install); both hand it to the entrypoint's own host code,
// which reads it as it reads a container's root.
//
// It is hand-written because the standard library's testing/fstest.MapFS,
// which has the same shape, is a test helper: importing it links package
// testing into the host CLI. No maintained library offers a read-only
// fs.FS with symbolic links (fs.ReadLinkFS) that takes the map as it is.
//
// Like MapFS, parent directories need not be listed: a name below a
// directory that is not in the map makes it exist, as a directory of mode
// 0555. Unlike MapFS, a symbolic link with an absolute target is followed
// from the root of the map (as the kernel does inside a container), and a
// chain of more than 40 links fails instead of recursing without end.
//
// What it does not do: write, watch, or copy data it is given (a file's
// Data is shared with the map; callers must not change the map while it
// is read).
package memfs
