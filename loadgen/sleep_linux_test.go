//go:build linux

package loadgen

import (
	"sync"
	"testing"
	"time"
)

// TestFineSleepTimerFDs: fineSleep never returns early, whether it waits on a pooled timerfd,
// in nanosleep (poller false), or (with more sleepers at once than the pool holds) falls back
// to nanosleep, and the pool
// never grows past maxTimerFDs; every timerfd is back in the pool afterwards.
func TestFineSleepTimerFDs(t *testing.T) {
	var wg sync.WaitGroup
	var mu sync.Mutex
	early := 0
	for i := range 3 * maxTimerFDs {
		wg.Go(func() {
			d := time.Duration(50+i%7*100) * time.Microsecond
			start := time.Now()
			fineSleep(d, i%4 != 0) // a quarter on nanosleep
			if time.Since(start) < d {
				mu.Lock()
				early++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if early > 0 {
		t.Errorf("%d of %d sleeps returned early", early, 3*maxTimerFDs)
	}
	if n := timerFDs.n.Load(); n < 1 || n > maxTimerFDs {
		t.Errorf("%d timerfds, want 1 to %d", n, maxTimerFDs)
	}
	if free, n := len(timerFDs.free), int(timerFDs.n.Load()); free != n {
		t.Errorf("%d of %d timerfds back in the pool", free, n)
	}
	fineSleep(0, true) // returns at once: a zero timerfd value would disarm it and never fire
	fineSleep(-time.Millisecond, true)
}
