package history

import (
	"math"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// Scalars lists every scalar metric of a summary: every metric of the registry
// (metrics.Metrics: each distribution family's mean and percentiles, throughput, goodput,
// stalls, fluidity, failures, tokens per chunk) under its registry name, plus the few that
// only history keeps (historyOnly: cost, energy, fluidity's low percentiles, the client's lag). A
// distribution with no samples, goodput without an SLO and cost without prices are left out
// rather than stored as zeros that would read as measurements.
//
// This is the one place that maps a Summary to history's metric names.
func Scalars(s *metrics.Summary) map[string]float64 {
	out := map[string]float64{}
	put := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[name] = v
		}
	}
	hasSLO := len(s.Goodput.SLO) > 0 || len(s.Goodput.ClassSLO) > 0
	for _, m := range metrics.Metrics() {
		switch {
		case strings.HasPrefix(m.Name, "goodput.") && !hasSLO:
			continue
		case strings.HasPrefix(m.Name, "stalls.") && s.Requests.Succeeded == 0:
			continue
		}
		if v, err := metrics.MetricValue(s, m.Name); err == nil {
			put(m.Name, v)
		}
	}
	f := s.Fluidity
	if f.TBTDeadlineMs > 0 || f.IndexMean != 0 {
		// A summary without the fluidity histogram still has the index's block.
		if _, ok := out["fluidity.mean"]; !ok {
			put("fluidity.mean", f.IndexMean)
			put("fluidity.p50", f.IndexP50)
		}
		put("fluidity.p5", f.IndexP5)
		put("fluidity.p1", f.IndexP1)
	}
	if c := s.Cost; c != nil {
		put("cost.per_request", c.PerRequest)
		put("cost.per_million_output_tokens", c.PerMillionOutput)
		put("cost.per_million_tokens", c.PerMillionTokens)
		if c.PerGoodRequest > 0 {
			put("cost.per_good_request", c.PerGoodRequest)
		}
	}
	if e := s.Energy; e != nil && e.Available {
		// Energy (issue 39): only a known figure; unknown power is no row, never a zero.
		for name, v := range map[string]*float64{"energy.joules_per_request": e.JoulesPerRequest,
			"energy.output_tokens_per_joule": e.OutputTokensPerJoule, "energy.avg_power_w": e.AvgPowerW,
			"energy.cost_per_request": e.CostPerRequest} {
			if v != nil {
				put(name, *v)
			}
		}
	}
	if s.Client.LagMs.Count > 0 {
		put("client.schedule_lag.p99", s.Client.LagMs.P99)
	}
	return out
}

// MetricInfo says how to read one history metric.
type MetricInfo struct {
	Name string
	Unit string
	// Better is metrics.BetterLower, BetterHigher, or BetterNone ("descriptive": a shape of
	// delivery, never better or worse; a change is reported but never fails the check).
	Better string
}

// LookupMetric resolves a history metric name (an alias such as "goodput" included): the
// registry's entry (metrics.LookupMetric), or one of the few metrics only history stores.
func LookupMetric(name string) (MetricInfo, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if m, ok := historyOnly[n]; ok {
		m.Name = n
		return m, nil
	}
	mi, err := metrics.LookupMetric(n)
	if err != nil {
		return MetricInfo{}, err
	}
	return MetricInfo{Name: mi.Name, Unit: mi.Unit, Better: mi.Better}, nil
}

// historyOnly are the metrics history stores that the registry does not declare (compare
// does not take them): they come from blocks of the summary that are not distributions in the
// registry's sense.
var historyOnly = map[string]MetricInfo{
	"fluidity.p5":                    {Unit: "index", Better: metrics.BetterHigher},
	"fluidity.p1":                    {Unit: "index", Better: metrics.BetterHigher},
	"cost.per_request":               {Unit: "currency", Better: metrics.BetterLower},
	"cost.per_million_output_tokens": {Unit: "currency", Better: metrics.BetterLower},
	"cost.per_million_tokens":        {Unit: "currency", Better: metrics.BetterLower},
	"cost.per_good_request":          {Unit: "currency", Better: metrics.BetterLower},
	"client.schedule_lag.p99":        {Unit: "ms", Better: metrics.BetterLower},
	// Energy (issue 39; metrics/energy.go): a run-level figure from the GPUs' power readings.
	"energy.joules_per_request":      {Unit: "J", Better: metrics.BetterLower},
	"energy.output_tokens_per_joule": {Unit: "tok/J", Better: metrics.BetterHigher},
	"energy.avg_power_w":             {Unit: "W", Better: metrics.BetterNone},
	"energy.cost_per_request":        {Unit: "currency", Better: metrics.BetterLower},
}
