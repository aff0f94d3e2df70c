//go:build unix && !linux

package loadgen

import (
	"syscall"
	"time"
)

// fineSleep sleeps d in the kernel (nanosleep), which wakes within tens of microseconds where
// Go timers may take a millisecond.
func fineSleep(d time.Duration) {
	ts := syscall.NsecToTimespec(int64(d))
	syscall.Nanosleep(&ts, nil)
}
