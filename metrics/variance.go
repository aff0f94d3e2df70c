package metrics

import (
	"fmt"
	"math"
	"sort"
	"strings"

	"gonum.org/v1/gonum/stat/distuv"
)

// The two-level variance model (docs/comparing.md, "Decisions under noise").
//
// A run is one draw from a noisy process: neighbouring requests share queues and batches, so
// their latencies are correlated, and whole runs differ. Compare's bootstrap therefore
// resamples at two levels: first the runs of each side (with replacement, when a side has two
// or more), then, inside the drawn runs, contiguous blocks of requests in arrival order (a
// block bootstrap). When the sides replayed the same trace the blocks are made of request ids
// and the same blocks are drawn on both sides, so each request is still compared with itself.
// A record's weight in a resample is (times its run was drawn) × (times its block was drawn).
//
// The interval of a change is delta ± t(df) · SE, with SE the standard deviation of the
// resampled changes, widened by √(R/(R−1)) when a side has R ≥ 2 runs (the bootstrap of R
// runs underestimates their variance by that factor), and df = runs on both sides − 2 (the
// number of blocks − 1 with one run per side). Resampling both levels counts the within-run
// noise twice, so the interval errs on the wide side.

// blockPlan assigns every unit (request id) of a side to a time block.
type blockPlan struct {
	length int     // units per block
	blocks int     // number of blocks
	of     []int32 // block of each unit
}

// Block length bounds: at least 10 blocks whenever there are 20 units or more.
const minBlocks = 10

// planBlocks orders d's units by their earliest intended send time and cuts them into blocks
// of chooseBlockLength units.
func planBlocks(d *sideData) blockPlan {
	n := len(d.units)
	first := make([]int64, n)
	for u, recs := range d.unitRecs {
		first[u] = math.MaxInt64
		for _, ri := range recs {
			first[u] = min(first[u], d.recs[ri].at)
		}
	}
	order := make([]int32, n)
	for i := range order {
		order[i] = int32(i)
	}
	sort.SliceStable(order, func(a, b int) bool { return first[order[a]] < first[order[b]] })
	l := chooseBlockLength(d, order)
	p := blockPlan{length: l, of: make([]int32, n)}
	for pos, u := range order {
		p.of[u] = int32(pos / l)
	}
	p.blocks = (n + l - 1) / l
	return p
}

// chooseBlockLength picks the block length from the data: the autocorrelation of the
// per-request latency (E2E, else TTFT, of each unit's first record) in arrival order is
// followed to the first lag inside the white-noise band ±2/√n. Without correlation at lag 1
// requests are resampled one by one; otherwise the block is twice the correlated lags, but
// at least ∛n units, and short enough for minBlocks blocks. With one run per side the blocks
// must stand in for the variation between runs, so they are as long as minBlocks allows:
// slow changes within the run (load on the machine, drift) then show in the interval.
func chooseBlockLength(d *sideData, order []int32) int {
	n := len(order)
	if n < 2*minBlocks {
		return 1
	}
	if d.runs == 1 {
		return n / minBlocks
	}
	xs := make([]float64, 0, n)
	for _, u := range order {
		v := math.NaN()
		if recs := d.unitRecs[u]; len(recs) > 0 {
			r := &d.recs[recs[0]]
			v = r.sc[sfE2E]
			if math.IsNaN(v) {
				v = r.sc[sfTTFT]
			}
		}
		xs = append(xs, v)
	}
	lag := decorrelationLag(xs, n/minBlocks)
	if lag == 0 {
		return 1
	}
	l := max(int(math.Ceil(math.Cbrt(float64(n)))), 2*lag)
	return max(1, min(l, n/minBlocks))
}

// decorrelationLag is the first lag k ≤ maxLag at which the sample autocorrelation of xs
// (NaN values replaced by the mean) falls inside ±2/√n; maxLag when it never does.
func decorrelationLag(xs []float64, maxLag int) int {
	var sum float64
	var cnt int
	for _, x := range xs {
		if !math.IsNaN(x) {
			sum += x
			cnt++
		}
	}
	if cnt < 2 {
		return 0
	}
	mean := sum / float64(cnt)
	c := make([]float64, len(xs))
	var c0 float64
	for i, x := range xs {
		if !math.IsNaN(x) {
			c[i] = x - mean
		}
		c0 += c[i] * c[i]
	}
	if c0 == 0 {
		return 0
	}
	band := 2 / math.Sqrt(float64(len(xs)))
	for k := 1; k <= maxLag; k++ {
		var ck float64
		for i := k; i < len(c); i++ {
			ck += c[i] * c[i-k]
		}
		if math.Abs(ck/c0) < band {
			return k - 1
		}
	}
	return maxLag
}

