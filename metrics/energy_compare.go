package metrics

import (
	"fmt"
	"math"
)

// EnergyComparison puts two sides' energy figures side by side (issue 39; energy.go). The
// energy is one figure per run, not per request. With several runs a side, each figure is the
// mean over the runs whose power was known; with two or more such runs, J per request and
// output tokens per joule carry a 95% Student-t interval of that mean across the runs (they
// are independent repeats, as ab makes them: runner/abrepeats.go). With two or more such runs
// on both sides, the change of each figure gets a Welch interval and a verdict (EnergyVerdict);
// no --fail-on rule takes energy.
type EnergyComparison struct {
	Base EnergySide `json:"base"`
	Cand EnergySide `json:"cand"`
	// JoulesPerRequestChange and TokensPerJouleChange are cand / base − 1 (null when a side
	// has no figure).
	JoulesPerRequestChange *float64 `json:"joules_per_request_change"`
	TokensPerJouleChange   *float64 `json:"output_tokens_per_joule_change"`
	// JoulesPerRequestVerdict and TokensPerJouleVerdict judge the change across the sides'
	// runs (EnergyVerdict); nil with fewer than two runs of known power on either side.
	JoulesPerRequestVerdict *EnergyVerdict `json:"joules_per_request_verdict,omitempty"`
	TokensPerJouleVerdict   *EnergyVerdict `json:"output_tokens_per_joule_verdict,omitempty"`
	Note                    string         `json:"note"`
}

// EnergyVerdict is the change of one energy figure, cand's mean over its runs minus base's,
// with a 95% Welch interval (unequal variances, Welch–Satterthwaite degrees of freedom), and
// what it says: "better" or "worse" when the interval excludes 0 (lower J per request, or more
// tokens per joule, is better), else "no change detected".
type EnergyVerdict struct {
	Diff    float64 `json:"diff"`
	Lo      float64 `json:"lo"`
	Hi      float64 `json:"hi"`
	Verdict string  `json:"verdict"`
}

// welchVerdict judges cand − base of independent runs; higherBetter says which way is better.
// nil with fewer than two values on either side.
func welchVerdict(base, cand []float64, higherBetter bool) *EnergyVerdict {
	nb, nc := float64(len(base)), float64(len(cand))
	if nb < 2 || nc < 2 {
		return nil
	}
	vb, vc := stdDev(base)*stdDev(base)/nb, stdDev(cand)*stdDev(cand)/nc
	d := *meanOf(cand) - *meanOf(base)
	v := &EnergyVerdict{Diff: d, Lo: d, Hi: d, Verdict: "no change detected"}
	if se := math.Sqrt(vb + vc); se > 0 {
		df := (vb + vc) * (vb + vc) / (vb*vb/(nb-1) + vc*vc/(nc-1))
		half := tQuantile(1-(1-EnergyConfidence)/2, df) * se
		v.Lo, v.Hi = d-half, d+half
	}
	switch {
	case v.Lo > 0 || v.Hi < 0:
		if (d > 0) == higherBetter {
			v.Verdict = "better"
		} else {
			v.Verdict = "worse"
		}
	}
	return v
}

// EnergySide is one side's energy: the mean of its runs with known power (Known of Runs).
type EnergySide struct {
	Runs                 int      `json:"runs"`
	Known                int      `json:"known"`
	JoulesPerRequest     *float64 `json:"joules_per_request"`
	OutputTokensPerJoule *float64 `json:"output_tokens_per_joule"`
	AvgPowerW            *float64 `json:"avg_power_w"`
	// JoulesPerRequestCI and OutputTokensPerJouleCI are the 95% intervals of the means across
	// the side's runs (EnergyInterval); nil with fewer than two runs with the figure.
	JoulesPerRequestCI     *EnergyInterval `json:"joules_per_request_ci,omitempty"`
	OutputTokensPerJouleCI *EnergyInterval `json:"output_tokens_per_joule_ci,omitempty"`
}

// EnergyConfidence is the confidence level of EnergyInterval.
const EnergyConfidence = 0.95

