package engineadapter

import (
	"context"
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// slowEngineConfig is an engine that serves one request at a time, so that a short trace
// over HTTP offers it ten times what it serves at a modest request rate.
var slowEngineConfig = refengine.Config{MaxNumSeqs: 1, Seed: 1}

// uniformTrace is n requests of 200 output tokens, one every 1/rate seconds.
func uniformTrace(n int, rate float64) []traces.Request {
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprintf("r%d", i), Arrival: time.Duration(float64(i) / rate * float64(time.Second)), InputTokens: 100, OutputTokens: 200}
	}
	return reqs
}

// TestRunStopsOnSaturation runs a 60 s trace at ten times the engine's capacity over HTTP
// (the engine 10 times faster than real time) with the saturation watch's Stop: the run is
// stopped once judged over-saturated, after the rule's minimum time, its requests in flight
// recorded as cancelled and the rest left unsent, and the summary says so in the words of
// simulate's overload report (metrics.OverSaturated).
func TestRunStopsOnSaturation(t *testing.T) {
	const scale = 10
	reqs := uniformTrace(200, 1e6)
	sim, err := refengine.Simulate(SimRequests(reqs, 1), slowEngineConfig)
	if err != nil {
		t.Fatal(err)
	}
	capacity := float64(len(reqs)) / sim.Stats.Makespan.Seconds()
	reqs = uniformTrace(int(10*capacity*60), 10*capacity)

	cfg := slowEngineConfig
	cfg.TimeScale = scale
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	var told atomic.Int32
	out := t.TempDir()
	res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
		Trace: traces.FromSlice(reqs),
		Load: loadgen.Options{Target: loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Hour},
		TimeScale: scale, OutDir: out,
		Saturation: &runner.SaturationOptions{Stop: true, Every: time.Second / scale,
			OnSaturated: func(metrics.SaturationVerdict) { told.Add(1) }},
	})
	if err != nil {
		t.Fatal(err)
	}
	sat := res.Summary.Saturation
	if sat == nil || !sat.Stopped || told.Load() != 1 {
		t.Fatalf("capacity %.2f req/s: saturation %+v, told %d times; %d records, run %.1f s, warnings %q", capacity, sat, told.Load(), res.Records, res.Summary.Run.DurationS, res.Summary.Warnings)
	}
	if sat.AtS < metrics.DefaultSaturationMinTime.Seconds() || sat.CompletedPerS > 1.5*capacity || sat.OfferedPerS < 5*capacity {
		t.Errorf("capacity %.2f req/s: verdict %+v", capacity, sat)
	}
	if !strings.HasPrefix(sat.Reason, metrics.OverSaturated(sat.OfferedPerS, sat.CompletedPerS)) {
		t.Errorf("reason %q", sat.Reason)
	}
	if res.Summary.Run.Interrupted || res.Records >= len(reqs) || res.Summary.Requests.Cancelled == 0 {
		t.Errorf("stopped run: interrupted %v, %d of %d records, failures %v", res.Summary.Run.Interrupted, res.Records, len(reqs), res.Summary.Requests.Failures)
	}
	warned := 0
	for _, w := range res.Summary.Warnings {
		if strings.HasPrefix(w, "saturated: over-saturated at ") || strings.Contains(w, "the run stopped at saturation") {
			warned++
		}
	}
	if warned != 2 {
		t.Errorf("warnings %q", res.Summary.Warnings)
	}
	back, err := runner.ReadSummary(out)
	if err != nil || back.Saturation == nil || *back.Saturation != *sat {
		t.Fatalf("summary.json in %s: %v, %+v", filepath.Base(out), err, back)
	}
	// report --recompute keeps the verdict made while the run went, and its warning.
	again, err := runner.Resummarize(out, back, metrics.Options{})
	if err != nil || again.Saturation == nil || *again.Saturation != *sat || !strings.Contains(strings.Join(again.Warnings, "\n"), "saturated: "+sat.Reason) {
		t.Errorf("recomputed: %v, %+v", err, again)
	}
}
