package calibrate

import (
	"math"
	"sort"
)

// Where a learned cap on running sequences came from (Result.CapSource).
const (
	CapFromScrape = "scraped running/waiting gauges"
	CapFromQueue  = "TTFT queueing shape"
	CapFromReplay = "replay loss"
)

// capSpan is how far above the lower bound of the cap (the most requests seen streaming or
// running at once) the queueing shape looks.
const capSpan = 8

// learnedCap is the cap on running sequences the fitted runs show without a replay: the
// server's own gauges when it reported requests waiting while it ran its peak (every run that
// queued must agree), else the TTFT queueing shape of the runs' records (queueCap). It
// returns 0 and "" when neither shows one.
func learnedCap(runs []run) (int, string) {
	scraped := 0
	for _, r := range runs {
		if r.serverCap > 0 && r.serverCap >= r.serverPeak {
			if scraped > 0 && scraped != r.serverCap {
				scraped = -1 // the runs disagree: not one server's cap
				break
			}
			scraped = r.serverCap
		}
	}
	if scraped > 0 {
		return scraped, CapFromScrape
	}
	var ts [][]timing
	lo := 1
	for _, r := range runs {
		ts = append(ts, r.tims)
		lo = max(lo, r.peak, r.serverPeak)
	}
	if k := queueCap(ts, lo); k > 0 {
		return k, CapFromQueue
	}
	return 0, ""
}

// queueCap fits the cap on running sequences to the shape of TTFT against the requests in
// flight at each arrival: under a cap k served first come first served, a request that
// arrives with n ≥ k requests ahead of it (sent and not finished) waits until n − k + 1 of
// them have ended, so its TTFT jumps by that wait over the prefill its prompt needs. For each
// k from lo to lo+capSpan, the waits are taken out of the TTFTs and what is left is fitted as
// a line in the prompt length (the prefill); the k whose line fits best wins when it queues
// at least minQueued requests and leaves under queueExplains of the squared error of no cap
// (one queued request is enough when its TTFT is the wait the cap predicts: a 60-request run
// at a low rate may queue only one). It returns
// 0 when no cap explains the runs (the cap never bound, or the server does not queue so).
func queueCap(runs [][]timing, lo int) int {
	none := queueSSE(runs, math.MaxInt32)
	best, bestSSE := 0, none
	for k := max(lo, 1); k <= lo+capSpan; k++ {
		sse := queueSSE(runs, k)
		if sse < bestSSE && queuedUnder(runs, k) >= minQueued {
			best, bestSSE = k, sse
		}
	}
	if best > 0 && bestSSE < queueExplains*none {
		return best
	}
	return 0
}

// minQueued is the fewest requests a cap must queue to be learned from the TTFT shape, and
// queueExplains the most of the no-cap squared error it may leave.
const (
	minQueued     = 1
	queueExplains = 0.25
)

// queueWaits returns, for each request of ts (in arrival order), how long it waits under a
// cap of k running requests served first come first served, in seconds: 0 when fewer than k
// requests ahead of it are in flight, else until the (n−k+1)-th of the n ends.
func queueWaits(ts []timing, k int) []float64 {
	waits := make([]float64, len(ts))
	var ends []int64 // the ends of the requests in flight, sorted
	for i, t := range ts {
		drop := sort.Search(len(ends), func(j int) bool { return ends[j] > t.intended })
		ends = ends[drop:]
		if n := len(ends); n >= k {
			waits[i] = float64(ends[n-k]-t.intended) / 1e9
		}
		at := sort.Search(len(ends), func(j int) bool { return ends[j] > t.end })
		ends = append(ends, 0)
		copy(ends[at+1:], ends[at:])
		ends[at] = t.end
	}
	return waits
}

// queuedUnder counts the requests of runs that wait under a cap of k.
func queuedUnder(runs [][]timing, k int) int {
	n := 0
	for _, ts := range runs {
		for _, w := range queueWaits(ts, k) {
			if w > 0 {
				n++
			}
		}
	}
	return n
}

// queueSSE is the squared error, in seconds², of TTFT minus the wait under cap k fitted as
// a + b × prompt tokens (those the prefill computed) by least squares over all runs.
func queueSSE(runs [][]timing, k int) float64 {
	var xs, ys []float64
	for _, ts := range runs {
		waits := queueWaits(ts, k)
		for i, t := range ts {
			xs = append(xs, float64(t.uncached()))
			ys = append(ys, float64(t.first-t.intended)/1e9-waits[i])
		}
	}
	a, b := lineFit(xs, ys)
	var sse float64
	for i := range xs {
		d := ys[i] - (a + b*xs[i])
		sse += d * d
	}
	return sse
}

// lineFit is the least-squares line y = a + b·x (b = 0 when the xs do not vary).
func lineFit(xs, ys []float64) (a, b float64) {
	n := float64(len(xs))
	if n == 0 {
		return 0, 0
	}
	var sx, sy, sxx, sxy float64
	for i := range xs {
		sx += xs[i]
		sy += ys[i]
		sxx += xs[i] * xs[i]
		sxy += xs[i] * ys[i]
	}
	if d := n*sxx - sx*sx; d > 0 {
		b = (n*sxy - sx*sy) / d
	}
	return (sy - b*sx) / n, b
}
