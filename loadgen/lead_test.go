package loadgen

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// stallClock is timerClock with a lead (a leadClock, as the real clock is) whose sleep to one
// target returns stall late: a wake-up that comes late on a loaded machine. Its epoch is the
// first Now, the run's start (inside a synctest bubble nothing moves the clock before).
type stallClock struct {
	timerClock
	leadBy  time.Duration
	stallAt time.Duration // the target, after the epoch, whose sleep comes late
	stall   time.Duration

	mu    sync.Mutex
	epoch time.Time
}

func (c *stallClock) lead() time.Duration { return c.leadBy }

func (c *stallClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.epoch.IsZero() {
		c.epoch = time.Now()
	}
	return time.Now()
}

func (c *stallClock) SleepUntil(ctx context.Context, t time.Time) error {
	c.mu.Lock()
	if t.Sub(c.epoch) == c.stallAt {
		t = t.Add(c.stall)
	}
	c.mu.Unlock()
	return c.timerClock.SleepUntil(ctx, t)
}

// TestOpenLoopLateWakeDelaysOneRequest: with a lead, the dispatcher starts each request before
// its time and the request sleeps the rest itself, so a late wake-up of the dispatcher within
// the lead delays nothing, and a late wake-up of one request delays only that one. Without a
// lead (the dispatcher sends every request itself) the same late wake-up also makes the next
// request late: the cascade the lead removes (20,000 streams: lag P99 2.6 → 1.4 ms).
func TestOpenLoopLateWakeDelaysOneRequest(t *testing.T) {
	e := &slowEngine{service: time.Millisecond, chunks: 1}
	var reqs []traces.Request
	for i := range 8 {
		reqs = append(reqs, at(string(rune('a'+i)), 10+2*i)) // 10, 12, …, 24 ms
	}
	lateness := func(c *stallClock) map[string]int64 {
		t.Helper()
		res, recs := virtualRun(t, e, reqs, Options{Clock: c}, 0)
		if res.Succeeded != len(reqs) {
			t.Fatalf("result %+v", res)
		}
		late := map[string]int64{}
		for _, r := range recs {
			if l := r.Dispatched - r.Intended; l != 0 {
				late[r.ID] = l
			}
			if r.Sent != r.Dispatched {
				t.Errorf("%s: sent %d, dispatched %d", r.ID, r.Sent, r.Dispatched)
			}
		}
		return late
	}
	stall := 2500 * time.Microsecond

	// The dispatcher's sleep for c (due at 14 ms, started at 14 - 3 = 11 ms) wakes 2.5 ms late.
	if late := lateness(&stallClock{leadBy: 3 * time.Millisecond, stallAt: 11 * time.Millisecond, stall: stall}); len(late) != 0 {
		t.Errorf("a late dispatcher within the lead: late sends %v, want none", late)
	}
	// c's own sleep (to 14 ms) wakes 2.5 ms late: c alone is late.
	late := lateness(&stallClock{leadBy: 3 * time.Millisecond, stallAt: 14 * time.Millisecond, stall: stall})
	if len(late) != 1 || late["c"] != int64(stall) {
		t.Errorf("a late request: late sends %v, want c alone, 2.5 ms", late)
	}
	// No lead: the dispatcher's late wake for c makes d (due at 16 ms) late too.
	late = lateness(&stallClock{stallAt: 14 * time.Millisecond, stall: stall})
	if len(late) != 2 || late["c"] != int64(stall) || late["d"] != int64(500*time.Microsecond) {
		t.Errorf("without a lead: late sends %v, want c 2.5 ms and d 0.5 ms", late)
	}

	// Requests closer than leadGap to the previous one are sent by the dispatcher itself (it
	// is awake already): y and z, 100 µs behind x, are; x (2 ms after w) sleeps itself.
	reqs = []traces.Request{at("w", 8), at("x", 10), {ID: "y", Arrival: 10100 * time.Microsecond, InputTokens: 3, OutputTokens: 2, Prompt: " hi"},
		{ID: "z", Arrival: 10200 * time.Microsecond, InputTokens: 3, OutputTokens: 2, Prompt: " hi"}}
	late = lateness(&stallClock{leadBy: 3 * time.Millisecond, stallAt: 10100 * time.Microsecond, stall: 500 * time.Microsecond})
	if len(late) != 2 || late["y"] != int64(500*time.Microsecond) || late["z"] != int64(400*time.Microsecond) {
		t.Errorf("close requests: late sends %v, want y 0.5 ms and z 0.4 ms (the dispatcher's own wake)", late)
	}
}

// TestOpenLoopInterruptedInTheLead: a request started ahead of its time and interrupted before
// it is recorded as never sent, and frees its place among the waiting requests.
func TestOpenLoopInterruptedInTheLead(t *testing.T) {
	e := &slowEngine{service: time.Millisecond, chunks: 1}
	prog := &Progress{}
	c := &stallClock{leadBy: 10 * time.Millisecond}
	reqs := []traces.Request{at("a", 0), at("b", 100)}
	// Interrupted at 95 ms: b was started at 90 ms and is asleep until 100 ms.
	res, recs := virtualRun(t, e, reqs, Options{Clock: c, Progress: prog, MaxWaiting: 1}, 95*time.Millisecond)
	if !res.Interrupted || res.Sent != 1 || res.Dropped != 1 || len(recs) != 2 {
		t.Fatalf("result %+v with %d records", res, len(recs))
	}
	b := recs[1]
	if b.ID != "b" || b.Failure != metrics.FailDropped || b.Sent != 0 {
		t.Errorf("b: %+v, want dropped, never sent", b)
	}
	if w := prog.Waiting.Load(); w != 0 {
		t.Errorf("progress: %d waiting at the end, want 0", w)
	}
}

// TestSleepViaPoller: the real clock's kernel sleeps use the poller over HTTP/2 (few sockets)
// and over HTTP/1.1 only below pollerStreams requests in flight (a socket each: past that, a
// wake-up through the poller queued behind their reads, lag P99 29–47 ms at 5,000 streams).
func TestSleepViaPoller(t *testing.T) {
	for _, c := range []struct {
		http2    bool
		inFlight int64
		want     bool
	}{{false, 0, true}, {false, pollerStreams - 1, true}, {false, pollerStreams, false}, {false, 20000, false}, {true, 50000, true}} {
		if got := sleepViaPoller(c.http2, c.inFlight); got != c.want {
			t.Errorf("http2 %v, %d in flight: via the poller %v, want %v", c.http2, c.inFlight, got, c.want)
		}
	}
}

// TestWakeLatenessNeverEarly: bench's wake floor is the real clock's own pacing, which never
// ends a wait early, one value a wait; a canceled context stops it with the context's error.
func TestWakeLatenessNeverEarly(t *testing.T) {
	late, err := WakeLateness(context.Background(), 50, 200*time.Microsecond)
	if err != nil || len(late) != 50 {
		t.Fatalf("WakeLateness = %d values, %v; want 50, nil", len(late), err)
	}
	for i, d := range late {
		if d < 0 {
			t.Errorf("wait %d ended %v early", i, -d)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if late, err := WakeLateness(ctx, 10, 10*time.Millisecond); !errors.Is(err, context.Canceled) || len(late) != 0 {
		t.Errorf("canceled: WakeLateness = %d values, %v; want 0, context.Canceled", len(late), err)
	}
}
