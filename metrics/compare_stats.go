package metrics

import (
	"math"
	"sort"
)

// eval computes every metric with per-record weights w (nil: all 1) over window seconds.
func (d *sideData) eval(specs []metricSpec, w []int32, window float64) []float64 {
	out := make([]float64, len(specs))
	var acc *scalarAcc
	var famStats [nScalarFam]*famStat
	var binStats [nBinFam]*famStat
	var dense []int64
	var needQ [nBinFam]bool
	for _, sp := range specs {
		if sp.info.Storage == StorageBins && sp.stat != "mean" {
			needQ[binFamIdx[sp.family]] = true
		}
	}
	for k, sp := range specs {
		if sp.family != "" {
			var st *famStat
			if sp.info.Storage == StorageHistogram {
				f := scalarFamIdx[sp.family]
				if famStats[f] == nil {
					famStats[f] = d.scalarStat(f, w)
				}
				st = famStats[f]
			} else {
				f := binFamIdx[sp.family]
				if binStats[f] == nil {
					if dense == nil {
						dense = make([]int64, maxBin+1)
					}
					binStats[f] = d.binStat(f, w, dense, sp.info.Unit == "ms", needQ[f])
				}
				st = binStats[f]
			}
			out[k] = st.get(sp.stat)
			continue
		}
		if acc == nil {
			acc = d.scalars(w)
		}
		out[k] = acc.metric(sp.scalar, window)
	}
	return out
}

// scalarAcc holds the weighted sums behind every scalar metric.
type scalarAcc struct {
	all, ok, met, failed float64
	okIn, okOut          float64
	stallReqs, stalls    float64
	stalledNs, decNs     float64
	fluN, fluGE          float64
	qGraded, qPassed     float64 // quality (issue 17)
}

func (d *sideData) scalars(w []int32) *scalarAcc {
	a := &scalarAcc{}
	for i := range d.recs {
		x := 1.0
		if w != nil {
			if w[i] == 0 {
				continue
			}
			x = float64(w[i])
		}
		r := &d.recs[i]
		a.all += x
		if r.graded {
			a.qGraded += x
			if r.passed {
				a.qPassed += x
			}
		}
		if !r.ok {
			a.failed += x
			continue
		}
		a.ok += x
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
	return a
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

func (d *sideData) scalarStat(f int, w []int32) *famStat {
	var total, sum float64
	for _, i := range d.sorted[f] {
		x := 1.0
		if w != nil {
			x = float64(w[i])
		}
		total += x
		sum += x * d.recs[i].sc[f]
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / total}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(total)
	var cum float64
	q := 0
	var last float64
	for _, i := range d.sorted[f] {
		x := 1.0
		if w != nil {
			x = float64(w[i])
		}
		if x == 0 {
			continue
		}
		cum += x
		last = d.recs[i].sc[f]
		for q < len(ranks) && cum >= ranks[q] {
			*targets[q] = last
			q++
		}
	}
	st.max = last
	return st
}

// maxBin is the largest bin index binOf returns for values up to one hour in µs.
var maxBin = int(binOf(histHighest))

func (d *sideData) binStat(f int, w []int32, dense []int64, micros, quantiles bool) *famStat {
	var total int64
	var sum float64
	lo, hi := len(dense), -1
	c := &d.csr[f]
	for i := range d.recs {
		x := int64(1)
		if w != nil {
			x = int64(w[i])
		}
		if x == 0 {
			continue
		}
		r := &d.recs[i]
		total += x * r.cnt[f]
		sum += float64(x) * r.sums[f]
		if !quantiles {
			continue
		}
		a, b := c.start[i], c.start[i+1]
		if a == b {
			continue
		}
		bins, cnts := c.bin[a:b], c.cnt[a:b]
		lo, hi = min(lo, int(bins[0])), max(hi, int(bins[len(bins)-1]))
		for k, bin := range bins {
			dense[bin] += x * int64(cnts[k])
		}
	}
	if total == 0 {
		return &famStat{empty: true}
	}
	st := &famStat{mean: sum / float64(total)}
	if !quantiles {
		return st
	}
	scale := 1.0
	if micros {
		scale = 1e-3
	}
	targets := [len(statQuantiles)]*float64{&st.p50, &st.p90, &st.p95, &st.p99, &st.p999}
	ranks := ranksFor(float64(total))
	var cum int64
	q := 0
	for b := lo; b <= hi; b++ {
		n := dense[b]
		if n == 0 {
			continue
		}
		dense[b] = 0
		cum += n
		v := binValue(uint32(b)) * scale
		for q < len(ranks) && float64(cum) >= ranks[q] {
			*targets[q] = v
			q++
		}
		st.max = v
	}
	return st
}

// spread computes metric k per run of the side.
func (d *sideData) spread(sp metricSpec) *Spread {
	w := make([]int32, len(d.recs))
	s := &Spread{Runs: d.runs}
	one := []metricSpec{sp}
	for run := 0; run < d.runs; run++ {
		for i := range d.recs {
			w[i] = 0
			if d.recs[i].run == run {
				w[i] = 1
			}
		}
		v := d.eval(one, w, d.runWin[run])[0]
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
