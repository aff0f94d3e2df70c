//go:build unix && !darwin

package refengine

import (
	"syscall"
	"time"
)

// kernelSleep sleeps d in the kernel (nanosleep), which wakes within tens of microseconds.
// Go timers cannot: an idle Go runtime waits for its next timer in epoll_wait, whose timeout
// is whole milliseconds, so a timer due in 1.8 ms fires after 2 ms, the next after 1 ms, and
// a steady scaled step comes out as alternating gaps.
func kernelSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}
