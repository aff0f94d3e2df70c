package metrics

import (
	"math"
	"sort"
)

// scalarAcc holds the weighted sums behind every scalar metric.
type scalarAcc struct {
	all, ok, met, failed float64
	okIn, okOut          float64
	stallReqs, stalls    float64
	stalledNs, decNs     float64
	fluN, fluGE          float64
	qGraded, qPassed     float64 // quality (issue 17)
	cached, cachePrompt  float64 // prefix cache (issue 34): token sums of reporting records
}

// scalars sums every record of d, each weighing 1.
func (d *sideData) scalars() *scalarAcc {
	a := &scalarAcc{}
	for i := range d.recs {
		a.add(&d.recs[i], 1)
	}
	return a
}

// add counts record r with weight x.
func (a *scalarAcc) add(r *reqVals, x float64) {
	if r.cancelled {
		return // neither success nor failure, outside goodput's denominator (record.go)
	}
	a.all += x
	if r.graded {
		a.qGraded += x
		if r.passed {
			a.qPassed += x
		}
	}
	if !r.ok {
		a.failed += x
		return
	}
	a.ok += x
	a.cached += x * float64(r.cachedTok)
	a.cachePrompt += x * float64(r.cachePrompt)
	a.okIn += x * float64(r.inTok)
	a.okOut += x * float64(r.outTok)
	if r.met {
		a.met += x
	}
	if r.stalls > 0 {
		a.stallReqs += x
	}
	a.stalls += x * float64(r.stalls)
	a.stalledNs += x * float64(r.stalledNs)
	a.decNs += x * float64(r.decNs)
	if r.hasFlu {
		a.fluN += x
		if r.fluidGE90 {
			a.fluGE += x
		}
	}
}

// addScaled adds x times b's sums (TestScalarAccAddScaledCoversEveryField checks that it
// names every field).
func (a *scalarAcc) addScaled(b *scalarAcc, x float64) {
	a.all += x * b.all
	a.ok += x * b.ok
	a.met += x * b.met
	a.failed += x * b.failed
	a.okIn += x * b.okIn
	a.okOut += x * b.okOut
	a.stallReqs += x * b.stallReqs
	a.stalls += x * b.stalls
	a.stalledNs += x * b.stalledNs
	a.decNs += x * b.decNs
	a.fluN += x * b.fluN
	a.fluGE += x * b.fluGE
	a.qGraded += x * b.qGraded
	a.qPassed += x * b.qPassed
	a.cached += x * b.cached
	a.cachePrompt += x * b.cachePrompt
}

// metric evaluates a scalar metric of the registry (NaN when its denominator is 0).
func (a *scalarAcc) metric(s *Scalar, window float64) float64 {
	num, den := s.ratio(a, window)
	return ratioOrNaN(num, den)
}

// famStat holds the statistics of one family under one weighting.
type famStat struct {
	mean, p50, p90, p95, p99, p999, max float64
	empty                               bool
}

func (f *famStat) get(stat string) float64 {
	if f.empty {
		return math.NaN()
	}
	return distStat(Dist{Mean: f.mean, P50: f.p50, P90: f.p90, P95: f.p95, P99: f.p99, P999: f.p999, Max: f.max}, stat)
}

var statQuantiles = [...]float64{0.5, 0.9, 0.95, 0.99, 0.999}

// ranksFor are the ranks of statQuantiles by the package's quantile rule (quantileRank).
func ranksFor(total float64) (r [len(statQuantiles)]float64) {
	for i, q := range statQuantiles {
		r[i] = quantileRank(q, total)
	}
	return r
}

// maxBin is the largest bin index binOf returns for values up to one hour in µs.
var maxBin = int(binOf(histHighest))

// spread computes metric sp per run of the side.
func (g *sideCells) spread(sp metricSpec, runs int, runWin []float64) *Spread {
	w := make([]int32, g.cells)
	s := &Spread{Runs: runs}
	one := []metricSpec{sp}
	for run := 0; run < runs; run++ {
		for c := range w {
			w[c] = 0
			if c/g.blocks == run {
				w[c] = 1
			}
		}
		v := g.eval(one, w, runWin[run])[0]
		s.Values = append(s.Values, zeroNaN(v))
	}
	s.Min, s.Max = s.Values[0], s.Values[0]
	var sum float64
	for _, v := range s.Values {
		s.Min, s.Max = min(s.Min, v), max(s.Max, v)
		sum += v
	}
	s.Mean = sum / float64(len(s.Values))
	if len(s.Values) > 1 {
		var ss float64
		for _, v := range s.Values {
			ss += (v - s.Mean) * (v - s.Mean)
		}
		s.StdDev = math.Sqrt(ss / float64(len(s.Values)-1))
	}
	if s.Mean != 0 {
		s.CVPct = s.StdDev / math.Abs(s.Mean) * 100
	}
	return s
}

// equivalence compares output hashes per id across both sides.
func equivalence(b, c *sideData) *Equivalence {
	eq := &Equivalence{}
	for id := range b.unitIdx {
		if _, ok := c.unitIdx[id]; !ok {
			continue
		}
		hb, hc := b.hashes[id], c.hashes[id]
		if hb == nil || hc == nil {
			eq.Unchecked++
			continue
		}
		eq.Compared++
		if hb.mismatch || hc.mismatch || hb.first != hc.first {
			eq.Mismatched++
			eq.MismatchIDs = append(eq.MismatchIDs, id)
		}
	}
	sort.Strings(eq.MismatchIDs)
	if len(eq.MismatchIDs) > maxMismatchIDs {
		eq.MismatchIDs = eq.MismatchIDs[:maxMismatchIDs]
	}
	if eq.Compared == 0 {
		return nil
	}
	return eq
}
