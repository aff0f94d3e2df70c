package progress

import (
	"strings"
	"sync"
	"testing"
	"time"
)

// fakeClock returns start on the first call and start+step on every later one.
func fakeClock(start time.Time, step time.Duration) func() time.Time {
	var mu sync.Mutex
	calls := 0
	return func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		calls++
		if calls == 1 {
			return start
		}
		return start.Add(step)
	}
}

func TestFinalLine(t *testing.T) {
	var b strings.Builder
	snap := Snapshot{Sent: 10, Done: 10, Failed: 1, OutputTokens: 4000}
	d := Start(&b, false, 10, func() Snapshot { return snap }, fakeClock(time.Unix(0, 0), 2*time.Second))
	d.Stop()
	d.Stop() // a second Stop draws nothing more
	want := "[========================] 10/10 done · 0 in flight · 1 failed · 2000 tok/s · 2.0s\n"
	if got := b.String(); got != want {
		t.Fatalf("final line\n got %q\nwant %q", got, want)
	}
}

func TestLine(t *testing.T) {
	p := &Display{total: 8}
	for _, c := range []struct {
		total int
		s     Snapshot
		want  string
	}{
		{8, Snapshot{Done: 2, InFlight: 3}, "[======>                 ] 2/8 done · 3 in flight · 0 failed · 12 tok/s · 1.5s"},
		{8, Snapshot{Done: 9}, "[========================] 9/8 done · 0 in flight · 0 failed · 12 tok/s · 1.5s"},
		{0, Snapshot{Done: 5, Failed: 2}, "5 done · 0 in flight · 2 failed · 12 tok/s · 1.5s"},
	} {
		p.total = c.total
		if got := p.line(c.s, 1500*time.Millisecond, 12); got != c.want {
			t.Errorf("line(%+v)\n got %q\nwant %q", c.s, got, c.want)
		}
	}
}

func TestTerminalRedrawsInPlace(t *testing.T) {
	var b strings.Builder
	d := Start(&b, true, 0, func() Snapshot { return Snapshot{Done: 1} }, fakeClock(time.Unix(0, 0), time.Second))
	d.Stop()
	if got := b.String(); !strings.HasPrefix(got, "\r\033[K") || !strings.HasSuffix(got, "\n") {
		t.Fatalf("terminal output %q: want a line cleared in place and ended", got)
	}
}
