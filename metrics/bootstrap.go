package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
)

// bootResult holds the bootstrap deltas per metric. Percent changes are derived from the
// absolute interval afterwards (relate), never resampled on their own.
type bootResult struct {
	abs [][]float64
}

// bootstrap resamples both sides at two levels (see variance.go): runs, then time blocks of
// request ids (the same blocks on both sides when paired), and returns the changes per
// metric. Per-run scalars are resampled too, but their intervals come from the runs' spread.
func bootstrap(bd, cd *sideData, bg, cg *sideCells, specs []metricSpec, paired bool, opts CompareOptions) bootResult {
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	res := bootResult{abs: make([][]float64, len(specs))}
	bw := make([]int32, bg.cells)
	cw := make([]int32, cg.cells)
	brun := make([]int32, max(1, bd.runs))
	crun := make([]int32, max(1, cd.runs))
	bblk := make([]int32, bg.blocks)
	cblk := make([]int32, cg.blocks)
	for b := 0; b < opts.Resamples; b++ {
		drawCounts(brun, rng.IntN)
		drawCounts(crun, rng.IntN)
		drawCounts(bblk, rng.IntN)
		if paired {
			copy(cblk, bblk)
		} else {
			drawCounts(cblk, rng.IntN)
		}
		bg.weigh(brun, bblk, bw)
		cg.weigh(crun, cblk, cw)
		bv := bg.eval(specs, bw, resampledWindow(bd, brun))
		cv := cg.eval(specs, cw, resampledWindow(cd, crun))
		for i := range specs {
			if math.IsNaN(bv[i]) || math.IsNaN(cv[i]) {
				continue
			}
			res.abs[i] = append(res.abs[i], cv[i]-bv[i])
		}
	}
	return res
}

// finishDelta sets md's change and its interval from the two-level bootstrap: delta ±
// t(df) · SE, where SE is the standard deviation of the resampled changes times factor (see
// variance.go). A change whose resamples never vary has a zero-width interval, which is no
// evidence: its verdict is "not assessable" (or "unchanged" when the change is exactly 0).
func finishDelta(md *MetricDelta, abs []float64, conf float64, resamples int, factor, df float64) {
	if math.IsNaN(md.Base) || math.IsNaN(md.Cand) {
		md.Base, md.Cand = zeroNaN(md.Base), zeroNaN(md.Cand)
		md.Verdict = VerdictNA
		return
	}
	md.Delta = md.Cand - md.Base
	// Fewer than half the resamples defined (e.g. a metric that exists in few requests).
	if len(abs) == 0 || len(abs) < resamples/2 {
		md.Verdict = VerdictNA
		return
	}
	se := stdDev(abs) * factor
	md.Method = MethodBootstrap
	setInterval(md, se, df, conf)
	if md.Verdict == VerdictNotAssessable || md.SE == 0 {
		return
	}
	// The t interval assumes the resampled changes are roughly normal; a tail percentile of a
	// small sample is not (whether one slow request is drawn decides it). The interval is
	// therefore the hull of the t interval and the bootstrap's own percentile interval, and
	// the p-value the larger of the two.
	lo, hi := quantiles(abs, conf)
	md.CILow, md.CIHigh = min(md.CILow, lo), max(md.CIHigh, hi)
	md.PValue = max(md.PValue, bootP(abs))
	verdictByInterval(md)
}

// quantiles is the (1−conf)/2 and 1−(1−conf)/2 order statistics of xs (sorted here).
func quantiles(xs []float64, conf float64) (float64, float64) {
	slices.Sort(xs)
	n := len(xs)
	a := (1 - conf) / 2
	lo := int(a * float64(n))
	hi := min(int((1-a)*float64(n)), n-1)
	return xs[lo], xs[hi]
}

// bootP is the two-sided bootstrap p-value of "no change": twice the smaller share of
// resampled changes on either side of 0 (at most 1).
func bootP(xs []float64) float64 {
	var le, ge int
	for _, x := range xs {
		if x <= 0 {
			le++
		}
		if x >= 0 {
			ge++
		}
	}
	return min(1, 2*float64(min(le, ge))/float64(len(xs)))
}

