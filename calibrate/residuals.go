package calibrate

import (
	"fmt"
	"math"
	"sort"
	"strings"
)

// Residual is the fit's own error on one quantity of one fitted run: the calibrated engine
// replaying the run against what the run measured.
type Residual struct {
	Run      string `json:"run"`
	Quantity string `json:"quantity"` // ttft_p50, ttft_p99, tpot_p50, tpot_p99, throughput
	// Unit is "ms" for the latencies, "tok/s" for throughput (output tokens over the run's
	// span from its first send to its last end).
	Unit      string  `json:"unit"`
	Measured  float64 `json:"measured"`
	Simulated float64 `json:"simulated"`
	RelErr    float64 `json:"rel_err"` // (simulated − measured) / measured
}

// Bounds beyond which a residual says the model family cannot fit the server: the medians
// and throughput are what the profile is for; tails are noisier (a P99 of 60 requests is
// one or two of them).
const (
	ResidualBound     = 0.10
	ResidualTailBound = 0.25
)

// residuals compares a fitted run's measured and replayed TTFT and TPOT P50/P99 and output
// throughput.
func residuals(r run, sim []measured) []Residual {
	var out []Residual
	for _, m := range []struct {
		name string
		pick func(measured) float64
	}{{"ttft", func(x measured) float64 { return x.ttft }}, {"tpot", func(x measured) float64 { return x.tpot }}} {
		var a, b []float64
		for i := range r.meas {
			if x, y := m.pick(r.meas[i]), m.pick(sim[i]); x > 0 && y > 0 {
				a, b = append(a, x), append(b, y)
			}
		}
		if len(a) == 0 {
			continue
		}
		sort.Float64s(a)
		sort.Float64s(b)
		for _, q := range []float64{0.5, 0.99} {
			x, y := quantile(a, q)*1e3, quantile(b, q)*1e3
			out = append(out, Residual{Run: r.path, Quantity: fmt.Sprintf("%s_p%.0f", m.name, q*100), Unit: "ms",
				Measured: x, Simulated: y, RelErr: (y - x) / x})
		}
	}
	if x, y := throughput(r, r.meas), throughput(r, sim); x > 0 && y > 0 {
		out = append(out, Residual{Run: r.path, Quantity: "throughput", Unit: "tok/s", Measured: x, Simulated: y, RelErr: (y - x) / x})
	}
	return out
}

// throughput is the output tokens of r over the span from its first arrival to the last end
// of times (ends at arrival + E2E), in tokens per second; 0 for an empty span.
func throughput(r run, times []measured) float64 {
	var tokens int
	first, last := math.Inf(1), math.Inf(-1)
	for i, q := range r.reqs {
		at := q.Arrival.Seconds()
		first = math.Min(first, at)
		last = math.Max(last, at+times[i].e2e)
		tokens += q.MaxTokens
	}
	if !(last > first) {
		return 0
	}
	return float64(tokens) / (last - first)
}

// residualWarnings says which residuals are beyond their bound: the engine's model family
// (a roofline per step, continuous batching under one cap) cannot reproduce those runs with
// any constants, so predictions from the profile carry at least that error.
func residualWarnings(rs []Residual) []string {
	var bad []string
	for _, r := range rs {
		bound := ResidualBound
		if strings.HasSuffix(r.Quantity, "_p99") {
			bound = ResidualTailBound
		}
		if math.Abs(r.RelErr) > bound {
			bad = append(bad, fmt.Sprintf("%s %+.0f%% (bound ±%.0f%%)", r.Quantity, r.RelErr*100, bound*100))
		}
	}
	if len(bad) == 0 {
		return nil
	}
	return []string{"the engine's model cannot fit these runs: " + strings.Join(bad, ", ") +
		"; predictions from this profile carry at least that error (check the server's scheduling: slots, chunked prefill, speculative decoding, prefix caching)"}
}
