package loadgen

import (
	"time"

	"golang.org/x/sys/unix"
)

// fineSleep sleeps d in the kernel: macOS has no nanosleep system call (libc's sleeps on a
// Mach timer), so the wait is a select(2) with no descriptors and a microsecond timeout.
func fineSleep(d time.Duration, _ bool) {
	tv := unix.NsecToTimeval(int64(d))
	unix.Select(0, nil, nil, nil, &tv)
}
