package metrics

import (
	"math"

	"gonum.org/v1/gonum/stat/distuv"
)

// Proportions (the stall, failure, goodput and fluidity fractions, and the prefix-cache hit
// rate, a proportion of prompt tokens) get score intervals that
// stay honest at 0% and 100%, where a bootstrap has nothing to resample: each side's Wilson
// interval on an effective sample size, combined into Newcombe's hybrid score interval for
// the difference. The effective sample size is the count of requests divided by the design
// effect, which measures how much more the fraction varies between time blocks (and between
// runs) than independent requests would let it.

// proportionOf returns the counts behind a proportion metric: x successes of n.
func proportionOf(name string, a *scalarAcc) (x, n float64, ok bool) {
	switch name {
	case "goodput.fraction":
		return a.met, a.all, true
	case "stalls.requests_fraction":
		return a.stallReqs, a.ok, true
	case "failures.fraction":
		return a.failed, a.all, true
	case "fluidity.fraction_ge_0_9":
		return a.fluGE, a.fluN, true
	case PrefixCacheMetric:
		return a.cached, a.cachePrompt, true
	}
	return 0, 0, false
}

// recordProportion is one record's share of proportionOf's counts.
func recordProportion(name string, r *reqVals) (x, n float64) {
	b := func(v bool) float64 {
		if v {
			return 1
		}
		return 0
	}
	switch name {
	case "goodput.fraction":
		return b(r.ok && r.met), 1
	case "stalls.requests_fraction":
		return b(r.ok && r.stalls > 0), b(r.ok)
	case "failures.fraction":
		return b(!r.ok), 1
	case "fluidity.fraction_ge_0_9":
		return b(r.ok && r.hasFlu && r.fluidGE90), b(r.ok && r.hasFlu)
	case PrefixCacheMetric:
		// Tokens, not requests: the design effect over time blocks (and runs) measures how
		// much a request's tokens move together, so the interval is not that of independent
		// tokens.
		return float64(r.cachedTok), float64(r.cachePrompt)
	}
	return 0, 0
}

// isProportion reports whether a metric is a proportion of requests.
func isProportion(name string) bool {
	_, _, ok := proportionOf(name, &scalarAcc{})
	return ok
}

// propSide is one side's proportion with its effective sample size.
type propSide struct {
	x, n float64 // counts over all runs
	nEff float64 // n / design effect
	deff float64
}

func (p propSide) p() float64 { return p.x / p.n }

// proportionSide counts metric name on d and estimates its design effect from the variation
// between clusters: the (run, block) cells of the block plan, and the runs when there are two
// or more. The design effect is at least 1 (never narrower than independent requests) and is
// 1 when the fraction is 0 or 1 (nothing varies to measure it).
func proportionSide(d *sideData, plan *blockPlan, name string) (propSide, bool) {
	all := d.scalars()
	x, n, ok := proportionOf(name, all)
	if !ok || n <= 0 {
		return propSide{}, false
	}
	ps := propSide{x: x, n: n, nEff: n, deff: 1}
	p := x / n
	if p <= 0 || p >= 1 {
		return ps, true
	}
	binom := p * (1 - p) / n
	cells := d.runs * plan.blocks
	cx := make([]float64, cells)
	cn := make([]float64, cells)
	rx := make([]float64, d.runs)
	rn := make([]float64, d.runs)
	for i := range d.recs {
		xi, ni := recordProportion(name, &d.recs[i])
		c := d.recs[i].run*plan.blocks + int(plan.of[d.recs[i].unit])
		cx[c] += xi
		cn[c] += ni
		rx[d.recs[i].run] += xi
		rn[d.recs[i].run] += ni
	}
	deff := max(ratioVariance(cx, cn, p, n)/binom, 1)
	if d.runs >= 2 {
		deff = max(deff, ratioVariance(rx, rn, p, n)/binom)
	}
	deff = min(deff, n)
	ps.deff, ps.nEff = deff, n/deff
	return ps, true
}

// ratioVariance is the cluster-sampling variance of the ratio Σx/Σn = p over clusters with
// counts (x_j, n_j): k/(k−1) · Σ (x_j − p·n_j)² / N² over the k clusters with n_j > 0.
func ratioVariance(x, n []float64, p, total float64) float64 {
	var ss float64
	k := 0
	for j := range x {
		if n[j] <= 0 {
			continue
		}
		k++
		r := x[j] - p*n[j]
		ss += r * r
	}
	if k < 2 {
		return 0
	}
	return float64(k) / float64(k-1) * ss / (total * total)
}

// wilson is the Wilson score interval of proportion p on n (effective) trials at normal
// quantile z.
func wilson(p, n, z float64) (lo, hi float64) {
	z2 := z * z
	den := 1 + z2/n
	centre := (p + z2/(2*n)) / den
	half := z / den * math.Sqrt(p*(1-p)/n+z2/(4*n*n))
	return max(0, centre-half), min(1, centre+half)
}

// newcombe is Newcombe's hybrid score interval (method 10) for cand − base at two-sided level
// conf, from Wilson intervals on the effective sample sizes.
func newcombe(b, c propSide, conf float64) (lo, hi float64) {
	z := distuv.UnitNormal.Quantile(1 - (1-conf)/2)
	p1, p2 := b.p(), c.p()
	l1, u1 := wilson(p1, b.nEff, z)
	l2, u2 := wilson(p2, c.nEff, z)
	d := p2 - p1
	lo = d - math.Sqrt((p2-l2)*(p2-l2)+(u1-p1)*(u1-p1))
	hi = d + math.Sqrt((u2-p2)*(u2-p2)+(p1-l1)*(p1-l1))
	return lo, hi
}

// newcombeP is the two-sided p-value that matches newcombe: the largest 1 − conf at which the
// interval still contains 0 (found by bisection; the interval narrows as conf falls).
func newcombeP(b, c propSide) float64 {
	excludes := func(alpha float64) bool {
		lo, hi := newcombe(b, c, 1-alpha)
		return lo > 0 || hi < 0
	}
	if !excludes(1 - 1e-9) {
		return 1
	}
	if excludes(1e-12) {
		return 1e-12
	}
	lo, hi := 1e-12, 1-1e-9 // excludes(hi), !excludes(lo)
	for i := 0; i < 60; i++ {
		mid := math.Sqrt(lo * hi)
		if excludes(mid) {
			hi = mid
		} else {
			lo = mid
		}
	}
	return hi
}
