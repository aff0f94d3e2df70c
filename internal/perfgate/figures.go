package main

import "github.com/llmbench/llmbench/metrics"

// Kinds of measurement: one invocation of a build measures every figure of its kind.
const (
	kindBench = "bench" // llmbench bench --json: dispatch, ingest, arrival error
	kindLong  = "long"  // llmbench bench --scenario long-streams --json: one point
	kindSim   = "sim"   // llmbench simulate of an overload trace: wall time, peak RSS
)

var allKinds = []string{kindBench, kindLong, kindSim}

// figure is one number the gate judges. Each is a ratio head / base per round, never an
// absolute threshold.
type figure struct {
	// name is how the table and the JSON name it; kind the measurement that yields it.
	name, kind string
	// unit and format print the medians.
	unit, format string
	// better is metrics.BetterHigher or metrics.BetterLower.
	better string
	// minEffect is the smallest change that fails the gate (0.05: 5%), when the interval
	// also excludes no change.
	minEffect float64
	// floor is the figure's resolution: a value below it (dispatch: no rate held, 0) is
	// counted as the floor, so that a build measuring 0 against one measuring 12,000 reads as
	// the regression it is, and two builds measuring 0 as no change.
	floor float64
	// why says where minEffect comes from.
	why string
}

// figures are every figure the gate judges, in table order. The minimum effects: 5% for the
// throughputs and memory the regressions were made of (ingest −7% on a quiet host),
// 10% where the figure has a coarser grain of its own (the dispatch search's last bisection
// step is 1/16 of the rate it doubled to) or is a tail percentile of sub-millisecond
// timings, which a single late wake-up moves.
var figures = []figure{
	{name: "dispatch_req_per_s", kind: kindBench, unit: "req/s", format: "%.0f", better: metrics.BetterHigher, minEffect: 0.10, floor: 50,
		why: "0 means not even the search's lowest step, 62.5 req/s, held"},
	{name: "ingest_tokens_per_s", kind: kindBench, unit: "tok/s", format: "%.0f", better: metrics.BetterHigher, minEffect: 0.05, floor: 1,
		why: "one core's parsing rate"},
	{name: "arrival_error_p99_ms", kind: kindBench, unit: "ms", format: "%.3f", better: metrics.BetterLower, minEffect: 0.10, floor: 0.001,
		why: "a tail percentile of sub-millisecond timings"},
	{name: "long_lag_p99_ms", kind: kindLong, unit: "ms", format: "%.3f", better: metrics.BetterLower, minEffect: 0.10, floor: 0.001,
		why: "a tail percentile of sub-millisecond timings"},
	{name: "long_arrival_error_p99_ms", kind: kindLong, unit: "ms", format: "%.3f", better: metrics.BetterLower, minEffect: 0.10, floor: 0.001,
		why: "a tail percentile of sub-millisecond timings"},
	{name: "long_rss_per_stream_kb", kind: kindLong, unit: "KB", format: "%.1f", better: metrics.BetterLower, minEffect: 0.05, floor: 1,
		why: "memory per stream in flight"},
	{name: "sim_wall_s", kind: kindSim, unit: "s", format: "%.2f", better: metrics.BetterLower, minEffect: 0.05, floor: 0.01,
		why: "the overload simulation's wall time"},
	{name: "sim_peak_rss_mb", kind: kindSim, unit: "MB", format: "%.0f", better: metrics.BetterLower, minEffect: 0.05, floor: 1,
		why: "the overload simulation's peak resident memory"},
}

// figuresOf returns the figures of the given kinds, in table order.
func figuresOf(kinds []string) []figure {
	var out []figure
	for _, f := range figures {
		for _, k := range kinds {
			if f.kind == k {
				out = append(out, f)
			}
		}
	}
	return out
}
