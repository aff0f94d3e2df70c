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
