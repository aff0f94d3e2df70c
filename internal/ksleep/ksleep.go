// Package ksleep sleeps in the kernel, which wakes within tens of microseconds of the
// deadline, where a Go timer may take a millisecond: an idle Go runtime waits for its next
// timer in epoll_wait, whose timeout is whole milliseconds, so a timer due in 1.8 ms fires
// after 2 ms, the next after 1 ms. The thread sleeps (the goroutine keeps it), so callers use
// it only for the last short stretch of a wait. loadgen's pacing and the reference engine's
// scaled clock share it.
package ksleep
