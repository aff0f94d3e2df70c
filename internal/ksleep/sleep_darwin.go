package ksleep

import (
	"time"

	"golang.org/x/sys/unix"
)

// Available reports whether Sleep sleeps in the kernel (false: it is time.Sleep).
const Available = true

// Sleep sleeps d in the kernel: macOS has no nanosleep system call (libc's sleeps on a Mach
// timer), so the wait is a select(2) with no descriptors and a microsecond timeout.
func Sleep(d time.Duration) {
	tv := unix.NsecToTimeval(int64(d))
	unix.Select(0, nil, nil, nil, &tv)
}
