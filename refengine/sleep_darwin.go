package refengine

import (
	"time"

	"golang.org/x/sys/unix"
)

// kernelSleep sleeps d in the kernel: macOS has no nanosleep system call, so the wait is a
// select(2) with no descriptors and a microsecond timeout (see sleep_unix.go for why not a Go
// timer).
func kernelSleep(d time.Duration) {
	tv := unix.NsecToTimeval(int64(d))
	unix.Select(0, nil, nil, nil, &tv)
}
