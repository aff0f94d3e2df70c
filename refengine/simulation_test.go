package refengine

import (
	"reflect"
	"runtime"
	"sort"
	"strconv"
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
		t.Run(name, func(t *testing.T) { simulationMatches(t, reqs, cfg) })
	}
}

// TestSimulationBacklogMatchesSimulate: at ten times what the engine can serve, almost every
// request waits in the Simulation's compact backlog (simulation_backlog.go) rather than the
// scheduler's queue, and the timelines and counters are still exactly Simulate's, for the
// engine shapes whose admission differs: preemption (a small KV cache), speculative decoding,
// disaggregated pools, prompts with text (hashed when checked), shared prefixes and
// early-eos.
func TestSimulationBacklogMatchesSimulate(t *testing.T) {
	faults, err := ParseFaults("early-eos=0.3")
	if err != nil {
		t.Fatal(err)
	}
	cfgs := map[string]Config{
		"default":       {MaxNumSeqs: 8},
		"small-kv":      {MaxNumSeqs: 32, NumBlocks: 400},
		"spec":          {MaxNumSeqs: 8, SpecK: 3, SpecAlpha: 0.6},
		"disaggregated": {MaxNumSeqs: 8, Disaggregated: true},
		"early-eos":     {MaxNumSeqs: 8, Faults: faults},
		"no-prefix":     {MaxNumSeqs: 8, DisablePrefixCaching: true},
	}
	reqs := synthTrace(1200, 400, 1500, 120)
	for i := range reqs {
		switch i % 4 {
		case 0:
			reqs[i].HashIDs = []int64{int64(i % 3), int64(i % 5)}
		case 1:
			reqs[i].Prompt = strings.Repeat("the same long preamble of the prompt ", 20) + reqs[i].ID
		}
	}
	for name, cfg := range cfgs {
		t.Run(name, func(t *testing.T) {
			if name == "small-kv" {
				if res, err := Simulate(reqs, cfg); err != nil || res.Stats.Preemptions == 0 {
					t.Fatalf("small-kv: no preemption (%v)", err)
				}
			}
			if most := simulationMatches(t, reqs, cfg); most < len(reqs)/2 {
				t.Errorf("the backlog held at most %d of %d requests: the engine was not overloaded", most, len(reqs))
			}
		})
	}
}

// simulationMatches feeds reqs to a Simulation in arrival order and checks its timelines,
// counters and hand-over order against Simulate's. It returns the longest backlog seen.
func simulationMatches(t *testing.T, reqs []SimRequest, cfg Config) (mostBacklog int) {
	t.Helper()
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
		mostBacklog = max(mostBacklog, sim.backlog.len())
	}
	st, err := sim.Finish()
	if err != nil {
		t.Fatal(err)
	}
	if sim.InFlight() != 0 || sim.backlog.len() != 0 {
		t.Errorf("%d requests still in flight, %d in the backlog after Finish", sim.InFlight(), sim.backlog.len())
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
	return mostBacklog
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

// TestSimulationBacklogIsCompact: a request waiting behind an overloaded engine costs the
// Simulation its queued value, not a sequence ready to run. 40,000 requests of 1,000 prompt and
// 200 output tokens arrive at 1,000 a second, far beyond what the engine serves (≈ 30 a
// second): after the last arrival nearly all wait, and the heap has grown by < 200 bytes for
// each (155 now, 213 before the queued value was made 96 bytes; a sequence with its timeline,
// emission storage, KV block list and block hashes was ≈ 4.4 KB).
func TestSimulationBacklogIsCompact(t *testing.T) {
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
	ids := make([]string, n) // the trace's ids are the caller's, held before and after
	for i := range ids {
		ids[i] = "r" + strconv.Itoa(i)
	}
	sim, err := NewSimulation(Config{}, nil)
	if err != nil {
		t.Fatal(err)
	}
	before := heap()
	for i := 0; i < n; i++ {
		q := SimRequest{ID: ids[i], Arrival: time.Duration(i) * time.Millisecond, PromptTokens: 1000, MaxTokens: 200}
		if err := sim.Add(i, &q); err != nil {
			t.Fatal(err)
		}
	}
	grown, waiting := heap()-before, sim.InFlight()
	if waiting < n*9/10 {
		t.Fatalf("only %d of %d requests wait: the engine kept up", waiting, n)
	}
	per := grown / int64(waiting)
	t.Logf("%d waiting requests: the heap grew by %d bytes, %d each", waiting, grown, per)
	if per > 200 {
		t.Errorf("the heap grew by %d bytes for %d waiting requests (%d each)", grown, waiting, per)
	}
	if _, err := sim.Finish(); err != nil {
		t.Fatal(err)
	}
	runtime.KeepAlive(ids)
}
