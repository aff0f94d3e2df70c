package loadgen

import (
	"syscall"
	"time"
	"unsafe"
)

// rawSleepMax bounds one raw nanosleep: the runtime cannot stop a goroutine inside one, so a
// collection's stop-the-world waits for it at most this long.
const rawSleepMax = 250 * time.Microsecond

// fineSleep sleeps d in the kernel (nanosleep), which wakes within tens of microseconds where
// Go timers may take a millisecond. It is a raw system call, for a measured reason: through
// syscall.Nanosleep the runtime hands the goroutine's P to another thread after 20 µs, and on
// waking the dispatcher waits for a P behind whatever runs, at 20,000 HTTP/2 streams the
// connections' read loops (llmbench bench --scenario long-streams --http2 --in-flight 20000,
// 2 cores, 4 runs each: schedule lag P99 0.66-3.5 ms through syscall.Nanosleep, 0.60-1.5 ms
// raw). Keeping the P costs little: the thread sleeps, so the CPU runs other threads, and
// llmbench runs twice as many Ps as CPUs.
func fineSleep(d time.Duration) {
	for d > 0 {
		s := min(d, rawSleepMax)
		ts := syscall.NsecToTimespec(int64(s))
		syscall.RawSyscall(syscall.SYS_NANOSLEEP, uintptr(unsafe.Pointer(&ts)), 0, 0)
		d -= s
	}
}
