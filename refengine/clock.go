package refengine

import (
	"context"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/ksleep"
)

// Clock is the engine's notion of time. Every time the engine records is a simulated offset
// from the clock's epoch: the time a real GPU would have taken. Wall maps such an offset back to
// the wall-clock instant at which the engine acted on it.
type Clock interface {
	// Now returns the current simulated offset from the epoch.
	Now() time.Duration
	// Wall returns the wall-clock time that corresponds to simulated offset d.
	Wall(d time.Duration) time.Time
	// SleepUntil blocks until simulated offset t has been reached or ctx is done, in which case
	// it returns ctx.Err().
	SleepUntil(ctx context.Context, t time.Duration) error
}

// ScaledClock is a real clock that runs Scale times faster than wall time: a simulated step of
// 10 ms takes 10ms/Scale of wall time. Scale 1 is real GPU time.
type ScaledClock struct {
	epoch time.Time
	scale float64
	now   func() time.Time
}

// NewScaledClock returns a clock whose epoch is now() and that runs scale times faster than
// wall time (scale <= 0 means 1). now is usually time.Now; tests may pass another source.
func NewScaledClock(now func() time.Time, scale float64) *ScaledClock {
	if scale <= 0 {
		scale = 1
	}
	return &ScaledClock{epoch: now(), scale: scale, now: now}
}

// Now implements Clock.
func (c *ScaledClock) Now() time.Duration {
	return time.Duration(float64(c.now().Sub(c.epoch)) * c.scale)
}

// Wall implements Clock.
func (c *ScaledClock) Wall(d time.Duration) time.Time {
	return c.epoch.Add(time.Duration(float64(d) / c.scale))
}

// Scale returns the speed-up factor.
func (c *ScaledClock) Scale() float64 { return c.scale }

// Fine sleeping: a Go timer carries a wait up to fineWindow before the wall deadline (it may
// fire a millisecond late: the runtime's idle wait has millisecond resolution), and kernel
// sleeps of at most fineSlice cover the rest, checking ctx between them. Without this, a
// scaled step of 1.8 ms wall time was delivered as gaps alternating between 2 ms and 1 ms.
const (
	fineWindow = 2 * time.Millisecond
	fineSlice  = 250 * time.Microsecond
)

// SleepUntil implements Clock. It wakes within tens of microseconds of the wall time of t
// (where the OS allows), never before it.
func (c *ScaledClock) SleepUntil(ctx context.Context, t time.Duration) error {
	deadline := c.Wall(t)
	wait := deadline.Sub(c.now())
	if wait <= 0 {
		return ctx.Err()
	}
	if wait > fineWindow {
		tm := time.NewTimer(wait - fineWindow)
		select {
		case <-tm.C:
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		left := deadline.Sub(c.now())
		if left <= 0 {
			return nil
		}
		ksleep.Sleep(min(left, fineSlice))
	}
}

// VirtualClock is a clock that only moves when the engine sleeps: SleepUntil jumps straight to
// the requested time. Simulate uses it; an HTTP engine given one runs as fast as the CPU allows
// while still recording the times a GPU would have taken.
type VirtualClock struct {
	mu    sync.Mutex
	epoch time.Time
	now   time.Duration
}

// NewVirtualClock returns a virtual clock at offset 0 whose offsets map to wall times from epoch.
func NewVirtualClock(epoch time.Time) *VirtualClock { return &VirtualClock{epoch: epoch} }

// Now implements Clock.
func (c *VirtualClock) Now() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// Wall implements Clock.
func (c *VirtualClock) Wall(d time.Duration) time.Time { return c.epoch.Add(d) }

// SleepUntil implements Clock: it advances the clock to t (never backwards) and returns at once.
func (c *VirtualClock) SleepUntil(ctx context.Context, t time.Duration) error {
	c.mu.Lock()
	if t > c.now {
		c.now = t
	}
	c.mu.Unlock()
	return ctx.Err()
}
