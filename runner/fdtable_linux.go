package runner

import (
	"os"
	"syscall"
)

// MaxFDTable bounds ReserveFDTable: 131,072 descriptors is about 1 MB of kernel memory (a
// pointer and two bits each). A process past it grows its table again at 262,144, and so on.
const MaxFDTable = 1 << 17

// ReserveFDTable grows the kernel's table of this process's file descriptors, once, to hold n
// (at most the soft limit and MaxFDTable), and reports the size reached (0: not grown).
//
// Linux grows the table by doubling when a new descriptor does not fit, and in a
// multi-threaded process the thread that grows it waits for an RCU grace period
// (expand_fdtable calls synchronize_rcu) while every other thread opening a descriptor waits
// for it: a pause of 5–17 ms here each time the connections cross 128, 256, 512, … A run
// opening a connection per stream stalled its dispatcher at each crossing, which is where
// most of its schedule-lag P99 came from (`llmbench bench --scenario long-streams`, 1,000
// streams: 15.9 ms; with the table reserved first, 1.8 ms). The table never shrinks, so one
// descriptor duplicated at n-1 and closed again leaves room for n.
func ReserveFDTable(n uint64) uint64 {
	n = min(n, MaxFDTable)
	if lim := FDLimit(); lim > 0 {
		n = min(n, lim)
	}
	if n < 2 {
		return 0
	}
	f, err := os.Open(os.DevNull)
	if err != nil {
		return 0
	}
	defer f.Close()
	// F_DUPFD takes the lowest free descriptor at or above n-1, so it never replaces an open
	// one.
	fd, _, errno := syscall.Syscall(syscall.SYS_FCNTL, f.Fd(), syscall.F_DUPFD_CLOEXEC, uintptr(n-1))
	if errno != 0 {
		return 0
	}
	syscall.Close(int(fd))
	return n
}
