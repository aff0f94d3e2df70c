package selfbench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// TestRunSmall runs every measurement at a tiny size and checks that each figure was
// produced; speed targets live in the bench command and benchmarks, not here.
func TestRunSmall(t *testing.T) {
	var log bytes.Buffer
	f, err := Run(t.Context(), Options{
		Runs: 2, DispatchStep: 50 * time.Millisecond, DispatchStart: 200, DispatchMax: 400, LagLimit: time.Hour,
		IngestTokens: 3000, Streams: 20, StreamTokens: 5, TokenGap: 2 * time.Millisecond, Log: &log,
	})
	if err != nil {
		t.Fatal(err)
	}
	if f.DispatchReqPerS <= 0 || f.IngestTokensPerS <= 0 || f.ArrivalErrorP99Ms < 0 || f.ArrivalErrorMaxMs < f.ArrivalErrorP99Ms {
		t.Errorf("figures %+v", f)
	}
	if len(f.Runs.DispatchReqPerS) != 2 || len(f.Runs.IngestTokensPerS) != 2 || len(f.Runs.ArrivalErrorP99Ms) != 2 {
		t.Errorf("runs %+v, want two of each", f.Runs)
	}
	if len(f.MeetsTargets) != 3 || !strings.Contains(log.String(), "run 2: arrival error") {
		t.Errorf("targets %v, log:\n%s", f.MeetsTargets, log.String())
	}
}

func TestMedianQuantile(t *testing.T) {
	if m := median([]float64{3, 1, 2}); m != 2 {
		t.Errorf("median %v", m)
	}
	if m := median([]float64{4, 1, 2, 3}); m != 2.5 {
		t.Errorf("median %v", m)
	}
	if q := quantile([]float64{1, 2, 3, 4, 5}, 1); q != 5 {
		t.Errorf("quantile %v", q)
	}
}

// TestRunLongSmall runs the long-streams scenario at a tiny size over both protocols and
// checks that every stream succeeded and each figure was produced.
func TestRunLongSmall(t *testing.T) {
	for _, h2 := range []bool{false, true} {
		var log bytes.Buffer
		f, err := RunLong(t.Context(), LongOptions{InFlight: []int{30}, Gap: 5 * time.Millisecond, Window: 150 * time.Millisecond,
			RampRate: 1000, HTTP2: h2, RSS: func() uint64 { return 1 }, Log: &log})
		if err != nil {
			t.Fatal(err)
		}
		p := f.Points[0]
		if p.Succeeded != 30 || p.Failed != 0 || p.ArrivalErrorMaxMs < p.ArrivalErrorP99Ms || p.TokensPerS <= 0 {
			t.Errorf("http2=%v: %+v\n%s", h2, p, log.String())
		}
		if h2 && p.Connections > 2 || !h2 && p.Connections != 30 {
			t.Errorf("http2=%v: %d connections for 30 streams", h2, p.Connections)
		}
	}
	f, err := RunLong(t.Context(), LongOptions{InFlight: []int{100}, FDLimit: 100})
	if err != nil || f.Points[0].Skipped == "" {
		t.Errorf("100 streams with 100 file descriptors: %v %+v, want skipped", err, f)
	}
}

// TestMedianPoint: a point measured several times reports each figure's median, the failures
// of every run summed (a median would hide a run that failed), and keeps the runs; one run is
// reported as it is.
func TestMedianPoint(t *testing.T) {
	runs := []LongPoint{
		{Streams: 10, Succeeded: 10, LagP99Ms: 3, ArrivalErrorP99Ms: 0.5, CPUStealFraction: 0.2, WakeFloorP99Ms: 1},
		{Streams: 10, Succeeded: 8, Failed: 2, Failures: map[string]int{"timeout": 2}, LagP99Ms: 1, ArrivalErrorP99Ms: 0.7, CPUStealFraction: 0, WakeFloorP99Ms: 0.1},
		{Streams: 10, Succeeded: 9, Failed: 1, Failures: map[string]int{"timeout": 1}, LagP99Ms: 2, ArrivalErrorP99Ms: 0.9, CPUStealFraction: 0.01, WakeFloorP99Ms: 0.2},
	}
	p := medianPoint(runs)
	if p.Streams != 10 || p.LagP99Ms != 2 || p.ArrivalErrorP99Ms != 0.7 || p.CPUStealFraction != 0.01 || p.WakeFloorP99Ms != 0.2 {
		t.Errorf("medians: %+v", p)
	}
	if p.Succeeded != 27 || p.Failed != 3 || p.Failures["timeout"] != 3 || len(p.Runs) != 3 {
		t.Errorf("sums and runs: succeeded %d failed %d failures %v, %d runs", p.Succeeded, p.Failed, p.Failures, len(p.Runs))
	}
	if one := medianPoint(runs[:1]); one.LagP99Ms != 3 || one.Runs != nil {
		t.Errorf("one run: %+v", one)
	}
}
