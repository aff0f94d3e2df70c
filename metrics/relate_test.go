package metrics

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// checkRelated fails when md's percent fields disagree with its absolute interval or leave the
// bounds a non-negative metric allows.
func checkRelated(t *testing.T, what string, md MetricDelta) {
	t.Helper()
	if md.Verdict == VerdictNA {
		return
	}
	if !(md.CILow <= md.Delta+1e-12 && md.Delta <= md.CIHigh+1e-12) {
		t.Errorf("%s: delta %v outside [%v, %v]", what, md.Delta, md.CILow, md.CIHigh)
	}
	if md.Unit == "fraction" && (md.CILow < -1 || md.CIHigh > 1) {
		t.Errorf("%s: a difference of proportions [%v, %v] outside ±1", what, md.CILow, md.CIHigh)
	}
	if md.Base <= 0 {
		return
	}
	if md.CILowPct < -100 || md.CIHighPct < -100 || md.DeltaPct < -100 {
		t.Errorf("%s: percent change %v [%v, %v] below -100%% of a positive base", what, md.DeltaPct, md.CILowPct, md.CIHighPct)
	}
	// The percent interval excludes 0 exactly when the absolute one does.
	if (md.CILow > 0) != (md.CILowPct > 0) || (md.CIHigh < 0) != (md.CIHighPct < 0) {
		t.Errorf("%s: [%v, %v] but [%v%%, %v%%]", what, md.CILow, md.CIHigh, md.CILowPct, md.CIHighPct)
	}
	if md.CILowPct > -100 && math.Abs(md.CILowPct-md.CILow/md.Base*100) > 1e-9*math.Max(1, math.Abs(md.CILowPct)) {
		t.Errorf("%s: CILowPct %v is not CILow/Base %v", what, md.CILowPct, md.CILow/md.Base*100)
	}
}

// TestProportionIntervalsInBounds: over many seeded draws of counts and design effects, a
// proportion's change stays a difference of proportions — its Newcombe interval holds the
// observed change and lies within ±100 pp — and its percent form never falls below -100% nor
// disagrees with it about 0.
func TestProportionIntervalsInBounds(t *testing.T) {
	rng := rand.New(rand.NewPCG(32, 8))
	for i := 0; i < 20000; i++ {
		side := func() propSide {
			n := float64(1 + rng.IntN(400))
			x := float64(rng.IntN(int(n) + 1))
			if rng.IntN(4) == 0 { // the edges, where intervals misbehave
				x = float64(rng.IntN(2)) * n
			}
			return propSide{x: x, n: n, nEff: n, deff: 1 + 4*rng.Float64()}
		}
		b, c := side(), side()
		md := MetricDelta{Name: "stalls.requests_fraction", Unit: "fraction", Better: BetterLower, Base: b.p(), Cand: c.p()}
		conf := []float64{0.8, 0.95, 0.99}[rng.IntN(3)]
		finishProportion(&md, b, c, conf)
		relate(&md)
		checkRelated(t, fmt.Sprintf("draw %d (%v/%v vs %v/%v)", i, b.x, b.n, c.x, c.n), md)
		if t.Failed() {
			return
		}
	}
}

// TestRelativeIntervalsFromTheAbsolute: whatever the standard error and the metric, relate
// derives the percent interval from the absolute one (issue 31: a ms interval across 0 with a
// percent interval that excludes it, and TTFT at [-516%, +610%], are both impossible).
func TestRelativeIntervalsFromTheAbsolute(t *testing.T) {
	rng := rand.New(rand.NewPCG(31, 8))
	for i := 0; i < 20000; i++ {
		base := math.Exp(rng.NormFloat64() * 2)
		cand := base * math.Exp(rng.NormFloat64())
		md := MetricDelta{Name: "ttft.p99", Unit: "ms", Better: BetterLower, Base: base, Cand: cand, Delta: cand - base}
		se := base * math.Exp(rng.NormFloat64()*2)
		setInterval(&md, se, float64(1+rng.IntN(30)), 0.95)
		relate(&md)
		checkRelated(t, fmt.Sprintf("draw %d (base %v cand %v se %v)", i, base, cand, se), md)
		if t.Failed() {
			return
		}
	}
}

// TestCompareIntervalsInBounds: every row of seeded comparisons of noisy runs, with stalls on
// some requests, keeps its percent interval consistent with the absolute one and in bounds.
func TestCompareIntervalsInBounds(t *testing.T) {
	for seed := uint64(0); seed < 12; seed++ {
		rng := rand.New(rand.NewPCG(seed, 31))
		run := func(level float64) SliceSource {
			stall := rng.Float64() * 0.3
			return mkSide(40+rng.IntN(40), func(int) float64 { return level * math.Exp(rng.NormFloat64()) },
				func(int) float64 {
					if rng.Float64() < stall {
						return 400
					}
					return 20 * math.Exp(rng.NormFloat64()*0.3)
				})
		}
		runs := 1 + rng.IntN(3)
		var base, cand []Source
		for r := 0; r < runs; r++ {
			base, cand = append(base, run(100)), append(cand, run(100*math.Exp(rng.NormFloat64()*0.5)))
		}
		c, err := Compare(base, cand, CompareOptions{Resamples: 200, Seed: seed})
		if err != nil {
			t.Fatal(err)
		}
		for _, md := range c.Metrics {
			checkRelated(t, fmt.Sprintf("seed %d %s", seed, md.Name), md)
		}
	}
}
