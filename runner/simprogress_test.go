package runner

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestSimProgressFollowsTheVirtualClock: the display of a simulation reads the virtual time from
// the finished records (the latest arrival), counts them and their failures, passes every record on
// to the sink, and draws its last frame when the producer returns.
func TestSimProgressFollowsTheVirtualClock(t *testing.T) {
	reqs := []traces.Request{
		{ID: "a", Arrival: 0, InputTokens: 10, OutputTokens: 5},
		{ID: "b", Arrival: 4 * time.Second, InputTokens: 10, OutputTokens: 5},
		{ID: "c", Arrival: 8 * time.Second, InputTokens: 10, OutputTokens: 5},
	}
	wall := time.Unix(0, 0)
	var mu sync.Mutex
	var out strings.Builder
	sp := StartSimProgress(SimProgressOptions{W: &out, Trace: traces.FromSlice(reqs), RateScale: 2, Every: time.Hour,
		Now: func() time.Time { mu.Lock(); defer mu.Unlock(); return wall }})
	produce := func(_ context.Context, _ traces.Source, sink func(*metrics.Record)) (*Produced, error) {
		ends := []time.Duration{3 * time.Second, 9 * time.Second, 6500 * time.Millisecond}
		for i, end := range ends {
			r := &metrics.Record{ID: reqs[i].ID, Intended: int64(reqs[i].Arrival / 2), FirstToken: int64(reqs[i].Arrival/2 + 100*time.Millisecond),
				End: int64(end), OutputTokens: 5}
			if i == 2 {
				r.Failure = metrics.FailShortOutput
			}
			sink(r)
		}
		mu.Lock()
		wall = wall.Add(500 * time.Millisecond)
		mu.Unlock()
		return &Produced{}, nil
	}
	var got []string
	if _, err := sp.Wrap(produce)(context.Background(), nil, func(r *metrics.Record) { got = append(got, r.ID) }); err != nil {
		t.Fatal(err)
	}
	if strings.Join(got, ",") != "a,b,c" {
		t.Errorf("the sink got %v, want every record in order", got)
	}
	line := out.String()
	for _, want := range []string{"virtual 4.0 s / ", "3/3 done", "6 requests/s simulated (wall 0.5 s)", "completed 2 · failed 1 (" + string(metrics.FailShortOutput) + " 1)"} {
		if !strings.Contains(line, want) {
			t.Errorf("display lacks %q:\n%s", want, line)
		}
	}
	// The nominal length is the trace's replay length over the rate scale: 3 requests 4 s
	// apart last 12 s (the last arrival plus one mean gap), 6 s at twice the rate.
	if !strings.Contains(line, "/ 6.0 s") {
		t.Errorf("nominal length not the replay length over the rate scale:\n%s", line)
	}
	sp.Stop() // already stopped: draws nothing more
	if out.String() != line {
		t.Errorf("a second Stop drew again")
	}
}
