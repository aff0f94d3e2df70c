//go:build !unix

package loadgen

import (
	"runtime"
	"time"
)

// fineSleep yields to other goroutines; without nanosleep the wait becomes a yielding spin.
func fineSleep(time.Duration, bool) { runtime.Gosched() }
