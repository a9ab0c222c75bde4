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
// Installs into one lib take turns (Lock): an flock(2) on the lib
// directory itself, held from planning to the end of applying, so a plan
// never judges a lib another install is changing. The kernel drops the
// lock with its process, however the process ends; nothing is left to go
// stale. A waiter names the holder from /proc/locks.
//
// Apply is a write-ahead journal of renames. In lib it writes
// .streamfusion-install.journal (the renames it will make), then the new
// files, complete and fsynced, into .streamfusion-install.stage (names
// that do not end in .jar: Flink's classpath never sees them), marks
// "staged", and makes each rename (the replaced files move aside into the
// stage, then the new ones into place), fsyncing the directories and
// marking "done N" after each; then "committed", and the stage and the
// journal go. Every directory change is on disk before the next, so a
// kill or a power cut leaves lib at one of these steps, and Recover (run
// by the next install before it plans, or by install --recover) reads
// which renames were done from lib itself: it completes the install when
// every new file is in place and rolls it back otherwise, then removes the
// stage and the journal. While the journal is there, the entrypoint and
// check refuse lib (install-interrupted): one lstat of a fixed name.
//
// What it does not do: keep out writers of lib other than installs (the
// lock is advisory); recover a lib changed by hand since the interruption
// (a journal that disagrees with lib is refused for a person to look at);
// install stock JARs (copy those).
package install
