package metrics

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
)

func TestWilsonAndNewcombe(t *testing.T) {
	// Wilson at 0 of 100 is not degenerate: [0, z²/(n+z²)].
	lo, hi := wilson(0, 100, 1.959964)
	if lo != 0 || !near(hi, 3.8415/103.8415, 1e-4) {
		t.Errorf("wilson(0/100) = [%v, %v]", lo, hi)
	}
	// Newcombe (1998), Statistics in Medicine 17:873, table II, method 10: 56/70 − 48/80 =
	// 0.2000, 95% CI 0.0524 to 0.3339.
	b := propSide{x: 48, n: 80, nEff: 80, deff: 1}
	c := propSide{x: 56, n: 70, nEff: 70, deff: 1}
	lo, hi = newcombe(b, c, 0.95)
	if !near(lo, 0.0524, 5e-4) || !near(hi, 0.3339, 5e-4) {
		t.Errorf("newcombe = [%.4f, %.4f], want [0.0524, 0.3339]", lo, hi)
	}
	// The p-value sits where the interval touches 0.
	p := newcombeP(b, c)
	if l, _ := newcombe(b, c, 1-p*1.01); l <= 0 {
		t.Errorf("p %g: the interval at 1-p still contains 0 (lo %g)", p, l)
	}
	if l, _ := newcombe(b, c, 1-p*0.99); l > 0 {
		t.Errorf("p %g: the interval just above 1-p excludes 0 (lo %g)", p, l)
	}
	if p := newcombeP(b, b); p != 1 {
		t.Errorf("equal proportions: p %g", p)
	}
}

func TestHolm(t *testing.T) {
	ms := []MetricDelta{{PValue: 0.01}, {PValue: 0.04}, {PValue: 0.03}, {PValue: 0.005}}
	got := holm(ms, []int{0, 1, 2, 3})
	want := []float64{0.03, 0.06, 0.06, 0.02}
	for i := range want {
		if !near(got[i], want[i], 1e-12) {
			t.Errorf("holm = %v, want %v", got, want)
			break
		}
	}
}

func TestWelch(t *testing.T) {
	se, df, ok := welch([]float64{1, 2, 3}, []float64{2, 4, 6})
	if !ok || !near(se, math.Sqrt(5.0/3), 1e-12) || !near(df, (25.0/9)/(1.0/18+16.0/18), 1e-9) {
		t.Errorf("welch: se %v df %v ok %v", se, df, ok)
	}
	if _, _, ok := welch([]float64{1}, []float64{2}); ok {
		t.Error("one run per side must not be assessable")
	}
	if se, df, ok := welch([]float64{1}, []float64{2, 4}); !ok || df != 1 || !near(se, math.Sqrt(2)*math.Sqrt(1.5), 1e-12) {
		t.Errorf("pooled: se %v df %v", se, df)
	}
}

func TestDecorrelationLag(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	iid := make([]float64, 2000)
	ar := make([]float64, 2000)
	for i := range iid {
		iid[i] = rng.NormFloat64()
		ar[i] = rng.NormFloat64()
		if i > 0 {
			ar[i] += 0.9 * ar[i-1]
		}
	}
	if k := decorrelationLag(iid, 100); k > 1 {
		t.Errorf("independent series: lag %d", k)
	}
	// AR(1) with φ = 0.9: ρ(k) = 0.9^k falls below 2/√2000 ≈ 0.045 near k = 30.
	if k := decorrelationLag(ar, 100); k < 15 || k > 60 {
		t.Errorf("AR(1) 0.9: lag %d", k)
	}
}

// mkRun is mkSide with TTFT shifted by level and per-request noise, as one run of a side.
func mkRun(n int, level float64, rng *rand.Rand) SliceSource {
	return mkSide(n, func(i int) float64 { return level + 100 + float64(i%13) + rng.NormFloat64()*3 }, func(int) float64 { return 20 })
}

func TestPerRunScalarsNeedRuns(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	one, err := Compare([]Source{mkRun(100, 0, rng)}, []Source{mkRun(100, 0, rng)}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	m := metricByName(t, one, "throughput.requests_per_s")
	if m.Verdict != VerdictNotAssessable || m.Method != MethodRuns {
		t.Errorf("one run per side: throughput %s by %s", m.Verdict, m.Method)
	}
	// Fractions at 0% on both sides still have an interval of non-zero width.
	f := metricByName(t, one, "failures.fraction")
	if f.Method != MethodNewcombe || f.CIHigh <= 0 || f.CILow >= 0 || f.Verdict != VerdictUnchanged {
		t.Errorf("failures 0%% vs 0%%: %+v", f)
	}
	two, err := Compare([]Source{mkRun(100, 0, rng), mkRun(100, 0, rng)}, []Source{mkRun(100, 0, rng), mkRun(100, 0, rng)}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	if m := metricByName(t, two, "throughput.requests_per_s"); m.Method != MethodRuns || m.Verdict == VerdictNotAssessable {
		t.Errorf("two runs per side: throughput %s by %s (%s)", m.Verdict, m.Method, m.Note)
	}
	if two.Multiplicity != MultiplicityHolm {
		t.Errorf("multiplicity %q", two.Multiplicity)
	}
}

// TestRunLevelNoiseWidensIntervals: runs whose TTFT level differs by run (a run effect the
// requests of one run cannot show) must give intervals that cover it: over many A/A
// comparisons of 3 runs per side, the gate on ttft.p50 fails in few.
func TestRunLevelNoiseWidensIntervals(t *testing.T) {
	racebuild.Heavy(t)
	rng := rand.New(rand.NewPCG(8, 9))
	th, err := ParseFailOn("ttft.p50>+0%")
	if err != nil {
		t.Fatal(err)
	}
	trials, fails := 40, 0
	if testing.Short() {
		trials = 10
	}
	for k := 0; k < trials; k++ {
		side := func() []Source {
			var s []Source
			for r := 0; r < 3; r++ {
				s = append(s, mkRun(60, rng.NormFloat64()*8, rng))
			}
			return s
		}
		c, err := Compare(side(), side(), CompareOptions{Thresholds: th, Metrics: []string{"ttft.p50"}, Resamples: 200, Seed: uint64(k)})
		if err != nil {
			t.Fatal(err)
		}
		if c.Regressed {
			fails++
		}
	}
	// One-sided at 2.5% nominal: allow 3 of 40 (7.5%).
	if fails > max(1, trials*3/40) {
		t.Errorf("A/A with a run effect: the gate failed %d of %d times", fails, trials)
	}
}
