package runner

import (
	"fmt"
	"math"
	"sort"

	"github.com/llmbench/llmbench/metrics"
)

// CapacitySearch finds the highest offered load whose goodput fraction reaches Target, by
// bracketing (doubling up, or halving down, until one point passes and one fails) and then
// bisection until the bracket is narrower than Precision (relative to its lower end). A point
// passes when it is not saturated and its goodput fraction is at least Target.
type CapacitySearch struct {
	Target    float64 // e.g. 0.9: 90% of requests within SLO
	Precision float64 // relative bracket width that ends the search (default 0.05)
	MaxPoints int     // stop after this many points (default 12)
	MinRate   float64 // never go below this rate (default 1e-3)
}

// Capacity is the result of a search so far.
type Capacity struct {
	// Rate is the highest passing load measured (0 when none passed yet).
	Rate float64 `json:"rate"`
	// Failing is the lowest failing load above Rate (0 when none failed yet).
	Failing float64 `json:"failing"`
	// Done is true when the bracket is narrow enough, the point budget is spent, or the
	// lowest load failed at MinRate.
	Done   bool   `json:"done"`
	Reason string `json:"reason"`
}

func (c CapacitySearch) pass(p metrics.SweepPoint) bool {
	return !p.Saturated && p.GoodputFraction >= c.Target
}

// Next returns the next load to measure given the points measured so far (any order), and the
// capacity found so far. With no points it returns start. When the result is Done, next is 0.
func (c CapacitySearch) Next(start float64, points []metrics.SweepPoint) (next float64, res Capacity) {
	if c.Precision <= 0 {
		c.Precision = 0.05
	}
	if c.MaxPoints <= 0 {
		c.MaxPoints = 12
	}
	if c.MinRate <= 0 {
		c.MinRate = 1e-3
	}
	if len(points) == 0 {
		return start, Capacity{Reason: "no point measured yet"}
	}
	pts := append([]metrics.SweepPoint(nil), points...)
	sort.Slice(pts, func(i, j int) bool { return pts[i].Rate < pts[j].Rate })
	lo, hi := 0.0, math.Inf(1)
	for _, p := range pts {
		if c.pass(p) && p.Rate > lo {
			lo = p.Rate
		}
	}
	for _, p := range pts {
		if !c.pass(p) && p.Rate > lo && p.Rate < hi {
			hi = p.Rate
		}
	}
	res.Rate = lo
	if !math.IsInf(hi, 1) {
		res.Failing = hi
	}
	switch {
	case lo == 0 && pts[0].Rate <= c.MinRate:
		res.Done, res.Reason = true, fmt.Sprintf("even %.3g fails the target", pts[0].Rate)
		return 0, res
	case len(points) >= c.MaxPoints:
		res.Done, res.Reason = true, fmt.Sprintf("point budget of %d spent", c.MaxPoints)
		return 0, res
	case lo == 0:
		return math.Max(pts[0].Rate/2, c.MinRate), res
	case math.IsInf(hi, 1):
		return pts[len(pts)-1].Rate * 2, res
	case (hi-lo)/lo <= c.Precision:
		res.Done, res.Reason = true, fmt.Sprintf("bracket [%.4g, %.4g] is within %.0f%%", lo, hi, c.Precision*100)
		return 0, res
	}
	return (lo + hi) / 2, res
}
