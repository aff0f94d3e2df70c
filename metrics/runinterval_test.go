package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
)

// ttftRun is one run of n requests 100 ms apart whose TTFT is 100 ms plus AR(1) noise with
// lag-one correlation rho and marginal standard deviation 10 ms.
func ttftRun(r *rand.Rand, n int, rho float64) SliceSource {
	out := make(SliceSource, n)
	e := r.NormFloat64() * 10
	for i := range out {
		if i > 0 {
			e = rho*e + math.Sqrt(1-rho*rho)*r.NormFloat64()*10
		}
		out[i] = timeline(fmt.Sprintf("r%04d", i), float64(i)*100, 100+e, constGaps(9, 5), nil)
	}
	return out
}

// The within-run interval of a mean covers the true mean at about its confidence level, for
// independent requests and for correlated neighbours (where the block bootstrap must widen the
// interval well beyond the independent σ/√n).
func TestRunIntervalsCoverTheMean(t *testing.T) {
	racebuild.Heavy(t)
	for _, tc := range []struct {
		rho      float64
		min, max int // covered trials of 200
		widen    float64
	}{
		{0, 180, 198, 0.8},
		{0.8, 170, 200, 2.2},
	} {
		t.Run(fmt.Sprintf("rho=%g", tc.rho), func(t *testing.T) {
			r := rand.New(rand.NewPCG(3, uint64(tc.rho*10)))
			covered := 0
			var seSum float64
			const trials, n = 200, 400
			for trial := 0; trial < trials; trial++ {
				iv, err := RunIntervals([]Source{ttftRun(r, n, tc.rho)}, RunIntervalOptions{
					Metrics: []string{"ttft.mean", "ttft.p50"}, Resamples: 200, Seed: uint64(trial)})
				if err != nil {
					t.Fatal(err)
				}
				m, ok := iv["ttft.mean"]
				if !ok {
					t.Fatalf("no ttft.mean interval: %v", iv)
				}
				if m.Lo > m.Value || m.Hi < m.Value || m.SE <= 0 {
					t.Fatalf("interval %v does not hold its value", m)
				}
				if m.Lo <= 100 && 100 <= m.Hi {
					covered++
				}
				seSum += m.SE
			}
			naive := 10 / math.Sqrt(n)
			t.Logf("covered %d/%d, mean SE %.3f ms (independent σ/√n %.3f ms)", covered, trials, seSum/trials, naive)
			if covered < tc.min || covered > tc.max {
				t.Errorf("covered the true mean in %d/%d trials, want %d–%d", covered, trials, tc.min, tc.max)
			}
			if se := seSum / trials; se < tc.widen*naive {
				t.Errorf("mean SE %.3f ms, want at least %.1f × the independent %.3f ms", se, tc.widen, naive)
			}
		})
	}
}

func TestRunIntervalsLeaveOutWhatHasNoWithinRunInterval(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	iv, err := RunIntervals([]Source{ttftRun(r, 400, 0)}, RunIntervalOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := iv["throughput.output_tokens_per_s"]; ok {
		t.Error("a per-run throughput got a within-run interval")
	}
	if _, ok := iv["tpot.p99"]; !ok {
		t.Error("tpot.p99 has no interval")
	}
	small, err := RunIntervals([]Source{ttftRun(r, 10, 0)}, RunIntervalOptions{})
	if err != nil || len(small) != 0 {
		t.Errorf("10 requests: %v, %v; want no intervals", small, err)
	}
}
