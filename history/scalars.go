package history

import (
	"math"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// Scalars lists every scalar metric of a summary under the names --fail-on and compare use
// (metrics.LookupMetric): each latency family's mean and percentiles, throughput, goodput,
// stalls, fluidity, failures, tokens per chunk, cost and the client's scheduling lag. A
// distribution with no samples, goodput without an SLO and cost without prices are left out
// rather than stored as zeros that would read as measurements.
//
// This is the one place that maps a Summary to history's metric names; when metrics declares
// its metrics in one registry, this function reads that registry instead.
func Scalars(s *metrics.Summary) map[string]float64 {
	out := map[string]float64{}
	put := func(name string, v float64) {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			out[name] = v
		}
	}
	dist := func(fam string, d metrics.Dist) {
		if d.Count <= 0 {
			return
		}
		put(fam+".mean", d.Mean)
		put(fam+".p50", d.P50)
		put(fam+".p90", d.P90)
		put(fam+".p95", d.P95)
		put(fam+".p99", d.P99)
		put(fam+".p999", d.P999)
		put(fam+".max", d.Max)
	}
	l := s.Latency
	dist("ttft", l.TTFT)
	dist("tpot", l.TPOT)
	dist("itl", l.ITL)
	dist("itl_chunk", l.ITLChunk)
	dist("e2e", l.E2E)
	dist("queue", l.Queue)
	dist("max_gap", l.MaxGap)
	dist("normalized", l.Normalized)
	dist("tokens_per_chunk", s.TokensPerChunk)

	t := s.Throughput
	put("throughput.requests_per_s", t.RequestsPerS)
	put("throughput.input_tokens_per_s", t.InputTokensPerS)
	put("throughput.output_tokens_per_s", t.OutputTokensPerS)
	if len(s.Goodput.SLO) > 0 || len(s.Goodput.ClassSLO) > 0 {
		put("goodput.fraction", s.Goodput.Fraction)
		put("goodput.requests_per_s", s.Goodput.RequestsPerS)
	}
	r := s.Requests
	if r.Total > 0 {
		put("failures.fraction", float64(r.Failed)/float64(r.Total))
	}
	if r.Succeeded > 0 {
		put("stalls.requests_fraction", s.Stalls.RequestFraction)
		put("stalls.per_request", float64(s.Stalls.Count)/float64(r.Succeeded))
		put("stalls.time_fraction", s.Stalls.StalledTimeFraction)
	}
	if f := s.Fluidity; f.TBTDeadlineMs > 0 || f.IndexMean != 0 {
		put("fluidity.mean", f.IndexMean)
		put("fluidity.p50", f.IndexP50)
		put("fluidity.p5", f.IndexP5)
		put("fluidity.p1", f.IndexP1)
		put("fluidity.fraction_ge_0_9", f.FractionAbove90)
	}
	if c := s.Cost; c != nil {
		put("cost.per_request", c.PerRequest)
		put("cost.per_million_output_tokens", c.PerMillionOutput)
		put("cost.per_million_tokens", c.PerMillionTokens)
		if c.PerGoodRequest > 0 {
			put("cost.per_good_request", c.PerGoodRequest)
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
	// Better is "lower", "higher", or "descriptive" (a shape of delivery, never better or
	// worse: a change is reported but never fails the check).
	Better string
}

// LookupMetric resolves a history metric name (an alias such as "goodput" included). Names
// that compare knows come from metrics.LookupMetric; the few that only history stores (cost,
// fluidity's low percentiles, the client's lag) are declared here.
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
	better := mi.Better
	if strings.HasPrefix(mi.Name, "tokens_per_chunk.") {
		// Tokens per chunk describe delivery shape (speculative decoding, server batching).
		better = "descriptive"
	}
	return MetricInfo{Name: mi.Name, Unit: mi.Unit, Better: better}, nil
}

var historyOnly = map[string]MetricInfo{
	"fluidity.p5":                    {Unit: "index", Better: "higher"},
	"fluidity.p1":                    {Unit: "index", Better: "higher"},
	"cost.per_request":               {Unit: "currency", Better: "lower"},
	"cost.per_million_output_tokens": {Unit: "currency", Better: "lower"},
	"cost.per_million_tokens":        {Unit: "currency", Better: "lower"},
	"cost.per_good_request":          {Unit: "currency", Better: "lower"},
	"client.schedule_lag.p99":        {Unit: "ms", Better: "lower"},
}
