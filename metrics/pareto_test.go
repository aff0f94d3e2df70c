package metrics

import (
	"math/rand/v2"
	"testing"
)

func TestParetoPointsKeepThoseMeetingTheSLO(t *testing.T) {
	pts := []SweepPoint{
		{Rate: 1, OutputTokensPerS: 100, GoodputFraction: 1, TPOTP50: 20},
		{Rate: 2, OutputTokensPerS: 200, GoodputFraction: 0.5, TPOTP50: 40},                  // misses the target
		{Rate: 4, OutputTokensPerS: 300, GoodputFraction: 1, TPOTP50: 30, Saturated: true},   // saturated
		{Rate: 8, OutputTokensPerS: 300, GoodputFraction: 1, TPOTP50: 30, Limited: "client"}, // the harness's limit
		{Rate: 3, OutputTokensPerS: 240, GoodputFraction: 0.95, TPOTP50: 25},
	}
	got := ParetoPoints("tp=2", 2, pts, 0.9)
	if len(got) != 2 || got[0].Load != 1 || got[0].PerGPU != 50 || got[0].PerUser != 50 || got[1].Load != 3 || got[1].PerGPU != 120 || got[1].PerUser != 40 || got[1].Config != "tp=2" {
		t.Fatalf("%+v", got)
	}
}

// TestMarkDominatedAgainstBruteForce: over seeded random clouds (ties included), a point is
// marked dominated exactly when some other point is at least as good on both axes and better
// on one, and the unmarked points are never beaten by each other.
func TestMarkDominatedAgainstBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := 0; trial < 200; trial++ {
		n := 1 + rng.IntN(12)
		pts := make([]ParetoPoint, n)
		for i := range pts {
			pts[i] = ParetoPoint{PerGPU: float64(rng.IntN(5)), PerUser: float64(rng.IntN(5))}
		}
		MarkDominated(pts)
		for i, p := range pts {
			beaten := false
			for j, q := range pts {
				if i != j && q.PerGPU >= p.PerGPU && q.PerUser >= p.PerUser && (q.PerGPU > p.PerGPU || q.PerUser > p.PerUser) {
					beaten = true
				}
			}
			if beaten != p.Dominated {
				t.Fatalf("trial %d: %+v dominated %v, want %v (%+v)", trial, p, p.Dominated, beaten, pts)
			}
			if i > 0 && pts[i-1].PerUser > p.PerUser {
				t.Fatalf("trial %d: not ordered by per-user throughput: %+v", trial, pts)
			}
		}
	}
}
