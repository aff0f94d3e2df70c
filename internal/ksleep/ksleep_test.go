package ksleep

import (
	"testing"
	"time"
)

// TestSleepNeverEarly: Sleep never returns before d has passed (a correctness property, not a
// timing threshold), and returns for zero and negative durations.
func TestSleepNeverEarly(t *testing.T) {
	for _, d := range []time.Duration{-time.Millisecond, 0, time.Microsecond, 30 * time.Microsecond, 400 * time.Microsecond, 2 * time.Millisecond} {
		start := time.Now()
		Sleep(d)
		if got := time.Since(start); got < d {
			t.Errorf("Sleep(%v) returned after %v", d, got)
		}
	}
}
