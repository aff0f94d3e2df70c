//go:build unix && !linux && !darwin

package loadgen

import (
	"time"

	"golang.org/x/sys/unix"
)

// fineSleep sleeps d in the kernel (nanosleep), which wakes within tens of microseconds where
// Go timers may take a millisecond.
func fineSleep(d time.Duration, _ bool) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}
