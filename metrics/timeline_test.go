package metrics

import (
	"reflect"
	"testing"
	"time"
)

func TestFluidityIndexHandBuilt(t *testing.T) {
	dl := fluidityDeadlines{ttft: 100 * time.Millisecond, rate: -1, tbt: 50 * time.Millisecond}
	cases := []struct {
		name string
		rec  Record
		dl   fluidityDeadlines
		want float64
	}{
		{"every token exactly on its deadline", timeline("a", 0, 100, constGaps(10, 50), nil), dl, 1},
		{"early tokens bank slack that absorbs a later 120ms gap",
			timeline("b", 0, 100, []float64{10, 10, 10, 120}, nil), dl, 1},
		// token3 arrives 400ms after token2 and 330ms after its deadline: floor(400/50)=8
		// misses over 5 tokens clamps to 0.
		{"one long gap in a short request", timeline("c", 0, 100, []float64{40, 40, 400, 40}, nil), dl, 0},
		// 101 tokens, one 400ms gap early: 8 misses.
		{"early stall", timeline("d", 0, 100, stallAt(100, 2, 40, 400), nil), dl, 1 - 8.0/101},
		// The same stall late: 10ms of slack per token has built up, no miss.
		{"late stall", timeline("e", 0, 100, stallAt(100, 90, 40, 400), nil), dl, 1},
		// First token 200ms late: one miss, then the schedule restarts from it.
		{"late first token", timeline("f", 0, 300, constGaps(9, 50), nil), dl, 1 - 1.0/10},
		// A 5-token chunk after a 200ms gap: its first token misses floor(200/50)=4, the
		// other four arrive with it, on the reset schedule.
		{"burst chunk", timeline("g", 0, 100, []float64{50, 200, 50}, []int32{1, 1, 5, 1}), dl, 1 - 4.0/8},
		// A 1000-token prompt earns 100ms more at 10,000 tok/s: a 150ms TTFT is on time.
		{"prompt-length-aware first deadline", func() Record {
			r := timeline("h", 0, 150, constGaps(3, 50), nil)
			r.InputTokens = 1000
			return r
		}(), fluidityDeadlines{ttft: 100 * time.Millisecond, rate: 10000, tbt: 50 * time.Millisecond}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := fluidityIndex(&c.rec, c.dl)
			if !ok || !near(got, c.want, 1e-12) {
				t.Fatalf("index %v (ok=%v), want %v", got, ok, c.want)
			}
		})
	}
}

// stallAt returns n gaps of g ms with gaps[at] = stall ms.
func stallAt(n, at int, g, stall float64) []float64 {
	gaps := constGaps(n, g)
	gaps[at] = stall
	return gaps
}

func TestSameStallEarlyAndLateDiffersOnlyInFluidity(t *testing.T) {
	opts := Options{FluidityTTFT: 100 * time.Millisecond, FluidityPrefillRate: -1, FluidityTBT: 50 * time.Millisecond, StallThreshold: 200 * time.Millisecond}
	early, err := Summarize(SliceSource{timeline("x", 0, 100, stallAt(100, 2, 40, 400), nil)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	late, err := Summarize(SliceSource{timeline("x", 0, 100, stallAt(100, 90, 40, 400), nil)}, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(early.Latency.TPOT, late.Latency.TPOT) || early.Latency.ITL.P90 != late.Latency.ITL.P90 ||
		early.Latency.ITL.P99 != late.Latency.ITL.P99 || early.Latency.MaxGap.Max != late.Latency.MaxGap.Max {
		t.Fatalf("TPOT/ITL must be identical: early %+v / %+v, late %+v / %+v",
			early.Latency.TPOT, early.Latency.ITL, late.Latency.TPOT, late.Latency.ITL)
	}
	if early.Stalls.Count != 1 || late.Stalls.Count != 1 {
		t.Fatalf("both have one stall: %d %d", early.Stalls.Count, late.Stalls.Count)
	}
	if !(early.Fluidity.IndexMean < late.Fluidity.IndexMean) || late.Fluidity.IndexMean != 1 {
		t.Fatalf("fluidity early %v late %v", early.Fluidity.IndexMean, late.Fluidity.IndexMean)
	}
	if !near(early.Fluidity.IndexMean, 1-8.0/101, 1e-3) || early.Fluidity.FractionAbove90 != 1 {
		t.Errorf("early fluidity %+v", early.Fluidity)
	}
}

func TestStallsAbsoluteAndRelative(t *testing.T) {
	// Gaps: 20,20,150,20,300 -> two gaps above 100ms, 450ms stalled over 510ms of decode.
	r := timeline("s", 0, 50, []float64{20, 20, 150, 20, 300}, nil)
	clean := timeline("t", 1000, 50, constGaps(20, 20), nil)
	for _, tc := range []struct {
		name string
		opts Options
		rule string
	}{
		{"absolute", Options{StallThreshold: 100 * time.Millisecond}, "absolute"},
		// The median gap between bursts is 20ms (one token per burst); 5x gives 100ms.
		{"relative", Options{}, "5x median burst ITL (20 ms)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sum, err := Summarize(SliceSource{r, clean}, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			st := sum.Stalls
			if !near(st.ThresholdMs, 100, 0.1) || st.ThresholdRule != tc.rule {
				t.Fatalf("threshold %v %q", st.ThresholdMs, st.ThresholdRule)
			}
			if st.Count != 2 || st.RequestsWithStall != 1 || st.RequestFraction != 0.5 {
				t.Errorf("counts %+v", st)
			}
			if !near(st.StalledTimeMs, 450, 1e-9) || !near(st.DecodeTimeMs, 510+400, 1e-9) || !near(st.StalledTimeFraction, 450.0/910, 1e-12) {
				t.Errorf("time %+v", st)
			}
		})
	}
}

func TestITLP99PerRequest(t *testing.T) {
	// 200 per-token samples: 150 gaps of 10ms, one of 500ms, 49 zeros from multi-token chunks.
	gaps := constGaps(151, 10)
	gaps[70] = 500
	tokens := make([]int32, 152)
	for i := range tokens {
		tokens[i] = 1
	}
	tokens[0] = 50 // 49 zeros
	r := timeline("p", 0, 10, gaps, tokens)
	v, ok, _ := itlP99Ns(r.Chunks, nil)
	// 200 samples: rank ceil(198) = 198 -> sorted: 49 zeros, 150 x 10ms, then 500ms at 200.
	if !ok || v != 10*msNs {
		t.Fatalf("p99 %v ok=%v", time.Duration(v), ok)
	}
	gaps[71] = 500
	gaps[72] = 500
	r = timeline("p", 0, 10, gaps, tokens)
	if v, _, _ := itlP99Ns(r.Chunks, nil); v != 500*msNs {
		t.Fatalf("with three 500ms gaps p99 %v", time.Duration(v))
	}
}
