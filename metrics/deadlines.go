package metrics

import (
	"fmt"
	"math"
	"time"
)

// The run-derived defaults: the stall threshold and the fluidity deadlines a summary uses
// when none is given. Both come from per-token decode time (TPOT), never from chunk gaps:
// a server that sends each token of a speculative burst as its own event, microseconds
// apart, drives a chunk-gap median towards zero, while its TPOT stays the real decode pace.

// DefaultStallFloor is the smallest default stall threshold: below 20 ms a gap is client or
// network jitter (and under a reader's perception), not a stall, however fast the decode.
const DefaultStallFloor = 20 * time.Millisecond

// DefaultFluidityPace makes the derived fluidity deadlines this multiple of the run's median
// TPOT (between tokens) and median TTFT (first token). The index then measures delivery
// against the pace the system itself keeps: a steady stream, bursty or not, meets every
// deadline (early tokens bank slack), while a stall longer than the slack banked so far (a
// quarter of the typical token time per token delivered) misses floor(gap / TBT) deadlines.
// A fixed deadline (50 ms, say) far above a fast engine's pace banks so much slack that no
// stall ever shows; set --slo tpot=/ttft= (or Options.FluidityTBT/FluidityTTFT) to judge
// against a user-facing target instead.
const DefaultFluidityPace = 1.25

// fluidityDerived reports whether o leaves the fluidity deadlines to the run.
func fluidityDerived(o Options) bool {
	return o.FluidityTBT <= 0 && o.FluidityTTFT <= 0 && o.SLO.TPOT <= 0 && o.SLO.ITLP99 <= 0 && o.SLO.TTFT <= 0
}

// deriveFromRun sets the stall threshold and, when derived, the fluidity deadlines from the
// first pass's headline histograms. raw is the Options as given (before defaults).
func (s *summarizer) deriveFromRun(raw Options) {
	tpot := float64(s.head.h[hTPOT].quantile(50)) * 1000 // µs -> ns
	s.threshold = int64(s.opts.StallThreshold)
	if s.threshold <= 0 {
		s.threshold = max(int64(tpot*s.opts.StallMultiple), int64(DefaultStallFloor))
		s.tpotMedian = time.Duration(tpot)
	}
	s.dlRule = "given"
	switch {
	case raw.FluidityTBT > 0 || raw.FluidityTTFT > 0:
		s.dlRule = "given"
	case raw.SLO.TPOT > 0 || raw.SLO.ITLP99 > 0 || raw.SLO.TTFT > 0:
		s.dlRule = "from the SLO"
		if raw.SLO.TTFT <= 0 {
			s.dlRule = "TBT from the SLO, TTFT default"
		}
	default:
		ttft := float64(s.head.h[hTTFT].quantile(50)) * 1000
		if tpot <= 0 || ttft <= 0 {
			s.dlRule = "defaults (the run has no TPOT or TTFT to derive them from)"
			return
		}
		s.dl = fluidityDeadlines{
			ttft: time.Duration(math.Ceil(ttft * DefaultFluidityPace)),
			tbt:  time.Duration(math.Ceil(tpot * DefaultFluidityPace)),
			rate: -1,
		}
		s.dlRule = fmt.Sprintf("%gx the run's median TTFT and TPOT", DefaultFluidityPace)
	}
}

func (s *summarizer) thresholdRule() string {
	if s.opts.StallThreshold > 0 {
		return "absolute"
	}
	if s.threshold <= int64(DefaultStallFloor) {
		if s.tpotMedian <= 0 {
			return fmt.Sprintf("floor %v (no TPOT measured)", DefaultStallFloor)
		}
		return fmt.Sprintf("floor %v (%gx median TPOT %.3g ms is below it)", DefaultStallFloor, s.opts.StallMultiple, ms(s.tpotMedian))
	}
	return fmt.Sprintf("%gx median TPOT (%.3g ms)", s.opts.StallMultiple, ms(s.tpotMedian))
}

// baseDeadlines fixes the run-derived thresholds of an A/B candidate to the base's, so both
// sides are judged by one rule.
func baseDeadlines(o *Options, base *Summary) {
	if o.StallThreshold <= 0 {
		o.StallThreshold = time.Duration(base.Stalls.ThresholdMs * float64(time.Millisecond))
	}
	if fluidityDerived(*o) && base.Fluidity.TBTDeadlineMs > 0 {
		o.FluidityTBT = time.Duration(base.Fluidity.TBTDeadlineMs * float64(time.Millisecond))
		o.FluidityTTFT = time.Duration(base.Fluidity.TTFTDeadlineMs * float64(time.Millisecond))
		o.FluidityPrefillRate = -1
	}
}
