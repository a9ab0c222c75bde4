// Package install puts StreamFusion payloads into the lib directory of a
// Flink distribution on a host (bare metal, a VM, a build stage), as the
// image build does for images.
//
// It plans first and writes last. Plan reads the distribution and decides,
// with the entrypoint's own rules (host.Gather, admission.Decide), on the
// lib directory as it would be after the install: the new payloads under
// their documented names, the earlier StreamFusion payloads of the same
// modules (found by content, whatever their names) gone. A plan that would
// be refused is never applied.
//
// Apply stages the new files in a directory inside lib (same file system;
// staged names do not end in .jar, so Flink's classpath never sees them),
// then moves the replaced files aside into it and renames the new ones into
// place, fsyncing lib. On any failure every step is undone in reverse order
// and lib is left as it was, byte for byte. What it does not do: survive a
// crash of the machine half way through the renames (a crash leaves the
// staging directory, named .streamfusion-install-*, holding the moved-aside
// files); lock lib against another writer; install stock JARs (copy those).
package install