// drawCounts fills counts with how often each of len(counts) items is drawn in len(counts)
// draws with replacement; a single item is always drawn once.
func drawCounts(counts []int32, intN func(int) int) {
	if len(counts) == 1 {
		counts[0] = 1
		return
	}
	clear(counts)
	for range counts {
		counts[intN(len(counts))]++
	}
}

// resampledWindow is the steady window of a resample that drew run r runs[r] times.
func resampledWindow(d *sideData, runs []int32) float64 {
	var win float64
	for r, n := range runs {
		win += float64(n) * d.runWin[r]
	}
	return win
}

// runFactor is √(R/(R−1)) for the side with the fewest runs among those with two or more
// (1 when neither has): the bootstrap of R runs underestimates their variance by (R−1)/R.
func runFactor(rb, rc int) float64 {
	r := 0
	for _, n := range []int{rb, rc} {
		if n >= 2 && (r == 0 || n < r) {
			r = n
		}
	}
	if r == 0 {
		return 1
	}
	return math.Sqrt(float64(r) / float64(r-1))
}

// bootDF is the degrees of freedom of the t quantile for a bootstrap interval: the runs on
// both sides less two when any side has two or more runs, else the blocks less one.
func bootDF(rb, rc, blocks int) float64 {
	if rb >= 2 || rc >= 2 {
		return float64(max(1, rb+rc-2))
	}
	return float64(max(1, blocks-1))
}

// tQuantile is the q quantile of Student's t with df degrees of freedom.
func tQuantile(q, df float64) float64 {
	return distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Quantile(q)
}

// tTwoSidedP is the two-sided p-value of statistic t under Student's t with df degrees.
func tTwoSidedP(t, df float64) float64 {
	return 2 * distuv.StudentsT{Mu: 0, Sigma: 1, Nu: df}.Survival(math.Abs(t))
}

// stdDev is the sample standard deviation of xs (0 for fewer than two values).
func stdDev(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	var m float64
	for _, x := range xs {
		m += x
	}
	m /= float64(len(xs))
	var ss float64
	for _, x := range xs {
		ss += (x - m) * (x - m)
	}
	return math.Sqrt(ss / float64(len(xs)-1))
}

// welch is the Welch (or, with one run on a side, pooled) t statistic setup for the change in
// a per-run scalar: it returns the standard error and degrees of freedom, ok false when the
// run-to-run variation cannot be estimated (one run on each side).
func welch(base, cand []float64) (se, df float64, ok bool) {
	nb, nc := float64(len(base)), float64(len(cand))
	sb, sc := stdDev(base), stdDev(cand)
	switch {
	case len(base) >= 2 && len(cand) >= 2:
		vb, vc := sb*sb/nb, sc*sc/nc
		se = math.Sqrt(vb + vc)
		if vb+vc == 0 {
			return 0, nb + nc - 2, true
		}
		df = (vb + vc) * (vb + vc) / (vb*vb/(nb-1) + vc*vc/(nc-1))
		return se, df, true
	case len(base) >= 2:
		return sb * math.Sqrt(1/nb+1/nc), nb - 1, true
	case len(cand) >= 2:
		return sc * math.Sqrt(1/nb+1/nc), nc - 1, true
	}
	return 0, 0, false
}

// perRunScalar reports whether a metric is a per-run scalar: a count divided by the run's
// window, which has no meaningful within-run resampling (open-loop throughput is set by the
// trace); its interval comes from the spread between runs only.
func perRunScalar(name string) bool {
	switch name {
	case "throughput.requests_per_s", "throughput.input_tokens_per_s", "throughput.output_tokens_per_s",
		"goodput.requests_per_s":
		return true
	}
	return false
}

// varianceMethod describes the variance model of a comparison in words (Comparison.Method).
func varianceMethod(rb, rc int, bp, cp *blockPlan, paired bool, matched int, opts CompareOptions) string {
	conf := fmt.Sprintf("%g%%", opts.Confidence*100)
	var b strings.Builder
	fmt.Fprintf(&b, "two-level bootstrap: %d and %d runs per side", rb, rc)
	if rb >= 2 || rc >= 2 {
		b.WriteString(" resampled, then")
	} else {
		b.WriteString(" (one run per side: within-run variation only), then")
	}
	if paired {
		fmt.Fprintf(&b, " blocks of %d consecutive request ids (%d blocks; %d ids matched, the same blocks drawn on both sides)", bp.length, bp.blocks, matched)
	} else {
		fmt.Fprintf(&b, " blocks of %d and %d consecutive requests (unpaired: each side resampled on its own)", bp.length, cp.length)
	}
	fmt.Fprintf(&b, ", %d resamples, seed %d; %s intervals delta ± t·SE; per-run throughput and goodput/s by Welch t over runs; proportions by Newcombe score intervals on effective sample sizes; labels outside --fail-on Holm-adjusted", opts.Resamples, opts.Seed, conf)
	return b.String()
}
