//go:build unix && !darwin

package ksleep

import (
	"time"

	"golang.org/x/sys/unix"
)

// Available reports whether Sleep sleeps in the kernel (false: it is time.Sleep).
const Available = true

// Sleep sleeps d in nanosleep.
func Sleep(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	unix.Nanosleep(&ts, nil)
}
