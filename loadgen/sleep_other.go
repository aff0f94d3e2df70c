//go:build !linux

package loadgen

import (
	"runtime"
	"time"

	"github.com/llmbench/llmbench/internal/ksleep"
)

// fineSleep sleeps d in the kernel (ksleep: nanosleep, or select on macOS); where there is no
// kernel sleep the wait becomes a yielding spin. The poller (a timerfd) is Linux's only.
func fineSleep(d time.Duration, _ bool) {
	if !ksleep.Available {
		runtime.Gosched()
		return
	}
	ksleep.Sleep(d)
}