// setInterval sets the t interval, p-value and minimum detectable effect of md from the
// standard error of its change and verdicts by the interval.
func setInterval(md *MetricDelta, se, df, conf float64) {
	md.SE, md.DF = se, df
	// Rounding leaves a constant change a standard error of ~1e-16 of the values: zero.
	if scale := max(math.Abs(md.Base), math.Abs(md.Cand)); se <= 1e-9*scale || math.IsNaN(se) {
		md.SE = 0
		md.CILow, md.CIHigh = md.Delta, md.Delta
		if md.Delta == 0 {
			md.Verdict = VerdictUnchanged
			md.PValue = 1
			return
		}
		md.Verdict = VerdictNotAssessable
		md.Note = "zero-width interval: the change never varied between resamples, so its noise is unknown"
		return
	}
	q := tQuantile(1-(1-conf)/2, df)
	md.CILow, md.CIHigh = md.Delta-q*se, md.Delta+q*se
	md.PValue = tTwoSidedP(md.Delta/se, df)
	md.MDE = (q + tQuantile(MDEPower, df)) * se
	verdictByInterval(md)
}

// relate derives the percent change, its interval and the MDE in percent from the absolute
// ones, so that both always say the same (issue 31): the percent interval is the absolute
// interval over |Base|, and it excludes 0 exactly when the absolute one does. Every metric of
// the registry is non-negative, so no change of one is below −100%: a lower end beyond it (an
// absolute interval that reaches past −Base, as the base's own uncertainty allows) reads
// −100%. A change of a fraction is a difference of two proportions, within [−1, +1] (±100
// percentage points). With Base 0 the percent fields are 0 (undefined; the reports say n/a).
func relate(md *MetricDelta) {
	md.DeltaPct, md.CILowPct, md.CIHighPct, md.MDEPct = 0, 0, 0, 0
	if md.Verdict == VerdictNA {
		return
	}
	if md.Unit == "fraction" {
		md.CILow, md.CIHigh = max(md.CILow, -1), min(md.CIHigh, 1)
	}
	if md.Base == 0 {
		return
	}
	pct := func(v float64) float64 { return v / math.Abs(md.Base) * 100 }
	md.DeltaPct, md.CILowPct, md.CIHighPct, md.MDEPct = pct(md.Delta), pct(md.CILow), pct(md.CIHigh), pct(md.MDE)
	if md.Base > 0 && md.Cand >= 0 {
		md.DeltaPct = max(md.DeltaPct, -100)
		md.CILowPct, md.CIHighPct = max(md.CILowPct, -100), max(md.CIHighPct, -100)
	}
}

func verdictByInterval(md *MetricDelta) {
	switch {
	case md.CILow > 0:
		md.Verdict = worseOrBetter(md.Better, true)
	case md.CIHigh < 0:
		md.Verdict = worseOrBetter(md.Better, false)
	default:
		md.Verdict = VerdictUnchanged
	}
}

func worseOrBetter(better string, increased bool) string {
	if better == BetterNone {
		return VerdictChanged
	}
	if (better == BetterLower) == increased {
		return VerdictWorse
	}
	return VerdictBetter
}

func zeroNaN(f float64) float64 {
	if math.IsNaN(f) {
		return 0
	}
	return f
}

// applyThresholds marks md regressed when a rule on its metric is broken with confidence.
func applyThresholds(md *MetricDelta, info MetricInfo, th []Threshold) {
	for _, t := range th {
		if t.Metric != info.Name {
			continue
		}
		if md.Threshold == "" {
			md.Threshold = t.Text
		} else {
			md.Threshold += "," + t.Text
		}
		if md.Verdict == VerdictNA || md.Verdict == VerdictNotAssessable || md.Verdict == VerdictWithheld || md.CILow == md.CIHigh {
			continue // no interval, no evidence of a regression
		}
		lo, hi := md.CILow, md.CIHigh
		if t.Relative {
			if md.Base == 0 {
				continue
			}
			lo, hi = md.CILowPct, md.CIHighPct
		}
		if (t.Op == ">" && lo > t.Value) || (t.Op == "<" && hi < t.Value) {
			md.Verdict = VerdictRegressed
		}
	}
}
