package metrics

import (
	"fmt"
	"math"
)

// PairedRatio is the change of one figure between two builds of a program measured in
// rounds on one machine (llmbench's performance gate, internal/perfgate): each round measures
// both builds back to back, the order alternating (A B, B A, …), so that whatever the machine
// was doing during a round weighs on both of its measurements. The change is the geometric
// mean of the rounds' ratios cand / base, and its interval is Student's t over the rounds'
// log-ratios: rounds that disagree (a busy machine) widen the interval instead of deciding.
// A figure is judged only against itself, by ratios, never against an absolute threshold.
type PairedRatio struct {
	// Rounds is the number of rounds with a figure on both sides.
	Rounds int `json:"rounds"`
	// Ratio is exp(mean of log(cand/base)) over the rounds; Lo and Hi its interval at
	// Confidence: exp(mean ± t(1−(1−Confidence)/2, Rounds−1) · sd / √Rounds).
	Ratio      float64 `json:"ratio"`
	Lo         float64 `json:"lo"`
	Hi         float64 `json:"hi"`
	Confidence float64 `json:"confidence"`
	// MDE is the minimum detectable effect: the relative change (0.08 is 8%) that a design
	// of this many rounds with this spread finds at Confidence with power MDEPower,
	// exp((t(1−(1−Confidence)/2) + t(MDEPower)) · SE) − 1 on the log scale.
	MDE float64 `json:"mde"`
	// MinEffect is the smallest change that counts as a regression (0.05 is 5%).
	MinEffect float64 `json:"min_effect"`
	// Better is the figure's direction (BetterHigher or BetterLower).
	Better string `json:"better"`
	// Verdict is VerdictRegressed (the interval excludes no change on the worse side and the
	// ratio is worse than MinEffect), VerdictWorse (the interval excludes no change on the
	// worse side, by less than MinEffect), VerdictBetter (it excludes no change on the better
	// side), VerdictUnchanged, or VerdictNotAssessable (fewer than two rounds, or rounds
	// whose ratios never vary while the ratio is not 1).
	Verdict string `json:"verdict"`
	Note    string `json:"note,omitempty"`
}

// ComparePairedRatio judges cand against base, both one value per round in the same order
// (base[i] and cand[i] measured in round i). Every value must be positive; the caller floors
// a figure that can read 0 (a rate below the measurable range) at its resolution. better is
// BetterHigher or BetterLower; conf is the two-sided confidence of the interval (0.95);
// minEffect is the smallest relative change that counts as a regression.
func ComparePairedRatio(base, cand []float64, better string, conf, minEffect float64) (PairedRatio, error) {
	if len(base) != len(cand) {
		return PairedRatio{}, fmt.Errorf("paired ratio: %d base values and %d cand values; a round has one of each", len(base), len(cand))
	}
	if better != BetterHigher && better != BetterLower {
		return PairedRatio{}, fmt.Errorf("paired ratio: direction %q: want %q or %q", better, BetterHigher, BetterLower)
	}
	if !(conf > 0 && conf < 1) || !(minEffect >= 0 && minEffect < 1) {
		return PairedRatio{}, fmt.Errorf("paired ratio: confidence %g must be in (0, 1) and the minimum effect %g in [0, 1)", conf, minEffect)
	}
	logs := make([]float64, len(base))
	for i := range base {
		if !(base[i] > 0) || !(cand[i] > 0) || math.IsInf(base[i], 0) || math.IsInf(cand[i], 0) {
			return PairedRatio{}, fmt.Errorf("paired ratio: round %d: base %g, cand %g: every value must be positive and finite", i+1, base[i], cand[i])
		}
		logs[i] = math.Log(cand[i] / base[i])
	}
	p := PairedRatio{Rounds: len(logs), Confidence: conf, MinEffect: minEffect, Better: better, Ratio: 1, Lo: 1, Hi: 1}
	if p.Rounds < 2 {
		p.Verdict = VerdictNotAssessable
		p.Note = "fewer than two rounds: the spread between rounds, and with it the noise, is unknown"
		if p.Rounds == 1 {
			p.Ratio, p.Lo, p.Hi = math.Exp(logs[0]), math.Exp(logs[0]), math.Exp(logs[0])
		}
		return p, nil
	}
	m := *meanOf(logs)
	se := stdDev(logs) / math.Sqrt(float64(p.Rounds))
	p.Ratio, p.Lo, p.Hi = math.Exp(m), math.Exp(m), math.Exp(m)
	if se <= 1e-12 {
		if math.Abs(m) <= 1e-12 {
			p.Verdict = VerdictUnchanged
			return p, nil
		}
		p.Verdict = VerdictNotAssessable
		p.Note = "zero-width interval: the ratio never varied between rounds, so its noise is unknown"
		return p, nil
	}
	df := float64(p.Rounds - 1)
	q := tQuantile(1-(1-conf)/2, df)
	p.Lo, p.Hi = math.Exp(m-q*se), math.Exp(m+q*se)
	p.MDE = math.Exp((q+tQuantile(MDEPower, df))*se) - 1
	p.Verdict = p.verdict()
	return p, nil
}

// verdict reads the interval and the ratio (see PairedRatio.Verdict).
func (p *PairedRatio) verdict() string {
	worse, better := p.Hi < 1, p.Lo > 1
	beyond := p.Ratio < 1-p.MinEffect
	if p.Better == BetterLower {
		worse, better = better, worse
		beyond = p.Ratio > 1+p.MinEffect
	}
	switch {
	case worse && beyond:
		return VerdictRegressed
	case worse:
		return VerdictWorse
	case better:
		return VerdictBetter
	}
	return VerdictUnchanged
}
