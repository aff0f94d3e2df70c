package metrics

import "time"

// ReplayLength is the nominal length of one pass over a trace of n requests whose first and
// last arrivals are first and last (offsets from the trace start, already rate-scaled): the
// last arrival plus one mean inter-arrival gap, so that the last request gets a slot as long
// as the others' before the run (or the next repeat) ends. For one request it is its arrival.
func ReplayLength(first, last time.Duration, n int) time.Duration {
	if n > 1 {
		return last + (last-first)/time.Duration(n-1)
	}
	return last
}

// PhaseOf is the phase of a request intended at offset t of a run whose nominal end is end
// (loadgen: its Duration, else Repeat × ReplayLength; simulate: ReplayLength): PhaseWarmup in
// [0, warmup), PhaseCooldown in [end−cooldown, ∞) when cooldown > 0, PhaseSteady otherwise.
// Warm-up wins where the two overlap. run and simulate both call it, so the same trace at the
// same rate gets the same phases from either (docs/ARCHITECTURE.md, "Measurement rules").
func PhaseOf(t, warmup, cooldown, end time.Duration) string {
	switch {
	case t < warmup:
		return PhaseWarmup
	case cooldown > 0 && t >= end-cooldown:
		return PhaseCooldown
	}
	return PhaseSteady
}
