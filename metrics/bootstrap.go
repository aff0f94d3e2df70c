package metrics

import (
	"math"
	"math/rand/v2"
	"slices"
)

// bootResult holds the bootstrap deltas per metric (absolute and percent of base).
type bootResult struct {
	abs, rel [][]float64
}

func bootstrap(bd, cd *sideData, specs []metricSpec, paired bool, opts CompareOptions) bootResult {
	rng := rand.New(rand.NewPCG(opts.Seed, opts.Seed^0x9e3779b97f4a7c15))
	res := bootResult{abs: make([][]float64, len(specs)), rel: make([][]float64, len(specs))}
	bw := make([]int32, len(bd.recs))
	cw := make([]int32, len(cd.recs))
	bu := make([]int32, len(bd.units))
	cu := make([]int32, len(cd.units))
	draw := func(units []int32) {
		clear(units)
		n := len(units)
		for k := 0; k < n; k++ {
			units[rng.IntN(n)]++
		}
	}
	spread := func(d *sideData, units, w []int32) {
		for u, recs := range d.unitRecs {
			for _, ri := range recs {
				w[ri] = units[u]
			}
		}
	}
	for b := 0; b < opts.Resamples; b++ {
		draw(bu)
		if paired {
			copy(cu, bu)
		} else {
			draw(cu)
		}
		spread(bd, bu, bw)
		spread(cd, cu, cw)
		bv := bd.eval(specs, bw, bd.window)
		cv := cd.eval(specs, cw, cd.window)
		for i := range specs {
			if math.IsNaN(bv[i]) || math.IsNaN(cv[i]) {
				continue
			}
			res.abs[i] = append(res.abs[i], cv[i]-bv[i])
			if bv[i] != 0 {
				res.rel[i] = append(res.rel[i], (cv[i]-bv[i])/math.Abs(bv[i])*100)
			}
		}
	}
	return res
}

// percentileInterval is the (1-conf)/2 and 1-(1-conf)/2 order statistics of xs (sorted here).
func percentileInterval(xs []float64, conf float64) (float64, float64) {
	slices.Sort(xs)
	n := len(xs)
	a := (1 - conf) / 2
	lo := int(a * float64(n))
	hi := int((1 - a) * float64(n))
	if hi >= n {
		hi = n - 1
	}
	return xs[lo], xs[hi]
}

func finishDelta(md *MetricDelta, abs, rel []float64, conf float64, resamples int) {
	if math.IsNaN(md.Base) || math.IsNaN(md.Cand) {
		md.Base, md.Cand = zeroNaN(md.Base), zeroNaN(md.Cand)
		md.Verdict = VerdictNA
		return
	}
	md.Delta = md.Cand - md.Base
	if md.Base != 0 {
		md.DeltaPct = md.Delta / math.Abs(md.Base) * 100
	}
	// Fewer than half the resamples defined (e.g. a metric that exists in few requests).
	if len(abs) == 0 || len(abs) < resamples/2 {
		md.Verdict = VerdictNA
		return
	}
	md.CILow, md.CIHigh = percentileInterval(abs, conf)
	if len(rel) > 0 {
		md.CILowPct, md.CIHighPct = percentileInterval(rel, conf)
	}
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
		if md.Verdict == VerdictNA {
			continue
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
