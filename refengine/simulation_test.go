package refengine

import (
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"
)

// TestSimulationMatchesSimulate: a Simulation fed in arrival order gives exactly Simulate's
// timelines and counters, for every engine shape whose scheduling differs (speculative
// decoding, disaggregated pools, prefix caching with shared blocks, early-eos, noise), and for
// an input not in arrival order, with ties.
func TestSimulationMatchesSimulate(t *testing.T) {
	noise, err := ParseNoise("realistic")
	if err != nil {
		t.Fatal(err)
	}
	faults, err := ParseFaults("early-eos=0.3")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]Config{
		"default":       {},
		"spec":          {SpecK: 4, SpecAlpha: 0.7},
		"disaggregated": {Disaggregated: true},
		"noise":         {Noise: noise, Seed: 7},
		"early-eos":     {Faults: faults},
		"small-kv":      {MaxNumSeqs: 64, NumBlocks: 3000},
	}
	reqs := synthTrace(1500, 40, 3000, 300)
	for i := range reqs {
		reqs[i].HashIDs = []int64{int64(i % 5), int64(i % 7)} // shared prefixes
		if i%3 == 0 {
			reqs[i].MinTokens = 1
		}
	}
	// Out of order, with equal arrivals: Simulate sorts stably; the Simulation is fed the same
	// order with each request's input index.
	reqs[10], reqs[20] = reqs[20], reqs[10]
	reqs[31].Arrival = reqs[30].Arrival
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			want, err := Simulate(reqs, cfg)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]Timeline, len(reqs))
			var finishOrder []time.Duration
			sim, err := NewSimulation(cfg, func(pos int, tl *Timeline) {
				got[pos] = *tl
				finishOrder = append(finishOrder, tl.Finish)
			})
			if err != nil {
				t.Fatal(err)
			}
			order := make([]int, len(reqs))
			for i := range order {
				order[i] = i
			}
			sort.SliceStable(order, func(a, b int) bool { return reqs[order[a]].Arrival < reqs[order[b]].Arrival })
			for _, i := range order {
				if err := sim.Add(i, &reqs[i]); err != nil {
					t.Fatal(err)
				}
			}
			st, err := sim.Finish()
			if err != nil {
				t.Fatal(err)
			}
			if sim.InFlight() != 0 {
				t.Errorf("%d requests still in flight after Finish", sim.InFlight())
			}
			if st != want.Stats {
				t.Errorf("stats %+v, Simulate's %+v", st, want.Stats)
			}
			for i := range got {
				if !reflect.DeepEqual(got[i], want.Timelines[i]) {
					t.Fatalf("request %d: timeline\n%+v\nSimulate's\n%+v", i, got[i], want.Timelines[i])
				}
			}
			if !sort.SliceIsSorted(finishOrder, func(a, b int) bool { return finishOrder[a] < finishOrder[b] }) {
				t.Error("timelines were not handed over in the order requests finished")
			}
		})
	}
}

func TestSimulationRefusesOutOfOrder(t *testing.T) {
	sim, err := NewSimulation(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := sim.Add(0, &SimRequest{ID: "a", Arrival: time.Second, PromptTokens: 10, MaxTokens: 2}); err != nil {
		t.Fatal(err)
	}
	err = sim.Add(1, &SimRequest{ID: "b", Arrival: time.Millisecond, PromptTokens: 10, MaxTokens: 2})
	if err == nil || !strings.Contains(err.Error(), "request 1 (b): arrival 1ms is before the previous request's 1s") {
		t.Errorf("out-of-order arrival: %v", err)
	}
	if _, err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	if err := sim.Add(2, &SimRequest{ID: "c", Arrival: 2 * time.Second, PromptTokens: 10, MaxTokens: 2}); err == nil {
		t.Error("a request added after Finish was accepted")
	}
}

// TestSimulationHoldsOnlyInFlight: the heap of a Simulation does not grow with the requests it
// has finished. 40,000 requests of 200 output tokens at a rate the engine keeps up with: a
// held timeline costs ≈ 3.4 KB (its emissions), so holding the first half would add ≈ 68 MB;
// the in-flight requests at any time are a few hundred.
func TestSimulationHoldsOnlyInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("simulates 40,000 requests")
	}
	const n = 40_000
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	finished := 0
	sim, err := NewSimulation(Config{}, func(int, *Timeline) { finished++ })
	if err != nil {
		t.Fatal(err)
	}
	var before, grown int64
	for i := 0; i < n; i++ {
		q := SimRequest{ID: "r", Arrival: time.Duration(i) * 50 * time.Millisecond, PromptTokens: 200, MaxTokens: 200}
		if err := sim.Add(i, &q); err != nil {
			t.Fatal(err)
		}
		switch i {
		case 1000:
			before = heap()
		case n / 2:
			grown = heap() - before
		}
	}
	if _, err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	if finished != n {
		t.Fatalf("%d of %d timelines handed over", finished, n)
	}
	if grown > 4<<20 {
		t.Errorf("the heap grew by %d bytes over 19,000 requests: finished timelines are being held", grown)
	}
}
