package metrics

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestComparePairedRatioByHand checks the interval against a hand computation: log-ratios
// ln(0.90), ln(0.95), ln(0.85), ln(0.90), mean −0.106133, sd 0.045417, SE 0.022709;
// t(0.975, 3) = 3.182446 and t(0.8, 3) = 0.978472 (tables).
func TestComparePairedRatioByHand(t *testing.T) {
	base := []float64{100, 100, 100, 100}
	cand := []float64{90, 95, 85, 90}
	p, err := ComparePairedRatio(base, cand, BetterHigher, 0.95, 0.05)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name      string
		got, want float64
	}{
		{"ratio", p.Ratio, 0.8993047503502437},
		{"lo", p.Lo, 0.8366068692947114},
		{"hi", p.Hi, 0.966701402636483},
		{"mde", p.MDE, 0.09909494199156765},
	} {
		if math.Abs(c.got-c.want) > 1e-6 {
			t.Errorf("%s = %.9f, want %.9f", c.name, c.got, c.want)
		}
	}
	if p.Rounds != 4 || p.Verdict != VerdictRegressed {
		t.Errorf("rounds %d verdict %q, want 4 and %q (the interval is below 1, the ratio 10%% below, beyond 5%%)", p.Rounds, p.Verdict, VerdictRegressed)
	}
	// The same change is "worse" but not a regression when it is within the minimum effect.
	if p, _ := ComparePairedRatio(base, cand, BetterHigher, 0.95, 0.15); p.Verdict != VerdictWorse {
		t.Errorf("min effect 15%%: verdict %q, want %q", p.Verdict, VerdictWorse)
	}
	// For a lower-is-better figure the same ratios are an improvement.
	if p, _ := ComparePairedRatio(base, cand, BetterLower, 0.95, 0.05); p.Verdict != VerdictBetter {
		t.Errorf("lower is better: verdict %q, want %q", p.Verdict, VerdictBetter)
	}
	// And a lower-is-better figure that grew regresses (the ratios inverted).
	if p, _ := ComparePairedRatio(cand, base, BetterLower, 0.95, 0.05); p.Verdict != VerdictRegressed {
		t.Errorf("lower is better, grew 11%%: verdict %q, want %q", p.Verdict, VerdictRegressed)
	}
	// A higher confidence widens the interval until it holds 1.
	if p, _ := ComparePairedRatio(base, cand, BetterHigher, 0.999, 0.05); p.Verdict != VerdictUnchanged || p.Hi <= 1 {
		t.Errorf("99.9%%: verdict %q, interval [%g, %g], want %q with 1 inside", p.Verdict, p.Lo, p.Hi, VerdictUnchanged)
	}
}

func TestComparePairedRatioEdges(t *testing.T) {
	// Identical sides: unchanged with a zero-width interval at 1.
	p, err := ComparePairedRatio([]float64{5, 7, 9}, []float64{5, 7, 9}, BetterLower, 0.95, 0.05)
	if err != nil || p.Verdict != VerdictUnchanged || p.Ratio != 1 || p.Lo != 1 || p.Hi != 1 {
		t.Errorf("identical: %+v, %v", p, err)
	}
	// A constant ratio other than 1: its noise is unknown, no verdict.
	p, _ = ComparePairedRatio([]float64{10, 20}, []float64{20, 40}, BetterLower, 0.95, 0.05)
	if p.Verdict != VerdictNotAssessable || math.Abs(p.Ratio-2) > 1e-12 {
		t.Errorf("constant ratio 2: %+v", p)
	}
	// One round: no spread, no verdict, the ratio still shown.
	p, _ = ComparePairedRatio([]float64{10}, []float64{12}, BetterLower, 0.95, 0.05)
	if p.Verdict != VerdictNotAssessable || math.Abs(p.Ratio-1.2) > 1e-12 || p.Rounds != 1 {
		t.Errorf("one round: %+v", p)
	}
	for _, c := range []struct {
		base, cand []float64
		better     string
		conf, min  float64
		want       string
	}{
		{[]float64{1, 2}, []float64{1}, BetterLower, 0.95, 0, "round has one of each"},
		{[]float64{1, 0}, []float64{1, 1}, BetterLower, 0.95, 0, "round 2: base 0"},
		{[]float64{1, 1}, []float64{1, math.NaN()}, BetterLower, 0.95, 0, "round 2"},
		{[]float64{1, 1}, []float64{1, math.Inf(1)}, BetterLower, 0.95, 0, "positive and finite"},
		{[]float64{1, 1}, []float64{1, 1}, BetterNone, 0.95, 0, "direction"},
		{[]float64{1, 1}, []float64{1, 1}, BetterLower, 1, 0, "confidence"},
		{[]float64{1, 1}, []float64{1, 1}, BetterLower, 0.95, 1, "minimum effect"},
	} {
		if _, err := ComparePairedRatio(c.base, c.cand, c.better, c.conf, c.min); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%v vs %v (%s, %g, %g): error %v, want one saying %q", c.base, c.cand, c.better, c.conf, c.min, err, c.want)
		}
	}
}

// TestPairedRatioCoverage: over 4,000 seeded trials of 6 rounds whose log-ratios are normal
// around ln 0.9 (a shared round factor that cancels, plus each side's own noise), the 95%
// interval holds the true ratio 0.9 in 95% ± 1.5 pp of them (the binomial standard error is
// 0.34 pp), and the one-sided miss on the low side, the gate's false alarm for a figure
// whose true ratio is its limit, is about 2.5%.
func TestPairedRatioCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(44, 1))
	const trials, rounds, truth = 4000, 6, 0.9
	hit, below := 0, 0
	for range trials {
		base, cand := make([]float64, rounds), make([]float64, rounds)
		for r := range rounds {
			machine := 0.3 * rng.NormFloat64()
			base[r] = 1000 * math.Exp(machine+0.05*rng.NormFloat64())
			cand[r] = 1000 * truth * math.Exp(machine+0.05*rng.NormFloat64())
		}
		p, err := ComparePairedRatio(base, cand, BetterHigher, 0.95, 0)
		if err != nil {
			t.Fatal(err)
		}
		if p.Lo <= truth && truth <= p.Hi {
			hit++
		}
		if p.Hi < truth {
			below++
		}
	}
	if got := float64(hit) / trials; got < 0.935 || got > 0.965 {
		t.Errorf("coverage %.4f of %d trials, want 0.95 ± 0.015", got, trials)
	}
	if got := float64(below) / trials; got > 0.035 {
		t.Errorf("the interval lay below the true ratio in %.4f of %d trials, want about 0.025", got, trials)
	}
}
