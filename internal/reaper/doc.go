// Package reaper keeps the process groups llmbench starts (sweep --serve-cmd's servers) from
// outliving it, however it ends.
//
// Start starts a command as the leader of a process group of its own; on Linux with a
// parent-death signal, set from a goroutine locked to its OS thread until the process has been
// waited for (the kernel sends the signal when the thread that forked the child exits, not the
// process: an unlocked goroutine's thread may be retired by the runtime at any time).
//
// A parent-death signal reaches only the direct child, so the direct child is the keeper:
// llmbench itself run as `llmbench _reaper --grace D -- COMMAND...` (Command builds it; cmd's
// main runs Main). The keeper makes itself a child subreaper, so that the processes of the
// command that are orphaned (a shell's background jobs, a daemon that called setsid to leave
// the group) are re-parented to it rather than to init, starts the command in its own group
// with a parent-death signal of SIGKILL, and stops every descendant (the whole tree under it,
// found through /proc, and every member of its group) with SIGTERM, then SIGKILL after the
// grace, when it is told to stop (SIGTERM, SIGINT, SIGHUP: from llmbench stopping the server,
// or the parent-death signal SIGTERM when llmbench is killed outright, SIGKILL included), when
// its parent is gone, or when the command exits leaving processes behind.
//
// It must not be used for a child meant to outlive llmbench (the browser report --open
// starts). It does no network I/O and imports no llmbench package.
package reaper
