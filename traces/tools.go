package traces

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"time"
)

// The trace tools below never modify their input; they return new slices (sharing the
// read-only Messages, HashIDs, Temperature and Seed values of the input).

// Scale multiplies every arrival offset and think time by factor (2 makes the trace twice as
// long, halving its rate; 0.5 doubles the rate). factor must be finite and > 0.
func Scale(reqs []Request, factor float64) ([]Request, error) {
	if !(factor > 0) || math.IsInf(factor, 0) {
		return nil, fmt.Errorf("scale factor must be a finite number > 0 (got %v)", factor)
	}
	out := make([]Request, len(reqs))
	for i, r := range reqs {
		r.Arrival = scaleDur(r.Arrival, factor)
		r.Think = scaleDur(r.Think, factor)
		r.ToolDelay = scaleDur(r.ToolDelay, factor) // agentic sessions: tool delays are on the timeline too
		out[i] = r
	}
	return out, nil
}

func scaleDur(d time.Duration, f float64) time.Duration {
	v := math.Round(float64(d) * f)
	if v > math.MaxInt64 {
		return math.MaxInt64
	}
	return time.Duration(v)
}

// ScaleToRate rescales time so that the mean arrival rate (Stats.RatePerS) becomes rate
// requests per second.
func ScaleToRate(reqs []Request, rate float64) ([]Request, error) {
	if !(rate > 0) || math.IsInf(rate, 0) {
		return nil, fmt.Errorf("target rate must be a finite number > 0 requests/s (got %v)", rate)
	}
	cur := ComputeStats(reqs).RatePerS
	if cur == 0 {
		return nil, errors.New("cannot scale to a rate: the trace needs at least two requests at different times")
	}
	return Scale(reqs, cur/rate)
}

// Slice keeps the requests with from <= Arrival < to (to <= 0 means to the end). With rebase,
// arrivals are shifted by -from so that the window starts at offset 0. Sessions cut by the
// window keep only their turns inside it.
func Slice(reqs []Request, from, to time.Duration, rebase bool) ([]Request, error) {
	if from < 0 {
		return nil, fmt.Errorf("slice start must be >= 0 (got %v)", from)
	}
	if to > 0 && to <= from {
		return nil, fmt.Errorf("slice end (%v) must be after its start (%v)", to, from)
	}
	var out []Request
	for _, r := range reqs {
		if r.Arrival < from || (to > 0 && r.Arrival >= to) {
			continue
		}
		if rebase {
			r.Arrival -= from
		}
		out = append(out, r)
	}
	return out, nil
}

// SampleOptions selects a random subset. Exactly one of N and Fraction is set.
type SampleOptions struct {
	// N is the number of units to keep (all if the trace has fewer).
	N int
	// Fraction in (0, 1] keeps round(Fraction × units) units.
	Fraction float64
	// Seed makes the choice reproducible.
	Seed int64
}

// Sample keeps a uniformly random subset of the trace, in the original order and at the
// original times (the rate drops; use Scale to restore it). The unit of sampling is a session
// (all its turns stay together) or a request without a session.
func Sample(reqs []Request, opts SampleOptions) ([]Request, error) {
	if (opts.N > 0) == (opts.Fraction > 0) {
		return nil, errors.New("sample needs exactly one of a count (n > 0) or a fraction in (0, 1]")
	}
	if opts.Fraction > 1 || math.IsNaN(opts.Fraction) {
		return nil, fmt.Errorf("sample fraction must be in (0, 1] (got %v)", opts.Fraction)
	}
	unitOf := make([]int, len(reqs))
	sessionUnit := map[string]int{}
	units := 0
	for i, r := range reqs {
		if r.Session == "" {
			unitOf[i] = units
			units++
			continue
		}
		u, ok := sessionUnit[r.Session]
		if !ok {
			u = units
			sessionUnit[r.Session] = u
			units++
		}
		unitOf[i] = u
	}
	keep := opts.N
	if opts.Fraction > 0 {
		keep = int(math.Round(opts.Fraction * float64(units)))
	}
	keep = min(keep, units)
	// A partial Fisher–Yates shuffle over the PCG bit stream (whose output is specified), so a
	// seed selects the same subset in every Go release.
	src := rand.NewPCG(uint64(opts.Seed), 0x5a3b1e)
	perm := make([]int, units)
	for i := range perm {
		perm[i] = i
	}
	chosen := make([]bool, units)
	for i := 0; i < keep; i++ {
		j := i + int(src.Uint64()%uint64(units-i))
		perm[i], perm[j] = perm[j], perm[i]
		chosen[perm[i]] = true
	}
	var out []Request
	for i, r := range reqs {
		if chosen[unitOf[i]] {
			out = append(out, r)
		}
	}
	return out, nil
}

// Filter keeps the requests whose class is one of classes (or, with exclude, none of them).
// The empty class name selects untagged requests.
func Filter(reqs []Request, classes []string, exclude bool) ([]Request, error) {
	if len(classes) == 0 {
		return nil, errors.New("filter needs at least one class")
	}
	set := map[string]bool{}
	for _, c := range classes {
		set[c] = true
	}
	var out []Request
	for _, r := range reqs {
		if set[r.Class] != exclude {
			out = append(out, r)
		}
	}
	return out, nil
}
