package loadgen

import (
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestStartAtIsTheEpoch: with StartAt the run waits for that instant and every record counts
// from it, so shards started apart share one schedule. (synctest's clock starts at
// 2000-01-01 00:00 UTC.)
func TestStartAtIsTheEpoch(t *testing.T) {
	e := &slowEngine{service: 20 * time.Millisecond, gap: time.Millisecond, chunks: 2}
	start := time.Date(2000, 1, 1, 0, 0, 3, 0, time.UTC)
	res, recs := virtualRun(t, e, []traces.Request{at("a", 0), at("b", 10)}, Options{StartAt: start}, 0)
	if !res.Start.Equal(start) || res.LateStart != 0 {
		t.Fatalf("run epoch %v late by %v, want %v on time", res.Start, res.LateStart, start)
	}
	for i, r := range recs {
		if want := int64(i) * 10 * ms; r.Intended != want || r.Sent != want || r.FirstToken-r.Intended != 20*ms {
			t.Errorf("%s: intended %d sent %d ttft %d, want %d, %d, 20ms", r.ID, r.Intended, r.Sent, r.FirstToken-r.Intended, want, want)
		}
	}
}

// TestWholeTraceFixesPassAndPhases: a shard replays its requests on the whole trace's pass
// length and nominal end, so its repeats and cool-down line up with the other shards'.
func TestWholeTraceFixesPassAndPhases(t *testing.T) {
	e := &slowEngine{service: time.Millisecond, gap: time.Millisecond, chunks: 1}
	shard := []traces.Request{at("a", 0), at("c", 10)}
	// Alone: pass = 10 ms + one gap = 20 ms; the second request (10 ms) is cool-down.
	_, alone := virtualRun(t, e, shard, Options{Cooldown: 10 * time.Millisecond, Repeat: 2}, 0)
	// As a shard of a 4-request trace spanning 30 ms: pass 40 ms, nominal end 80 ms.
	_, part := virtualRun(t, e, shard, Options{Cooldown: 10 * time.Millisecond, Repeat: 2,
		Whole: TraceShape{First: 0, Last: 30 * time.Millisecond, Len: 4}}, 0)
	want := func(recs []metrics.Record, intended []int64, phases []string) {
		t.Helper()
		for i, r := range recs {
			if r.Intended != intended[i]*ms || r.Phase != phases[i] {
				t.Errorf("record %d (%s repeat %d): intended %d phase %q, want %d ms %q", i, r.ID, r.Repeat, r.Intended, r.Phase, intended[i], phases[i])
			}
		}
	}
	want(alone, []int64{0, 10, 20, 30}, []string{"", "", "", metrics.PhaseCooldown})
	want(part, []int64{0, 10, 40, 50}, []string{"", "", "", ""})
}

// TestStartAtPassedIsLate: a run ready only after its StartAt keeps that epoch (its schedule
// is the other shards'), sends the requests already due at once, counts the wait in their
// lag, and says how late it was.
func TestStartAtPassedIsLate(t *testing.T) {
	e := &slowEngine{service: 20 * time.Millisecond, gap: time.Millisecond, chunks: 2}
	start := time.Date(1999, 12, 31, 23, 59, 59, 995_000_000, time.UTC) // 5 ms before the bubble's clock
	res, recs := virtualRun(t, e, []traces.Request{at("a", 0), at("b", 3), at("c", 10)}, Options{StartAt: start}, 0)
	if !res.Start.Equal(start) || res.LateStart != 5*time.Millisecond {
		t.Fatalf("run epoch %v late by %v, want %v late by 5ms", res.Start, res.LateStart, start)
	}
	for i, want := range []int64{5, 5, 10} {
		if r := recs[i]; r.Sent != want*ms || r.FirstToken-r.Intended != r.Sent-r.Intended+20*ms {
			t.Errorf("%s: intended %d sent %d ttft %d, want sent at %d ms and the wait in the TTFT", r.ID, r.Intended, r.Sent, r.FirstToken-r.Intended, want)
		}
	}
}
