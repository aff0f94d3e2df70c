package metrics

import (
	"encoding/json"
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func approx(a, b, rel float64) bool { return math.Abs(a-b) <= rel*math.Max(1, math.Abs(b)) }

// TestEnergyFromCounter: a counter growing at 300 W (mJ) read every 2 s, the window inside the
// readings: its joules are 300 × the window, interpolated at both ends.
func TestEnergyFromCounter(t *testing.T) {
	var pts []PowerPoint
	for i := 0; i <= 10; i++ {
		ts := float64(2 * i)
		pts = append(pts, PowerPoint{T: ts - 1, PowerW: -1, EnergyMJ: 5e6 + 300e3*ts})
	}
	e := EnergyOver([]PowerSeries{{Key: "g0", Points: pts}}, EnergyOptions{StartS: 1.5, EndS: 16.5, RequestsPerS: 3, OutputTokensPerS: 600, PricePerKWh: 0.2, Currency: "USD"})
	if !e.Available || e.Method != EnergyByCounter || e.GPUs != 1 {
		t.Fatalf("%+v", e)
	}
	if !approx(*e.Joules, 300*15, 1e-12) || !approx(*e.AvgPowerW, 300, 1e-12) {
		t.Errorf("joules %v, power %v; want 4500, 300", *e.Joules, *e.AvgPowerW)
	}
	if !approx(*e.JoulesPerRequest, 100, 1e-12) || !approx(*e.OutputTokensPerJoule, 2, 1e-12) {
		t.Errorf("J/request %v, tokens/J %v; want 100, 2", *e.JoulesPerRequest, *e.OutputTokensPerJoule)
	}
	if !approx(*e.Cost, 4500/3.6e6*0.2, 1e-12) || !approx(*e.CostPerRequest, 100/3.6e6*0.2, 1e-12) {
		t.Errorf("cost %v, per request %v", *e.Cost, *e.CostPerRequest)
	}
}

// TestEnergyFromPowerTrapezoid: power rising linearly from 100 W to 300 W over [0, 10] s, read
// at uneven times: the trapezoid rule is exact for it (2000 J), the window clipped inside.
func TestEnergyFromPowerTrapezoid(t *testing.T) {
	var pts []PowerPoint
	for _, ts := range []float64{-1, 0.5, 3, 3.1, 7, 11} {
		pts = append(pts, PowerPoint{T: ts, PowerW: 100 + 20*ts, EnergyMJ: -1})
	}
	e := EnergyOver([]PowerSeries{{Key: "g", Points: pts}}, EnergyOptions{StartS: 0, EndS: 10, RequestsPerS: 1})
	if !e.Available || e.Method != EnergyByPower || !approx(*e.Joules, 2000, 1e-12) {
		t.Fatalf("%+v joules %v; want power samples, 2000 J", e, deref(e.Joules))
	}
}

// TestEnergyCounterReset: a counter that goes back (the exporter or the GPU restarted) counts
// from zero after it, never as a negative delta.
func TestEnergyCounterReset(t *testing.T) {
	pts := []PowerPoint{{T: 0, EnergyMJ: 9e6, PowerW: -1}, {T: 5, EnergyMJ: 10e6, PowerW: -1}, {T: 6, EnergyMJ: 0.2e6, PowerW: -1}, {T: 10, EnergyMJ: 1.2e6, PowerW: -1}}
	e := EnergyOver([]PowerSeries{{Key: "g", Points: pts}}, EnergyOptions{StartS: 0, EndS: 10})
	if !e.Available || !approx(*e.Joules, 1000+200+1000, 1e-12) {
		t.Fatalf("joules %v, want 2200", deref(e.Joules))
	}
}

// TestEnergySeveralGPUsMixed: one GPU with a counter, one with only power: both summed, the
// method says so.
func TestEnergySeveralGPUsMixed(t *testing.T) {
	a := []PowerPoint{{T: 0, EnergyMJ: 0, PowerW: 1}, {T: 10, EnergyMJ: 1e6, PowerW: 1}}
	b := []PowerPoint{{T: 0, EnergyMJ: -1, PowerW: 50}, {T: 10, EnergyMJ: -1, PowerW: 50}}
	e := EnergyOver([]PowerSeries{{Key: "a", Points: a}, {Key: "b", Points: b}}, EnergyOptions{StartS: 0, EndS: 10})
	if !e.Available || e.Method != EnergyMixed || e.GPUs != 2 || !approx(*e.AvgPowerW, 150, 1e-12) {
		t.Fatalf("%+v power %v; want mixed, 2 GPUs, 150 W", e, deref(e.AvgPowerW))
	}
}

// TestEnergyUnknownIsNull: without two readings, or with a GPU that has none in the window,
// the power is unknown: every figure is null in JSON, never 0, and the note says why.
func TestEnergyUnknownIsNull(t *testing.T) {
	good := []PowerPoint{{T: 0, PowerW: 100, EnergyMJ: -1}, {T: 10, PowerW: 100, EnergyMJ: -1}}
	cases := map[string][]PowerSeries{
		"none":        nil,
		"one reading": {{Key: "g", Points: good[:1]}},
		"a GPU lacks": {{Key: "g", Points: good}, {Key: "h", Points: []PowerPoint{{T: 3, PowerW: -1, EnergyMJ: -1}}}},
		"NaN times":   {{Key: "g", Points: []PowerPoint{{T: math.NaN(), PowerW: 1}, {T: math.Inf(1), PowerW: 1}}}},
	}
	for name, series := range cases {
		e := EnergyOver(series, EnergyOptions{StartS: 0, EndS: 10, RequestsPerS: 1, PricePerKWh: 1})
		if e.Available || e.Joules != nil || e.Note == "" {
			t.Errorf("%s: %+v", name, e)
		}
		b, _ := json.Marshal(e)
		if !strings.Contains(string(b), `"joules":null`) || !strings.Contains(string(b), `"joules_per_request":null`) {
			t.Errorf("%s: JSON %s", name, b)
		}
	}
}

// TestEnergyPartialCoverage: readings that span half the window stand for the whole, and say so.
func TestEnergyPartialCoverage(t *testing.T) {
	pts := []PowerPoint{{T: 5, PowerW: 200, EnergyMJ: -1}, {T: 10, PowerW: 200, EnergyMJ: -1}}
	e := EnergyOver([]PowerSeries{{Key: "g", Points: pts}}, EnergyOptions{StartS: 0, EndS: 10})
	if !e.Available || !approx(*e.Joules, 2000, 1e-12) || !approx(e.CoveredFraction, 0.5, 1e-12) || !strings.Contains(e.Note, "50%") {
		t.Fatalf("%+v", e)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

// TestCompareEnergy: each side's figures are the mean over its runs with known power, the
// change is cand / base − 1, a side with unknown power has null figures and the note counts
// its runs; no run with an energy block gives no comparison.
func TestCompareEnergy(t *testing.T) {
	known := func(jpr, tpj float64) *Energy {
		w := 300.0
		return &Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj, AvgPowerW: &w}
	}
	c := CompareEnergy([]*Energy{known(10, 2), known(20, 4)}, []*Energy{known(12, 2.4), UnknownEnergy(nil, "x"), nil})
	if *c.Base.JoulesPerRequest != 15 || *c.Base.OutputTokensPerJoule != 3 || *c.Cand.JoulesPerRequest != 12 {
		t.Fatalf("sides %+v %+v", c.Base, c.Cand)
	}
	if !approx(*c.JoulesPerRequestChange, -0.2, 1e-12) || !approx(*c.TokensPerJouleChange, -0.2, 1e-12) {
		t.Errorf("changes %v %v", *c.JoulesPerRequestChange, *c.TokensPerJouleChange)
	}
	if c.Cand.Known != 1 || c.Cand.Runs != 3 || !strings.Contains(c.Note, "cand: power known in 1 of 3 runs") {
		t.Errorf("cand %+v note %q", c.Cand, c.Note)
	}
	u := CompareEnergy([]*Energy{known(10, 2)}, []*Energy{UnknownEnergy(nil, "x")})
	if u.Cand.JoulesPerRequest != nil || u.JoulesPerRequestChange != nil {
		t.Errorf("unknown side: %+v", u)
	}
	if CompareEnergy([]*Energy{nil}, nil) != nil {
		t.Error("a comparison without energy")
	}
}

// TestCompareEnergyInterval: with two or more runs with known power a side's J/request and
// tokens per joule carry mean ± t(0.975, n−1)·s/√n across its runs (10 and 20: s = √50,
// t(0.975, 1) = 12.7062); one run gives none, and the note says which it is.
func TestCompareEnergyInterval(t *testing.T) {
	known := func(jpr, tpj float64) *Energy {
		return &Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj}
	}
	c := CompareEnergy([]*Energy{known(10, 2), known(20, 4), UnknownEnergy(nil, "x")}, []*Energy{known(12, 2.4)})
	ci := c.Base.JoulesPerRequestCI
	half := 12.706204736174707 * 5 // t · √50 / √2
	if ci == nil || ci.Runs != 2 || !approx(ci.Lo, 15-half, 1e-9) || !approx(ci.Hi, 15+half, 1e-9) {
		t.Fatalf("base J/request interval %+v, want 15 ± %g over 2 runs", ci, half)
	}
	if tp := c.Base.OutputTokensPerJouleCI; tp == nil || !approx(tp.Hi-3, 12.706204736174707*1, 1e-9) {
		t.Errorf("base tok/J interval %+v", tp)
	}
	if c.Cand.JoulesPerRequestCI != nil || c.Cand.OutputTokensPerJouleCI != nil {
		t.Errorf("one run, yet an interval: %+v", c.Cand)
	}
	if !strings.Contains(c.Note, "95% Student-t interval across its runs") {
		t.Errorf("note %q", c.Note)
	}
	if one := CompareEnergy([]*Energy{known(10, 2)}, []*Energy{known(12, 2)}); !strings.Contains(one.Note, "no interval") {
		t.Errorf("one run a side: note %q", one.Note)
	}
}

// TestEnergyIntervalCoverage: over 4000 seeded trials of 3 runs drawn from a normal
// distribution, the interval holds the true mean in 95% ± 1.5 pp of them (the binomial
// standard error is 0.34 pp).
func TestEnergyIntervalCoverage(t *testing.T) {
	rng := rand.New(rand.NewPCG(39, 2))
	const trials, mu = 4000, 60.0
	hit := 0
	for range trials {
		v := []float64{mu + 5*rng.NormFloat64(), mu + 5*rng.NormFloat64(), mu + 5*rng.NormFloat64()}
		if ci := runsInterval(v); ci.Lo <= mu && mu <= ci.Hi {
			hit++
		}
	}
	if got := float64(hit) / trials; got < 0.935 || got > 0.965 {
		t.Errorf("coverage %.4f of %d trials, want 0.95 ± 0.015", got, trials)
	}
}

// TestSweepPointEnergy: a sweep point takes its summary's J/request and tokens per joule when
// the power was known, and has none when it was unknown (never 0).
func TestSweepPointEnergy(t *testing.T) {
	jpr, tpj := 45.0, 3.1
	s := &Summary{Energy: &Energy{Available: true, JoulesPerRequest: &jpr, OutputTokensPerJoule: &tpj}}
	if p := PointFrom(8, true, s); p.JoulesPerRequest == nil || *p.JoulesPerRequest != 45 || *p.OutputTokensPerJoule != 3.1 {
		t.Errorf("known power: point %+v", p)
	}
	s.Energy = UnknownEnergy([]string{"http://x/metrics"}, "no scrape succeeded")
	if p := PointFrom(8, true, s); p.JoulesPerRequest != nil || p.OutputTokensPerJoule != nil {
		t.Errorf("unknown power gave figures: %+v", p)
	}
	b, _ := json.Marshal(PointFrom(8, true, &Summary{}))
	if strings.Contains(string(b), "joule") {
		t.Errorf("a point without energy carries energy fields: %s", b)
	}
}

// TestEnergyVerdictOverSeededTrials: the Welch verdict on J per request between two sides of 3
// independent runs each. A/A (both sides from one distribution): a change is called in at
// most 5% (+1.5 pp) of 4,000 seeded trials; Welch's interval at 2–4 degrees of freedom is
// conservative (3.6% here), so at least 2%. A/B with the candidate 3 run-to-run standard
// deviations lower: called better in most trials (the t interval at 2–4 degrees of freedom is
// wide), and never worse.
func TestEnergyVerdictOverSeededTrials(t *testing.T) {
	const trials = 4000
	draw := func(rng *rand.Rand, mean, sd float64) []*Energy {
		runs := make([]*Energy, 3)
		for i := range runs {
			j, tpj := mean+sd*rng.NormFloat64(), 1/(mean+sd*rng.NormFloat64())
			runs[i] = &Energy{Available: true, JoulesPerRequest: &j, OutputTokensPerJoule: &tpj}
		}
		return runs
	}
	aaCalls, better, worse := 0, 0, 0
	for seed := range uint64(trials) {
		rng := rand.New(rand.NewPCG(seed, 39))
		if v := CompareEnergy(draw(rng, 60, 1), draw(rng, 60, 1)).JoulesPerRequestVerdict; v.Verdict != "no change detected" {
			aaCalls++
		}
		switch CompareEnergy(draw(rng, 60, 1), draw(rng, 57, 1)).JoulesPerRequestVerdict.Verdict {
		case "better":
			better++
		case "worse":
			worse++
		}
	}
	t.Logf("A/A: a change called in %d of %d trials; A/B 3 SD lower: better in %d, worse in %d", aaCalls, trials, better, worse)
	if rate := float64(aaCalls) / trials; rate > 0.065 || rate < 0.02 {
		t.Errorf("A/A: a change called in %.1f%% of trials, want at most 5%% + 1.5 pp (and at least 2%%)", 100*rate)
	}
	if worse > 0 || float64(better)/trials < 0.6 {
		t.Errorf("A/B 3 SD lower: better in %d, worse in %d of %d trials", better, worse, trials)
	}
	one := CompareEnergy(draw(rand.New(rand.NewPCG(1, 1)), 60, 1)[:1], draw(rand.New(rand.NewPCG(2, 2)), 60, 1))
	if one.JoulesPerRequestVerdict != nil {
		t.Error("a verdict from one run on a side")
	}
}
