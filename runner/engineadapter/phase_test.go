package engineadapter

import (
	"context"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestRunAndSimulateAssignTheSamePhases replays one trace with warm-up and cool-down through
// loadgen over HTTP and through the simulator, at the same rate scale, and checks that every
// request lands in the same phase on both paths. The cool-down window is chosen so that the
// two end-of-run rules used before (the last arrival, or one mean gap after it) disagree on
// some request: the test fails if either path goes back to its own rule.
func TestRunAndSimulateAssignTheSamePhases(t *testing.T) {
	reqs, err := traces.ReadFile(chatSmall, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	const rateScale = 20
	first, last := traces.FromSlice(reqs).Span()
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / rateScale) }
	gap := (scale(last) - scale(first)) / time.Duration(len(reqs)-1)
	warmup := scale(2 * time.Second)
	// The old simulate rule put the cool-down window at [L-cooldown, ...) with L the last
	// arrival, the run's at [L+gap-cooldown, ...). With cooldown = L-a+gap/2 for an arrival a
	// well before L, a is in the first window and not in the second.
	L := scale(last)
	a := scale(reqs[len(reqs)-10].Arrival)
	cooldown := L - a + gap/2
	if a < L-cooldown || a >= L+gap-cooldown {
		t.Fatalf("arrival %v does not separate the two end-of-run rules (last %v, gap %v)", a, L, gap)
	}

	sim := &Simulator{Config: refengine.Config{Seed: 1}, RateScale: rateScale, Warmup: warmup, Cooldown: cooldown}
	simPhase := map[string]string{}
	if _, err := sim.Produce(context.Background(), traces.FromSlice(reqs), func(r *metrics.Record) { simPhase[r.ID] = r.Phase }); err != nil {
		t.Fatal(err)
	}

	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	var mu sync.Mutex
	runPhase := map[string]string{}
	_, err = loadgen.RunSource(context.Background(), traces.FromSlice(reqs), loadgen.Options{
		Target:    loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
		Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second,
		RateScale: rateScale, Warmup: warmup, Cooldown: cooldown,
	}, func(r *metrics.Record) {
		mu.Lock()
		runPhase[r.ID] = r.Phase
		mu.Unlock()
	})
	if err != nil {
		t.Fatal(err)
	}

	counts := map[string]int{}
	for _, r := range reqs {
		sp, ok1 := simPhase[r.ID]
		rp, ok2 := runPhase[r.ID]
		if !ok1 || !ok2 {
			t.Fatalf("%s: record missing (simulate %v, run %v)", r.ID, ok1, ok2)
		}
		if sp != rp {
			t.Errorf("%s (arrival %v, scaled %v): simulate says phase %q, run says %q", r.ID, r.Arrival, scale(r.Arrival), sp, rp)
		}
		counts[sp]++
	}
	if counts[metrics.PhaseWarmup] == 0 || counts[metrics.PhaseCooldown] == 0 || counts[metrics.PhaseSteady] == 0 {
		t.Fatalf("phases %v: want every phase represented", counts)
	}
}
