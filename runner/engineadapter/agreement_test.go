package engineadapter

import (
	"context"
	"math"
	"net/http/httptest"
	"sort"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

const chatSmall = "../../traces/examples/chat-small.jsonl"

func medianOf(v []float64) float64 {
	sort.Float64s(v)
	if len(v) == 0 {
		return math.NaN()
	}
	return v[len(v)/2]
}

// TestRunAgreesWithSimulate replays the example trace over HTTP against the reference engine
// (2x faster than real time) and on the virtual clock, and checks the claim: at a load
// that does not saturate the client, the two agree on TPOT and TTFT medians. The engine's own
// ground truth for the HTTP run is compared with the simulation too, so a failure says whether
// the engine or the harness drifted.
func TestRunAgreesWithSimulate(t *testing.T) {
	if testing.Short() {
		t.Skip("replays a 20 s trace at 2x: skipped in -short mode")
	}
	reqs, err := traces.ReadFile(chatSmall, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const scale = 2
	cfg := refengine.Config{Seed: 1}
	sim, err := refengine.Simulate(SimRequests(reqs, 1), cfg)
	if err != nil {
		t.Fatal(err)
	}
	var simTTFT, simTPOT []float64
	for i := range sim.Timelines {
		r := TimelineRecord(&sim.Timelines[i], &reqs[i])
		simTTFT = append(simTTFT, float64(r.FirstToken-r.Intended)/1e6)
		simTPOT = append(simTPOT, float64(r.End-r.FirstToken)/1e6/float64(r.OutputTokens-1))
	}

	live := cfg
	live.TimeScale = scale
	eng, err := refengine.New(live)
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	lo := loadgen.Options{
		Target:    loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
		Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second,
	}
	var recs []metrics.Record
	sink := func(r *metrics.Record) {
		c := *r
		c.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
		recs = append(recs, c)
	}
	mu := make(chan struct{}, 1)
	locked := func(r *metrics.Record) { mu <- struct{}{}; sink(r); <-mu }
	if _, err := runner.HTTPProducer(lo, scale)(context.Background(), traces.FromSlice(reqs), locked); err != nil {
		t.Fatal(err)
	}
	if len(recs) != len(reqs) {
		t.Fatalf("%d records for %d requests", len(recs), len(reqs))
	}
	var runTTFT, runTPOT, gtTTFT, gtTPOT []float64
	for _, r := range recs {
		if !r.OK() {
			t.Fatalf("%s failed: %s %s", r.ID, r.Failure, r.Error)
		}
		runTTFT = append(runTTFT, float64(r.FirstToken-r.Intended)/1e6)
		runTPOT = append(runTPOT, float64(r.End-r.FirstToken)/1e6/float64(r.OutputTokens-1))
		tl, ok := eng.Timeline(r.ID)
		if !ok {
			t.Fatalf("no ground truth for %s", r.ID)
		}
		last := tl.Emissions[len(tl.Emissions)-1].At
		gtTTFT = append(gtTTFT, float64(tl.Emissions[0].At-tl.Arrival)/1e6)
		gtTPOT = append(gtTPOT, float64(last-tl.Emissions[0].At)/1e6/float64(tl.OutputTokens-1))
	}
	s := map[string]float64{"sim ttft": medianOf(simTTFT), "sim tpot": medianOf(simTPOT),
		"engine ttft": medianOf(gtTTFT), "engine tpot": medianOf(gtTPOT),
		"run ttft": medianOf(runTTFT), "run tpot": medianOf(runTPOT)}
	t.Logf("medians (ms): %v", s)
	within := func(name string, got, want, rel, abs float64) {
		if d := math.Abs(got - want); d > rel*want && d > abs {
			t.Errorf("%s median %.3f ms vs simulate %.3f ms: differs by %.1f%%", name, got, want, 100*d/want)
		}
	}
	// The engine behind HTTP runs the same schedule as the simulation (arrivals differ only by
	// the client's send jitter).
	within("engine TPOT", s["engine tpot"], s["sim tpot"], 0.03, 0.1)
	within("engine TTFT", s["engine ttft"], s["sim ttft"], 0.10, 1)
	// What the harness measured over HTTP, scaled back to real time: TPOT within a few
	// percent. TTFT also carries the HTTP round trip the simulation does not have (the request's
	// way to the scheduler, the first chunk's way back, timer lateness: about 1.3 ms here,
	// more under -race or with other packages testing in parallel), which the time scale magnifies;
	// it gets 6 ms of real time on top.
	within("run TPOT", s["run tpot"], s["sim tpot"], 0.05, 0.2)
	within("run TTFT", s["run ttft"], s["sim ttft"], 0.10, 6*scale)
}
