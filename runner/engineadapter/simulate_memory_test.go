package engineadapter

import (
	"context"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// TestSimulateOverloadHeapIsBounded runs what `llmbench simulate` runs (the trace read as it
// is simulated, records written as they finish, the summary's first pass reading them as they
// are handed over, report and all) on 100,000 chat requests offered at about ten times what
// two H200s serve, where nearly every request waits, and collects every 5,000 records to read
// the live heap. What a waiting request holds (the engine's backlog entry, the pipeline's copy
// of what its record needs, its designed prefix reuse) is ≈ 250 bytes, so the live heap stays
// near 50 MB. No part of the path may read the trace whole: the summary did, for a moment, to
// get its designed prefix-cache rate, which took a million-request simulation to 1.5 GB RSS.
// Heap figures, not times: it holds on a busy machine.
func TestSimulateOverloadHeapIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 100,000 requests")
	}
	const n = 100_000
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	writeChatTrace(t, path, n, 400)
	file, err := traces.OpenFile(path, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	src := streamedOnly{file, t}
	runtime.GC()
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	base := m.HeapAlloc
	var peak uint64
	sim := &Simulator{Config: refengine.Config{GPU: "h200", TP: 2}, RateScale: 1}
	records := 0
	produce := func(ctx context.Context, trace traces.Source, sink func(*metrics.Record)) (*runner.Produced, error) {
		return sim.Produce(ctx, trace, func(r *metrics.Record) {
			sink(r)
			if records++; records%5_000 == 0 {
				runtime.GC()
				runtime.ReadMemStats(&m)
				peak = max(peak, m.HeapAlloc-min(base, m.HeapAlloc))
			}
		})
	}
	res, err := runner.Execute(context.Background(), runner.Options{Trace: src, OutDir: t.TempDir(), SummarizeLive: true,
		Info: metrics.RunInfo{Mode: "simulated"}}, produce)
	if err != nil {
		t.Fatal(err)
	}
	if records != n || res.Summary.Requests.Total != n || len(res.Summary.Warnings) == 0 {
		t.Fatalf("%d records, %d in the summary, warnings %q: want %d, and the overload reported", records, res.Summary.Requests.Total, res.Summary.Warnings, n)
	}
	if pc := res.Summary.PrefixCache; pc == nil || pc.DesignedHitRate == nil {
		t.Fatalf("the summary has no designed prefix-cache rate (%+v): the trace was not walked for it", pc)
	}
	t.Logf("peak live heap %.1f MB (%d bytes a request)", float64(peak)/(1<<20), peak/n)
	if limit := uint64(80 << 20); peak > limit {
		t.Errorf("the live heap reached %.1f MB for %d requests at overload, more than %.0f MB: something holds the trace or more than a waiting request needs",
			float64(peak)/(1<<20), n, float64(limit)/(1<<20))
	}
}

// streamedOnly is a trace that fails the test when it is read whole (Requests).
type streamedOnly struct {
	traces.Source
	t *testing.T
}

func (s streamedOnly) Requests() ([]traces.Request, error) {
	s.t.Error("the trace was read whole into memory; simulate reads it as it goes")
	return s.Source.Requests()
}
