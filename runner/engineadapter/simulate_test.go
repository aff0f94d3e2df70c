package engineadapter

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

func TestTimelineRecord(t *testing.T) {
	ms := time.Millisecond
	req := &traces.Request{ID: "r1", Class: "chat", Session: "s", Turn: 2, InputTokens: 7, OutputTokens: 4}
	done := refengine.Timeline{
		Arrival: 10 * ms, Finish: 40 * ms, Done: true, FinishReason: "length",
		Emissions:    []refengine.Emission{{At: 20 * ms, Tokens: 1}, {At: 30 * ms, Tokens: 3}},
		PromptTokens: 7, OutputTokens: 4,
	}
	r := TimelineRecord(&done, req)
	if r.ID != "r1" || r.Class != "chat" || r.Session != "s" || r.Turn != 2 {
		t.Errorf("identity %+v", r)
	}
	// A simulated client has no lag or queue: every client-side time is the arrival.
	for name, v := range map[string]int64{"intended": r.Intended, "dispatched": r.Dispatched, "sent": r.Sent, "headers": r.Headers} {
		if v != int64(10*ms) {
			t.Errorf("%s = %d, want the arrival", name, v)
		}
	}
	if r.FirstToken != int64(20*ms) || r.End != int64(40*ms) || len(r.Chunks) != 2 || r.Chunks[1] != (metrics.Chunk{T: int64(30 * ms), Tokens: 3}) {
		t.Errorf("times %d..%d chunks %+v", r.FirstToken, r.End, r.Chunks)
	}
	if !r.OK() || r.TokenSource != metrics.TokensFromUsage || r.OutputTokens != 4 || r.ServerOutputTokens != 4 || r.RequestedTokens != 4 {
		t.Errorf("accounting %+v", r)
	}

	for _, c := range []struct {
		name string
		edit func(*refengine.Timeline)
		want metrics.FailureKind
	}{
		{"unfinished", func(tl *refengine.Timeline) { tl.Done, tl.Finish = false, -1 }, metrics.FailCanceled},
		{"no output", func(tl *refengine.Timeline) { tl.Emissions, tl.OutputTokens = nil, 0 }, metrics.FailEmpty},
		{"short", func(tl *refengine.Timeline) { tl.OutputTokens, tl.FinishReason = 3, "stop" }, metrics.FailShortOutput},
	} {
		tl := done
		c.edit(&tl)
		r := TimelineRecord(&tl, req)
		if r.Failure != c.want {
			t.Errorf("%s: failure %q, want %q", c.name, r.Failure, c.want)
		}
		if c.want == metrics.FailCanceled && r.End != 0 {
			t.Errorf("%s: End %d, want 0 (did not happen)", c.name, r.End)
		}
	}
}

func TestSimulatorProduce(t *testing.T) {
	reqs, err := traces.ReadFile(chatSmall, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	reqs = reqs[:20]
	start := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	sim := &Simulator{Config: refengine.Config{Seed: 1}, RateScale: 2, Clock: func() time.Time { return start }}
	var recs []*metrics.Record
	p, err := sim.Produce(context.Background(), traces.FromSlice(reqs), func(r *metrics.Record) { recs = append(recs, r) })
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d records for %d requests", len(recs), len(reqs))
	}
	for i, r := range recs {
		if want := int64(time.Duration(float64(reqs[i].Arrival) / 2)); r.Intended != want || !r.OK() {
			t.Errorf("%s: intended %d, want %d (arrival / rate scale); failure %q", r.ID, r.Intended, want, r.Failure)
		}
	}
	if !p.Start.Equal(start) || p.Model == "" || p.Duration <= 0 || p.Engine["gpu"] == "" {
		t.Errorf("produced %+v", p)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := sim.Produce(ctx, traces.FromSlice(reqs), func(*metrics.Record) { t.Fatal("record after cancel") }); err == nil {
		t.Error("a canceled context still simulated")
	}
}

// TestSimulatorProduceHoldsNoTrace: simulating a trace file keeps neither the trace nor the
// finished requests: when the 15,000th record is written the heap has not grown by them since
// Produce started (held, the trace and the timelines would be ≈ 6 KB a request here, 89 MB
// measured; the pipeline's channels hold up to ≈ 1,500 timelines in flight, ≈ 5 MB).
func TestSimulatorProduceHoldsNoTrace(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 30,000 requests")
	}
	const n = 30_000
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprintf("q%d", i), Arrival: time.Duration(i) * 50 * time.Millisecond, InputTokens: 200, OutputTokens: 100 + i%100}
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := traces.WriteFile(path, reqs); err != nil {
		t.Fatal(err)
	}
	reqs = nil
	src, err := traces.OpenFile(path, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	var grown int64
	seen := 0
	sim := &Simulator{Config: refengine.Config{Seed: 1}, RateScale: 1}
	before := heap()
	if _, err := sim.Produce(context.Background(), src, func(r *metrics.Record) {
		if want := fmt.Sprintf("q%d", seen); r.ID != want {
			t.Fatalf("record %d is %s, want %s (trace order)", seen, r.ID, want)
		}
		seen++
		if seen == n/2 {
			grown = heap() - before
		}
	}); err != nil {
		t.Fatal(err)
	}
	if seen != n {
		t.Fatalf("%d records of %d", seen, n)
	}
	if grown > 16<<20 {
		t.Errorf("the heap grew by %d bytes by 15,000 records: the trace or finished requests are being held", grown)
	}
}
