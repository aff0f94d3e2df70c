package calibrate

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// fifoServer returns the client-side times of n requests arriving as a Poisson process at
// rate per second on a server that runs at most slots at once, first come first served, each
// for a prefill of 20 ms + 0.1 ms per prompt token and then 0.5 to 3 s of decode.
func fifoServer(n, slots int, rate float64, seed uint64) []timing {
	rng := rand.New(rand.NewPCG(seed, 11))
	ts := make([]timing, n)
	free := make([]int64, slots) // when each slot frees
	var at float64
	for i := range ts {
		at += rng.ExpFloat64() / rate
		t := timing{intended: int64(at * 1e9), prompt: 100 + rng.IntN(2000)}
		s := 0
		for k := range free {
			if free[k] < free[s] {
				s = k
			}
		}
		start := max(t.intended, free[s])
		t.first = start + int64((0.02+1e-4*float64(t.prompt))*1e9)
		t.end = t.first + int64((0.5+2.5*rng.Float64())*1e9)
		free[s] = t.end
		ts[i] = t
	}
	return ts
}

// TestQueueCap: the TTFT queueing shape gives a FIFO server's slot count over many seeded
// runs, from its peak of streaming requests as the lower bound or from 1, and no cap where
// it never binds.
func TestQueueCap(t *testing.T) {
	for _, slots := range []int{2, 4, 7} {
		for seed := range uint64(10) {
			ts := fifoServer(60, slots, float64(slots)*0.4, seed)
			for _, lo := range []int{peakStreaming(ts), 1} { // the shape alone, without the peak
				if got := queueCap([][]timing{ts}, lo); got != slots {
					t.Errorf("%d slots, seed %d, from %d: learned %d (%d queued)", slots, seed, lo, got, queuedUnder([][]timing{ts}, slots))
				}
			}
		}
	}
	for seed := range uint64(10) {
		for _, ts := range [][]timing{
			fifoServer(60, 4, 0.05, seed), // one request at a time: the cap never binds
			fifoServer(60, 64, 2, seed),   // several at once, far under the cap
		} {
			for _, lo := range []int{peakStreaming(ts), 1} {
				if got := queueCap([][]timing{ts}, lo); got != 0 {
					t.Errorf("seed %d, from %d: learned a cap of %d where none bound (peak %d)", seed, lo, got, peakStreaming(ts))
				}
			}
		}
	}
}

// TestLearnedCapScraped: the server's gauges give the cap when it queued at its peak, in every
// run that queued; transient waiting below the peak, or runs that disagree, leave the cap to
// the TTFT shape.
func TestLearnedCapScraped(t *testing.T) {
	queued := fifoServer(60, 4, 1.6, 1)
	for _, c := range []struct {
		name string
		runs []run
		want int
		src  string
	}{
		{"queued at the peak", []run{{serverPeak: 6, serverCap: 6}, {serverPeak: 5}}, 6, CapFromScrape},
		{"waiting below the peak", []run{{serverPeak: 4, serverCap: 3, tims: queued, peak: peakStreaming(queued)}}, 4, CapFromQueue},
		{"runs disagree", []run{{serverPeak: 4, serverCap: 4, tims: queued}, {serverPeak: 8, serverCap: 8}}, 0, ""},
		{"nothing", []run{{tims: fifoServer(60, 4, 0.05, 2)}}, 0, ""},
	} {
		if got, src := learnedCap(c.runs); got != c.want || src != c.src {
			t.Errorf("%s: learned %d from %q, want %d from %q", c.name, got, src, c.want, c.src)
		}
	}
}

// TestPrefillTimeMatchesEngine: the prefill the fit models for a request alone is the TTFT
// the engine gives it, chunked or not.
func TestPrefillTimeMatchesEngine(t *testing.T) {
	g, _ := perf.LookupGPU("a100")
	c := Constants{BWEff: 0.4, KVBWEff: 0.4 * perf.DefaultKVBWEff / perf.DefaultBWEff, FLOPEff: 0.3, StepOverhead: 5 * time.Millisecond}
	g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead = c.BWEff, c.KVBWEff, c.FLOPEff, c.StepOverhead
	reg := perf.NewRegistry()
	if err := reg.Add(nil, []perf.GPU{g}); err != nil {
		t.Fatal(err)
	}
	roof, err := rooflineFor(refengine.Config{GPU: "a100"}, reg, g)
	if err != nil {
		t.Fatal(err)
	}
	r, err := roof(c)
	if err != nil {
		t.Fatal(err)
	}
	for _, budget := range []int{256, 512, 8192} {
		for _, prompt := range []int{1, 300, 511, 512, 513, 3000} {
			res, err := refengine.Simulate([]refengine.SimRequest{{ID: "a", PromptTokens: prompt, MaxTokens: 1, IgnoreEOS: true}},
				refengine.Config{GPU: "a100", Profiles: reg, MaxNumBatchedTokens: budget, DisablePrefixCaching: true, Seed: 1})
			if err != nil {
				t.Fatal(err)
			}
			if got, want := prefillTime(r, prompt, budget), res.Timelines[0].TTFT(); got != want {
				t.Errorf("budget %d, prompt %d: modelled %s, engine %s", budget, prompt, got, want)
			}
		}
	}
}

// TestIdlePrefills: only requests sent to an empty server that kept it alone until their
// first token are prefill observations.
func TestIdlePrefills(t *testing.T) {
	s := int64(1e9)
	ts := []timing{
		{intended: 0, first: 1 * s / 10, end: 2 * s, prompt: 10},      // alone
		{intended: 3 * s, first: 4 * s, end: 6 * s, prompt: 20},       // the next is sent before its first token
		{intended: 35 * s / 10, first: 5 * s, end: 7 * s, prompt: 30}, // sent while one runs
		{intended: 8 * s, first: 9 * s, end: 10 * s, prompt: 40},      // alone, last
	}
	got := idlePrefills([]run{{tims: ts}})
	if len(got) != 2 || got[0].prompt != 10 || got[1].prompt != 40 || got[0].ttft != 0.1 || got[1].ttft != 1 {
		t.Errorf("idle prefills %+v, want prompts 10 (0.1 s) and 40 (1 s)", got)
	}
}

// FuzzParseGauges: any server-metrics file gives counts within bounds, the cap at most the
// peak, or an error; never a panic.
func FuzzParseGauges(f *testing.F) {
	f.Add([]byte(`{"endpoint": "http://127.0.0.1:8000/metrics", "samples": [{"t": 0.5, "running": 4, "waiting": 2},
  {"t": 1, "running": 3, "waiting": 0}], "errors": 0}`))
	f.Add([]byte(`{"samples": [{"running": 1e300, "waiting": -1}, {"running": 0.5}]}`))
	f.Add([]byte(`{"samples": null}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		peak, c, err := parseGauges(data, "server-metrics.json")
		if err != nil {
			return
		}
		if peak < 0 || peak >= 1e7 || c < 0 || c > peak {
			t.Errorf("peak %d, cap %d", peak, c)
		}
	})
}