// EnergyInterval is a Student-t interval of the mean of one figure across independent runs:
// mean ± t(0.975, n−1) · s / √n, s the runs' sample standard deviation.
type EnergyInterval struct {
	Lo   float64 `json:"lo"`
	Hi   float64 `json:"hi"`
	Runs int     `json:"runs"`
}

// runsInterval is the EnergyInterval of the mean of v (nil for fewer than two values).
func runsInterval(v []float64) *EnergyInterval {
	n := len(v)
	if n < 2 {
		return nil
	}
	m := *meanOf(v)
	half := tQuantile(1-(1-EnergyConfidence)/2, float64(n-1)) * stdDev(v) / math.Sqrt(float64(n))
	return &EnergyInterval{Lo: m - half, Hi: m + half, Runs: n}
}

// CompareEnergy compares the runs' energy blocks (nil: a run without one); nil when no run of
// either side has one.
func CompareEnergy(base, cand []*Energy) *EnergyComparison {
	if !anyEnergy(base) && !anyEnergy(cand) {
		return nil
	}
	bs, bj, bt := energySideOf(base)
	cs, cj, ct := energySideOf(cand)
	c := &EnergyComparison{Base: bs, Cand: cs}
	c.Note = "one figure per run (the GPUs' energy over its window): no interval, no verdict"
	if c.Base.JoulesPerRequestCI != nil || c.Cand.JoulesPerRequestCI != nil {
		c.Note = "each side the mean of its runs (the GPUs' energy over each run's window) with a 95% Student-t interval across its runs (which takes them as independent repeats, as ab's are); no verdict without two runs on both sides"
	}
	c.JoulesPerRequestVerdict = welchVerdict(bj, cj, false)
	c.TokensPerJouleVerdict = welchVerdict(bt, ct, true)
	if c.JoulesPerRequestVerdict != nil {
		c.Note = "each side the mean of its runs (the GPUs' energy over each run's window) with a 95% Student-t interval across its runs, and the change judged by a 95% Welch interval of the difference of the means (the runs taken as independent repeats, as ab's are)"
	}
	c.JoulesPerRequestChange = relChange(c.Base.JoulesPerRequest, c.Cand.JoulesPerRequest)
	c.TokensPerJouleChange = relChange(c.Base.OutputTokensPerJoule, c.Cand.OutputTokensPerJoule)
	for _, s := range []struct {
		name string
		side EnergySide
	}{{"base", c.Base}, {"cand", c.Cand}} {
		if s.side.Known < s.side.Runs {
			c.Note += fmt.Sprintf("; %s: power known in %d of %d runs", s.name, s.side.Known, s.side.Runs)
		}
	}
	return c
}

func anyEnergy(es []*Energy) bool {
	for _, e := range es {
		if e != nil {
			return true
		}
	}
	return false
}

// energySideOf is the mean of each figure over the runs that have it, and the runs' J per
// request and tokens per joule.
func energySideOf(es []*Energy) (EnergySide, []float64, []float64) {
	s := EnergySide{Runs: len(es)}
	var jpr, tpj, w []float64
	for _, e := range es {
		if e == nil || !e.Available {
			continue
		}
		s.Known++
		for _, p := range []struct {
			v   *float64
			dst *[]float64
		}{{e.JoulesPerRequest, &jpr}, {e.OutputTokensPerJoule, &tpj}, {e.AvgPowerW, &w}} {
			if p.v != nil {
				*p.dst = append(*p.dst, *p.v)
			}
		}
	}
	s.JoulesPerRequest, s.OutputTokensPerJoule, s.AvgPowerW = meanOf(jpr), meanOf(tpj), meanOf(w)
	s.JoulesPerRequestCI, s.OutputTokensPerJouleCI = runsInterval(jpr), runsInterval(tpj)
	return s, jpr, tpj
}

func meanOf(v []float64) *float64 {
	if len(v) == 0 {
		return nil
	}
	m := 0.0
	for _, x := range v {
		m += x
	}
	m /= float64(len(v))
	return &m
}

func relChange(base, cand *float64) *float64 {
	if base == nil || cand == nil || *base == 0 {
		return nil
	}
	r := *cand / *base - 1
	return &r
}
