//go:build linux

package loadgen

import (
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
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

// TestTimerFDWaitAfterAStaleExpiry: when the Go timer wins a wait, the timerfd may expire
// unread before it is disarmed, and the poller may have seen it; the next wait on it must
// still last its whole time (arming clears the expiry count; a stale wake-up only makes the
// read retry), where an expiry left over would end it at once, early.
func TestTimerFDWaitAfterAStaleExpiry(t *testing.T) {
	tf := takeTimerFD()
	if tf == nil {
		t.Fatal("no timerfd")
	}
	defer func() { timerFDs.free <- tf }()
	arm := func(d time.Duration) {
		t.Helper()
		if err := unix.TimerfdSettime(tf.fd, 0, &unix.ItimerSpec{Value: unix.NsecToTimespec(int64(d))}, nil); err != nil {
			t.Fatal(err)
		}
	}
	arm(50 * time.Microsecond)
	// Wait until it has expired, without reading the expiry.
	if _, err := unix.Poll([]unix.PollFd{{Fd: int32(tf.fd), Events: unix.POLLIN}}, 1000); err != nil {
		t.Fatal(err)
	}
	// What wait does when the deadline won, then the next sleep on the same timerfd.
	if err := unix.TimerfdSettime(tf.fd, 0, &unix.ItimerSpec{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, d := range []time.Duration{3 * time.Millisecond, time.Millisecond} {
		start := time.Now()
		arm(d)
		if waited, err := tf.wait(d); err != nil || !waited {
			t.Fatalf("wait: %v, %v", waited, err)
		}
		if got := time.Since(start); got < d {
			t.Errorf("a %v wait after a stale expiry ended after %v", d, got)
		}
	}
}
