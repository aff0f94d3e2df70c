package history

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmbench/llmbench/internal/racebuild"
)

// noise draws one noise value with standard deviation 1.
type noise func(*rand.Rand) float64

func gaussian(r *rand.Rand) float64 { return r.NormFloat64() }

// studentT3 is Student's t with 3 degrees of freedom scaled to unit variance (variance of t3
// is 3): heavy tails, a few points per hundred beyond 3σ.
func studentT3(r *rand.Rand) float64 {
	z := r.NormFloat64()
	chi := 0.0
	for i := 0; i < 3; i++ {
		g := r.NormFloat64()
		chi += g * g
	}
	return z / math.Sqrt(chi/3) / math.Sqrt(3)
}

func series(r *rand.Rand, n, at int, shift float64, nz noise) []float64 {
	x := make([]float64, n)
	for i := range x {
		x[i] = 100 + nz(r)
		if at >= 0 && i >= at {
			x[i] += shift
		}
	}
	return x
}

// TestDetectFindsShifts: shifts of 3σ and more in 100-point series (Gaussian and heavy-tailed
// noise, the shift anywhere between runs 10 and 90, up or down) are found at the right run in at
// least 90% of seeded trials.
//
// "The right run" is the exact run from 4σ on. At exactly 3σ no method can name the exact run
// 90% of the time under Gaussian noise: the run on either side of the change lies nearer the
// other level with probability Φ(−1.5) ≈ 6.7% each, and least squares, the best split for a
// Gaussian mean shift, names it in about 86% (measured here as the oracle). There the test asks
// for the run within one of the change in 90%, and for the exact run as often as the oracle
// less 5 points.
func TestDetectFindsShifts(t *testing.T) {
	racebuild.Heavy(t)
	for _, tc := range []struct {
		name string
		nz   noise
	}{{"gaussian", gaussian}, {"student-t3", studentT3}} {
		for _, shift := range []float64{3, 4} {
			t.Run(fmt.Sprintf("%s/%gsigma", tc.name, shift), func(t *testing.T) {
				const trials = 100
				exact, within1, oracle := 0, 0, 0
				for trial := 0; trial < trials; trial++ {
					r := rand.New(rand.NewPCG(uint64(trial), 11))
					at := 10 + r.IntN(81)
					sh := shift
					if trial%2 == 1 {
						sh = -shift
					}
					x := series(r, 100, at, sh, tc.nz)
					if leastSquaresSplit(x) == at {
						oracle++
					}
					cps := Detect(x, DetectOptions{Seed: uint64(trial)})
					e, w := false, false
					for _, c := range cps {
						if c.Weak {
							continue
						}
						e = e || c.Index == at
						w = w || abs(c.Index-at) <= 1
					}
					if e {
						exact++
					}
					if w {
						within1++
					}
				}
				t.Logf("%s %gσ: exact run %d/%d, within one run %d/%d; least-squares oracle exact %d/%d",
					tc.name, shift, exact, trials, within1, trials, oracle, trials)
				if shift >= 4 && exact < trials*90/100 {
					t.Errorf("found at the exact run in %d/%d trials, want >= 90%%", exact, trials)
				}
				if within1 < trials*90/100 {
					t.Errorf("found within one run in %d/%d trials, want >= 90%%", within1, trials)
				}
				if exact < oracle-5 {
					t.Errorf("exact run in %d/%d trials, the least-squares oracle %d: more than 5 points worse", exact, trials, oracle)
				}
			})
		}
	}
}

// leastSquaresSplit is the single split that best separates two means (the maximum-likelihood
// change point of a Gaussian mean shift): the oracle the detector is held to.
func leastSquaresSplit(x []float64) int {
	n := len(x)
	tot := 0.0
	for _, v := range x {
		tot += v
	}
	best, at, sum := -1.0, -1, 0.0
	for t := 1; t < n; t++ {
		sum += x[t-1]
		a, b := float64(t), float64(n-t)
		d := sum/a - (tot-sum)/b
		if v := a * b / (a + b) * d * d; v > best {
			best, at = v, t
		}
	}
	return at
}

// TestDetectPureNoise: series without a change give at most 1 false change per 100 points
// (over all trials together), for Gaussian and heavy-tailed noise; weak changes are counted
// separately and must stay near the weak level.
func TestDetectPureNoise(t *testing.T) {
	racebuild.Heavy(t)
	for _, tc := range []struct {
		name string
		nz   noise
	}{{"gaussian", gaussian}, {"student-t3", studentT3}} {
		t.Run(tc.name, func(t *testing.T) {
			const trials, n = 200, 100
			strong, weak, seriesWithFalse := 0, 0, 0
			for trial := 0; trial < trials; trial++ {
				r := rand.New(rand.NewPCG(uint64(trial), 29))
				cps := Detect(series(r, n, -1, 0, tc.nz), DetectOptions{Seed: uint64(trial)})
				any := false
				for _, c := range cps {
					if c.Weak {
						weak++
					} else {
						strong++
						any = true
					}
				}
				if any {
					seriesWithFalse++
				}
			}
			perHundred := float64(strong) / float64(trials*n) * 100
			t.Logf("%s: %d false changes (%.3f per 100 points) in %d series, %d series with one or more; %d weak",
				tc.name, strong, perHundred, trials, seriesWithFalse, weak)
			if perHundred > 1 {
				t.Errorf("%s: %.3f false changes per 100 points, want <= 1", tc.name, perHundred)
			}
			// The strict level is 1%: more than 5% of noise series with a change would mean the
			// test does not hold its level.
			if seriesWithFalse > trials*5/100 {
				t.Errorf("%s: %d/%d noise series with a change, want <= 5%%", tc.name, seriesWithFalse, trials)
			}
		})
	}
}

func abs(v int) int {
	if v < 0 {
		return -v
	}
	return v
}

// BenchmarkDetect is one 100-point series with a 3σ step (the detection tests run 400 such).
func BenchmarkDetect(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	x := series(r, 100, 60, 3, gaussian)
	for b.Loop() {
		Detect(x, DetectOptions{Seed: 1})
	}
}
