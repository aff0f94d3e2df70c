//go:build !unix

package ksleep

import "time"

// Available reports whether Sleep sleeps in the kernel (false: it is time.Sleep).
const Available = false

// Sleep is time.Sleep here (millisecond-grained on some systems).
func Sleep(d time.Duration) { time.Sleep(d) }
