package runner

import (
	"github.com/llmbench/llmbench/traces"
)

// TraceRate is the trace's mean arrival rate: requests after the first over the arrival span
// (1 for fewer than two requests; the count when they all arrive at once).
func TraceRate(reqs []traces.Request) float64 { return SourceRate(traces.FromSlice(reqs)) }

// SourceRate is TraceRate of a Source.
func SourceRate(src traces.Source) float64 {
	n := src.Len()
	if n < 2 {
		return 1
	}
	first, last := src.Span()
	span := (last - first).Seconds()
	if span <= 0 {
		return float64(n)
	}
	return float64(n-1) / span
}

// Greedy is src with temperature 0 where the trace gave none, so that outputs can be checked
// for equivalence between the arms. It reads src once (the workload's statistics).
func Greedy(src traces.Source) (traces.Source, error) {
	zero := 0.0
	return traces.Map(src, func(q *traces.Request) {
		if q.Temperature == nil {
			q.Temperature = &zero
		}
	})
}
