// Package spool bounds the bytes a process writes to its temporary
// directory at once: a Budget of bytes, reserved before a copy starts and
// released when the file is removed. The webhook gives every copy that
// reads an image (a large JAR spooled while its layer is read, the deep
// check's copies of lib and usrlib, the lib copies kept across session
// jobs, a session job's fetched JAR) one Budget, set from the same value
// as the pod's emptyDir sizeLimit, so the kubelet never evicts the pod for
// what its reviews wrote.
//
// A reservation that does not fit waits, as long as its context allows and
// at most as long as its wait context (WithWait) allows: a verification
// detached from the reviews that asked for it stops waiting once none of
// them waits for its answer. A reservation larger than the whole budget
// fails at once. The waiting itself is golang.org/x/sync/semaphore's
// (first come, first served); this package adds the accounting (bytes in
// use, the high-water mark, waiters) and the messages, which name what was
// asked, what is free and the budget.
//
// It does not watch the file system: what is not reserved (the layer-facts
// cache, files of other processes) is not counted.
package spool
