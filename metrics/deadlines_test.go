package metrics

import (
	"strings"
	"testing"
	"time"
)

// bursty builds a request decoded at stepMs per verification pass, each pass delivering
// tokensPerStep tokens as separate one-token chunks 20 µs apart (llama.cpp's framing of a
// speculative burst); stallAfter > 0 inserts a stall of stallMs after that many passes.
func bursty(id string, intendedMs float64, steps, tokensPerStep int, stepMs float64, stallAfter int, stallMs float64) Record {
	var gaps []float64
	for s := 0; s < steps; s++ {
		for k := 0; k < tokensPerStep; k++ {
			if s == 0 && k == 0 {
				continue
			}
			g := 0.02
			if k == 0 {
				g = stepMs - 0.02*float64(tokensPerStep-1)
				if s == stallAfter {
					g += stallMs
				}
			}
			gaps = append(gaps, g)
		}
	}
	return timeline(id, intendedMs, 30, gaps, nil)
}

// TestStallThresholdSurvivesBursts: the default threshold follows the decode cadence per pass, so a steady
// decode delivered in bursts of per-token events has no stall, and every injected 500 ms stall
// in an otherwise identical run is found.
func TestStallThresholdSurvivesBursts(t *testing.T) {
	var steady, stalled SliceSource
	for i := 0; i < 20; i++ {
		steady = append(steady, bursty("s", float64(i)*100, 40, 4, 12, 0, 0))
		stallAt := 0
		if i%2 == 0 {
			stallAt = 5 + i
		}
		stalled = append(stalled, bursty("s", float64(i)*100, 40, 4, 12, stallAt, 500))
	}
	a, err := Summarize(steady, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.Stalls.Count != 0 || !strings.Contains(a.Stalls.ThresholdRule, "median burst ITL") || a.Stalls.Source != StallBurstCadence {
		t.Fatalf("steady bursty decode: %d stalls, threshold %v ms (%s)", a.Stalls.Count, a.Stalls.ThresholdMs, a.Stalls.ThresholdRule)
	}
	// The chunk-gap median is 20 µs here; a rule built on it would call every pass a stall.
	if a.Latency.ITLChunk.P50 > 0.1 {
		t.Fatalf("fixture: chunk ITL P50 %v ms, want the bursts' 20 µs", a.Latency.ITLChunk.P50)
	}
	b, err := Summarize(stalled, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if b.Stalls.Count != 10 || b.Stalls.RequestsWithStall != 10 {
		t.Fatalf("%d stalls in %d requests, want the 10 injected (threshold %v ms, %s)", b.Stalls.Count, b.Stalls.RequestsWithStall, b.Stalls.ThresholdMs, b.Stalls.ThresholdRule)
	}
}

// TestStallFloor: a very fast decode gets the documented floor, and the rule says so.
func TestStallFloor(t *testing.T) {
	sum, err := Summarize(SliceSource{timeline("f", 0, 10, constGaps(50, 1), nil)}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Stalls.ThresholdMs != ms(DefaultStallFloor) || !strings.HasPrefix(sum.Stalls.ThresholdRule, "floor 20ms") {
		t.Fatalf("threshold %v (%s)", sum.Stalls.ThresholdMs, sum.Stalls.ThresholdRule)
	}
}

// TestFluidityMoves: a 500 ms stall lowers the index at a 50 ms TBT deadline (from --slo),
// and the run-derived default deadlines catch it where a fixed 50 ms deadline would bank
// enough slack to hide it. The summary names the deadlines' origin.
func TestFluidityMoves(t *testing.T) {
	clean := func(id string, at float64) Record { return timeline(id, at, 200, constGaps(80, 40), nil) }
	stall := func(id string, at float64) Record { return timeline(id, at, 200, stallAt(80, 20, 40, 500), nil) }
	slo := Options{SLO: SLO{TTFT: 250 * time.Millisecond, TPOT: 50 * time.Millisecond}}
	a, _ := Summarize(SliceSource{clean("a", 0)}, slo)
	b, _ := Summarize(SliceSource{stall("b", 0)}, slo)
	if a.Fluidity.IndexMean != 1 || !(b.Fluidity.IndexMean < 0.95) || a.Fluidity.TBTDeadlineMs != 50 || a.Fluidity.DeadlineRule != "from the SLO" {
		t.Fatalf("at 50 ms TBT: clean %+v, stalled %+v", a.Fluidity, b.Fluidity)
	}

	// A fast decode (7 ms per token) with a 500 ms stall after 100 tokens.
	fast := func(id string, at float64, stallMs float64) Record {
		return timeline(id, at, 30, stallAt(200, 100, 7, 7+stallMs), nil)
	}
	var base, hit SliceSource
	for i := 0; i < 10; i++ {
		base = append(base, fast("c", float64(i)*1000, 0))
		s := 0.0
		if i == 3 {
			s = 500
		}
		hit = append(hit, fast("d", float64(i)*1000, s))
	}
	fixed := Options{FluidityTBT: 50 * time.Millisecond}
	hid, _ := Summarize(hit, fixed)
	if hid.Fluidity.IndexP1 != 1 {
		t.Fatalf("fixture: a fixed 50 ms deadline should hide the stall (slack), got %+v", hid.Fluidity)
	}
	c, _ := Summarize(base, Options{})
	d, _ := Summarize(hit, Options{})
	if c.Fluidity.IndexMean != 1 || !(d.Fluidity.IndexP1 < 0.9) || !strings.Contains(d.Fluidity.DeadlineRule, "median TTFT and TPOT") {
		t.Fatalf("derived deadlines: clean %+v, stalled %+v", c.Fluidity, d.Fluidity)
	}
	if !near(d.Fluidity.TBTDeadlineMs, 7*DefaultFluidityPace, 0.05) {
		t.Errorf("derived TBT %v ms, want %v", d.Fluidity.TBTDeadlineMs, 7*DefaultFluidityPace)
	}
}
