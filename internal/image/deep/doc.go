// Package deep holds the bytes of an image's JARs for the deep check
// (shadowing, linkage-*, bytecode-version), which the layers' facts
// (package flatten) leave out.
//
// While the layers are read for their facts, Copies (a flatten.Keeper)
// copies every JAR read into a private temporary directory (a layer's
// first entry of a name, the one the merge keeps). Once merged, Read keeps
// the copies of the lib and usrlib JARs the image ends with (and of the
// plugin folders the check judges: those with a JAR not the host's own),
// deletes the rest, and reads again the layers the cache answered for
// theirs (each checked against its diff ID again). The result is an FS:
// the merged view with those names answered from the copies, the root
// host's deep gathering opens JARs in with payload.OpenArchive, as in a
// container; the same rules decide. Job JARs of the machine (JobJAR) are
// placed in usrlib for the check; FS.With places them on a kept image's
// FS without changing it.
//
// The bytes go to disk, bounded before any is read again (ErrLimit: JARs,
// bytes, central directory entries, counted from the facts), and within
// the caller's spool.Budget; memory grows by the class indexes and the
// parsed classes only. Copies.Remove deletes the directory and every copy
// in it; the caller removes it before it returns, on error and
// cancellation too.
package deep
