package metrics

import (
	"fmt"
	"math"
	"time"
)

// The run-derived defaults: the stall threshold and the fluidity deadlines a summary uses
// when none is given. The stall threshold follows the engine's decode cadence per pass — the
// median gap between bursts (derive.go) — and the fluidity deadlines per-token decode time
// (TPOT). Neither follows chunk gaps: a server that sends each token of a speculative burst as
// its own event, microseconds apart, drives a chunk-gap median towards zero. And the threshold
// does not follow TPOT: speculative decoding delivers several tokens per pass and so lowers
// TPOT, and a TPOT-based threshold would call a gap a stall on a speculative arm that is no
// stall on a plain one (issue 32). A pass takes about as long with speculation as without,
// so the burst cadence, and with it the threshold, stays put.

// DefaultStallFloor is the smallest default stall threshold: below 20 ms a gap is client or
// network jitter (and under a reader's perception), not a stall, however fast the decode.
const DefaultStallFloor = 20 * time.Millisecond

// Stall threshold origins (Stalls.Source).
const (
	// StallGiven: Options.StallThreshold (--stall-threshold 250ms).
	StallGiven = "given"
	// StallSLOMaxGap: the SLO's max gap (a gap the SLO forbids is a stall).
	StallSLOMaxGap = "slo_max_gap"
	// StallSLOTBT: StallMultiple times the SLO's per-token deadline (TPOT, else ITL P99), at
	// least DefaultStallFloor.
	StallSLOTBT = "slo_tbt"
	// StallBurstCadence: StallMultiple times the run's median per-burst ITL.
	StallBurstCadence = "burst_cadence"
	// StallFloor: DefaultStallFloor, because the derived value was below it or the run had no
	// gap between bursts to derive it from.
	StallFloor = "floor"
)

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
	s.stallThreshold()
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

// stallThreshold sets the stall threshold and its origin: the one given, else from the SLO
// (its max gap, else StallMultiple times its per-token deadline), else StallMultiple times the
// run's median per-burst ITL; a derived threshold is at least DefaultStallFloor.
func (s *summarizer) stallThreshold() {
	o := &s.opts
	floored := func(v int64, src string) {
		s.threshold, s.thrSource = v, src
		if v <= int64(DefaultStallFloor) {
			s.threshold, s.thrSource = int64(DefaultStallFloor), StallFloor
		}
	}
	switch {
	case o.StallThreshold > 0:
		s.threshold, s.thrSource = int64(o.StallThreshold), StallGiven
	case o.SLO.MaxGap > 0:
		s.threshold, s.thrSource, s.thrSLO = int64(o.SLO.MaxGap), StallSLOMaxGap, o.SLO.MaxGap
	case o.SLO.TPOT > 0 || o.SLO.ITLP99 > 0:
		s.thrSLO = o.SLO.TPOT
		if s.thrSLO <= 0 {
			s.thrSLO = o.SLO.ITLP99
		}
		floored(int64(float64(s.thrSLO)*o.StallMultiple), StallSLOTBT)
	default:
		s.head.settleBursts()
		s.cadence = time.Duration(s.head.h[hITLBurst].quantile(50)) * time.Microsecond
		floored(int64(float64(s.cadence)*o.StallMultiple), StallBurstCadence)
	}
}

// thresholdRule says in words where the stall threshold came from.
func (s *summarizer) thresholdRule() string {
	m := s.opts.StallMultiple
	switch s.thrSource {
	case StallGiven:
		return "absolute"
	case StallSLOMaxGap:
		return fmt.Sprintf("the SLO's max gap %v", s.thrSLO)
	case StallSLOTBT:
		return fmt.Sprintf("%gx the SLO's per-token deadline %v", m, s.thrSLO)
	case StallBurstCadence:
		return fmt.Sprintf("%gx median burst ITL (%.3g ms)", m, ms(s.cadence))
	}
	switch {
	case s.thrSLO > 0:
		return fmt.Sprintf("floor %v (%gx the SLO's per-token deadline %v is below it)", DefaultStallFloor, m, s.thrSLO)
	case s.cadence > 0:
		return fmt.Sprintf("floor %v (%gx median burst ITL %.3g ms is below it)", DefaultStallFloor, m, ms(s.cadence))
	}
	return fmt.Sprintf("floor %v (no gap between bursts measured)", DefaultStallFloor)
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
