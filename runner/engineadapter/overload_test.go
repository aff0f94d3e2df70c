package engineadapter

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// overloadEngine is a small engine (four requests at a time) so that a short trace can offer
// it several times what it serves.
var overloadEngine = refengine.Config{MaxNumSeqs: 4, Seed: 1}

// poissonTrace is n requests arriving as a Poisson process of rate per second, seeded.
func poissonTrace(seed uint64, n int, rate float64) []traces.Request {
	rng := rand.New(rand.NewPCG(seed, 35))
	reqs := make([]traces.Request, n)
	var at time.Duration
	for i := range reqs {
		at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
		reqs[i] = traces.Request{ID: fmt.Sprintf("r%d", i), Arrival: at, InputTokens: 200 + rng.IntN(400), OutputTokens: 20 + rng.IntN(60)}
	}
	return reqs
}

// servedRate is the engine's capacity measured without the watch: requests that all arrive at
// once keep it saturated until the last finishes.
func servedRate(t *testing.T, n int) float64 {
	reqs := poissonTrace(99, n, 1e9)
	res, err := refengine.Simulate(SimRequests(reqs, 1), overloadEngine)
	if err != nil {
		t.Fatal(err)
	}
	return float64(n) / res.Stats.Makespan.Seconds()
}

// simulateWarnings simulates reqs and returns the run's warnings.
func simulateWarnings(t *testing.T, reqs []traces.Request) []string {
	sim := &Simulator{Config: overloadEngine, RateScale: 1}
	p, err := sim.Produce(context.Background(), traces.FromSlice(reqs), func(*metrics.Record) {})
	if err != nil {
		t.Fatal(err)
	}
	return p.Warnings
}

// TestOverloadReported: over ten seeded Poisson traces at five times what the engine serves,
// every run is reported saturated, with the capacity it measured within 10% of the engine's
// (from a run that keeps it saturated to the end) and the offered rate within 10% of the
// trace's; over ten at half of it, none is.
func TestOverloadReported(t *testing.T) {
	capacity := servedRate(t, 2000)
	for seed := uint64(1); seed <= 10; seed++ {
		reqs := poissonTrace(seed, 1500, 5*capacity)
		w := newQueueWatch(reqs[0].Arrival, reqs[len(reqs)-1].Arrival, len(reqs))
		sim := &Simulator{Config: overloadEngine, RateScale: 1}
		res, err := refengine.Simulate(SimRequests(reqs, 1), sim.Config)
		if err != nil {
			t.Fatal(err)
		}
		for i := range res.Timelines {
			w.observe(&res.Timelines[i])
		}
		if !w.overloaded() {
			t.Fatalf("seed %d: five times the capacity not reported; waiting %v", seed, w.waiting)
		}
		if got, _ := w.capacity(); math.Abs(got/capacity-1) > 0.1 {
			t.Errorf("seed %d: capacity measured %.2f req/s, the engine serves %.2f", seed, got, capacity)
		}
		warns := simulateWarnings(t, reqs)
		if len(warns) != 1 || !strings.HasPrefix(warns[0], "saturated: over-saturated at ") || !strings.Contains(warns[0], metrics.QueueGrowth) {
			t.Fatalf("seed %d: warnings %q", seed, warns)
		}
		var offered, measured float64
		if _, err := fmt.Sscanf(warns[0], "saturated: over-saturated at %g req/s (completed %g req/s)", &offered, &measured); err != nil {
			t.Fatalf("seed %d: %q: %v", seed, warns[0], err)
		}
		if math.Abs(offered/(5*capacity)-1) > 0.1 || math.Abs(measured/capacity-1) > 0.1 {
			t.Errorf("seed %d: offered %g (trace %.3g), capacity %g (engine %.3g)", seed, offered, 5*capacity, measured, capacity)
		}

		if warns := simulateWarnings(t, poissonTrace(seed, 1500, capacity/2)); len(warns) != 0 {
			t.Errorf("seed %d: half the capacity reported: %q", seed, warns)
		}
	}
}

// TestOverloadNeedsGrowthThroughout: a queue that builds in a burst and drains, or that starts
// only late in the run, is not the whole run's; a trace too short to judge, or sent over a
// window too short for its completions to measure a capacity (150 requests at twelve times the
// capacity arrive within about three service times; 300 at a thousand times before any
// finishes), is not judged.
func TestOverloadNeedsGrowthThroughout(t *testing.T) {
	capacity := servedRate(t, 2000)
	burst := poissonTrace(3, 1200, capacity/2)
	for i := 200; i < 400; i++ { // a burst early on that the engine works off
		burst[i].Arrival = burst[200].Arrival
	}
	late := poissonTrace(4, 1200, capacity/2)
	tail := poissonTrace(5, 600, 5*capacity)
	off := late[len(late)-1].Arrival
	for i := range tail {
		tail[i].ID = fmt.Sprintf("t%d", i)
		tail[i].Arrival += off
	}
	late = append(late, tail...)
	short := poissonTrace(6, minQueueWatch-1, 10*capacity)
	quick := poissonTrace(8, 150, 12*capacity)
	instant := poissonTrace(9, 300, 1000*capacity)
	for name, reqs := range map[string][]traces.Request{"burst": burst, "late": late, "short": short, "quick": quick, "instant": instant} {
		if warns := simulateWarnings(t, reqs); len(warns) != 0 {
			t.Errorf("%s: reported as overloaded: %q", name, warns)
		}
	}
}

// TestOverloadInTheSummary: runner.Execute puts the simulation's overload warning into the
// summary's warnings, for one engine (the streamed pipeline) and for replicas behind a router
// (the held trace of SimulateCluster).
func TestOverloadInTheSummary(t *testing.T) {
	capacity := servedRate(t, 2000)
	for _, replicas := range []int{1, 2} {
		reqs := poissonTrace(7, 800, 10*capacity*float64(replicas))
		sim := &Simulator{Config: overloadEngine, RateScale: 1, Replicas: replicas, Router: "least-loaded"}
		res, err := runner.Execute(context.Background(), runner.Options{Requests: reqs, OutDir: t.TempDir(), Info: metrics.RunInfo{Mode: "simulated"}}, sim.Produce)
		if err != nil {
			t.Fatal(err)
		}
		n := 0
		for _, w := range res.Summary.Warnings {
			if strings.HasPrefix(w, "saturated: over-saturated at") {
				n++
			}
		}
		if n != 1 {
			t.Errorf("%d replicas: summary warnings %q: want one overload warning", replicas, res.Summary.Warnings)
		}
	}
}
