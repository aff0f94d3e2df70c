package loadgen

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestRealClockNeverEarly: SleepUntil never returns before its target (a correctness
// property, not a timing threshold), and returns the context's error when canceled.
func TestRealClockNeverEarly(t *testing.T) {
	c := newRealClock()
	for _, d := range []time.Duration{-time.Millisecond, 0, 30 * time.Microsecond, 150 * time.Microsecond, 700 * time.Microsecond, 3 * time.Millisecond} {
		target := time.Now().Add(d)
		if err := c.SleepUntil(context.Background(), target); err != nil {
			t.Fatal(err)
		}
		if now := time.Now(); now.Before(target) {
			t.Errorf("woke %v early for a %v sleep", target.Sub(now), d)
		}
	}
	if w := c.window(); w < minSpin || w > maxSpin {
		t.Errorf("window %v outside [%v, %v]", w, minSpin, maxSpin)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.SleepUntil(ctx, time.Now().Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled sleep returned %v", err)
	}
	ctx, cancel = context.WithCancel(context.Background())
	time.AfterFunc(time.Millisecond, cancel)
	if err := c.SleepUntil(ctx, time.Now().Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("sleep canceled midway returned %v", err)
	}
}
