//go:build !unix

package refengine

import "time"

// kernelSleep sleeps d; off unix it is time.Sleep (millisecond-grained on some systems).
func kernelSleep(d time.Duration) { time.Sleep(d) }
