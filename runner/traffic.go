package runner

import (
	"github.com/llmbench/llmbench/traces"
)

// TraceRate is the trace's mean arrival rate: requests after the first over the arrival span
// (1 for fewer than two requests; the count when they all arrive at once).
func TraceRate(reqs []traces.Request) float64 {
	if len(reqs) < 2 {
		return 1
	}
	span := (reqs[len(reqs)-1].Arrival - reqs[0].Arrival).Seconds()
	if span <= 0 {
		return float64(len(reqs))
	}
	return float64(len(reqs)-1) / span
}

// Greedy returns reqs with temperature 0 where the trace gave none, so that outputs can be
// checked for equivalence between the arms.
func Greedy(reqs []traces.Request) []traces.Request {
	out := make([]traces.Request, len(reqs))
	zero := 0.0
	for i, r := range reqs {
		if r.Temperature == nil {
			r.Temperature = &zero
		}
		out[i] = r
	}
	return out
}
