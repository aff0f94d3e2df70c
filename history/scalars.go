package history

import (
	"math"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// Scalars lists every scalar metric of a summary: every metric of the registry
// (metrics.Metrics: each distribution family's mean and percentiles, throughput, goodput,
// stalls, fluidity, failures, tokens per chunk) under its registry name, plus the few that
// only history keeps (historyOnly: cost, energy, fluidity's low percentiles, the client's lag,
// the server's prefix-cache hit rate). A
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
	putModels(s, put) // per-request model (issue 38)
	// The server's own prefix-cache hit rate over the run (issue 34), when its counters gave one.
	if p := s.ServerPrefixCache; p != nil && p.Available && p.Queries > 0 {
		put(ServerPrefixCacheMetric, p.HitRate)
	}
	return out
}

// modelSuffixes are the metrics putModels stores per model, and what they measure.
var modelSuffixes = []string{"requests", "failures.fraction", "throughput.output_tokens_per_s",
	"ttft.p50", "ttft.p99", "tpot.p50", "tpot.p99", "e2e.p50", "e2e.p99"}

// modelMetric resolves model.NAME.METRIC (NAME may hold dots) to METRIC's unit and direction.
func modelMetric(n string) (MetricInfo, bool) {
	if !strings.HasPrefix(n, "model.") {
		return MetricInfo{}, false
	}
	for _, suf := range modelSuffixes {
		if strings.HasSuffix(n, "."+suf) && len(n) > len("model.")+len(suf)+1 {
			if suf == "requests" {
				return MetricInfo{Name: n, Unit: "requests", Better: metrics.BetterNone}, true
			}
			mi, err := metrics.LookupMetric(suf)
			if err != nil {
				return MetricInfo{}, false
			}
			return MetricInfo{Name: n, Unit: mi.Unit, Better: mi.Better}, true
		}
	}
	return MetricInfo{}, false
}

// putModels stores the headline of each model of a run that sent several (Summary.ByModel)
// as model.NAME.METRIC: requests, failures.fraction, ttft/tpot/e2e p50 and p99 and the output
// token throughput; a latency without samples is left out.
func putModels(s *metrics.Summary, put func(string, float64)) {
	for name, c := range s.ByModel {
		n := metrics.NumbersOf(c)
		if n == nil {
			continue
		}
		p := "model." + name + "."
		put(p+"requests", float64(n.Requests))
		if n.Requests > 0 {
			put(p+"failures.fraction", float64(n.Failed)/float64(n.Requests))
		}
		put(p+"throughput.output_tokens_per_s", n.OutputTokens)
		for _, d := range []struct {
			name string
			dist metrics.Dist
		}{{"ttft", c.Latency.TTFT}, {"tpot", c.Latency.TPOT}, {"e2e", c.Latency.E2E}} {
			if d.dist.Count > 0 {
				put(p+d.name+".p50", d.dist.P50)
				put(p+d.name+".p99", d.dist.P99)
			}
		}
	}
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
	if m, ok := modelMetric(n); ok { // per-request model (issue 38)
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
	// One figure per run from the server's counters, outside the records compare works from.
	ServerPrefixCacheMetric: {Unit: "fraction", Better: metrics.BetterHigher},
	// Energy (issue 39; metrics/energy.go): a run-level figure from the GPUs' power readings.
	"energy.joules_per_request":      {Unit: "J", Better: metrics.BetterLower},
	"energy.output_tokens_per_joule": {Unit: "tok/J", Better: metrics.BetterHigher},
	"energy.avg_power_w":             {Unit: "W", Better: metrics.BetterNone},
	"energy.cost_per_request":        {Unit: "currency", Better: metrics.BetterLower},
}

// ServerPrefixCacheMetric is the server's prefix-cache hit rate over a run
// (summary.json's server_prefix_cache.hit_rate).
const ServerPrefixCacheMetric = "server_prefix_cache.hit_rate"
