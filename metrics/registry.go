package metrics

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
)

// The metric registry: every metric llmbench reports is declared here once, and every
// consumer reads it — Summarize (histogram names and scales), ParseFailOn (names, units,
// directions), Compare (DefaultCompareMetrics, LookupMetric, how each metric is stored and
// evaluated), and the reports (titles, one-line descriptions, units).
//
// Adding a metric is one entry below plus its computation:
//
//   - a distribution family (a value per request or per token) is a Family in families, plus
//     the code that records it (summarize.go: a histogram index h*; compare_side.go: a
//     per-request slot sf* for StorageHistogram or bf* for StorageBins);
//   - a per-run scalar (a ratio of counts) is a Scalar in scalars, whose ratio and value
//     functions are its computation in Compare and in a Summary.
//
// TestRegistryConsumers (registry_test.go) iterates the registry and fails for an entry that
// a consumer does not know.
//
// # Quantiles
//
// One rule everywhere: the value at quantile q of n samples (n may be a weighted count) is
// the sample of rank max(1, min(n, ⌊q·n + ½⌋)) in ascending order — nearest rank, halves
// rounded up. It is the rule of HdrHistogram's ValueAtQuantile, and quantileRank implements it
// for this package's own code. Where the samples sit in buckets the rank picks the bucket
// and the value is the bucket's representative:
//
//   - Summary percentiles (HdrHistogram, 3 significant digits): the highest value equivalent
//     to the bucket, at most 0.1% above the sample;
//   - Compare on StorageHistogram families: the exact per-request value, so a comparison's
//     percentile can differ from the Summary's by the histogram's 0.1% resolution;
//   - Compare on StorageBins families and the time series' per-bucket percentiles: the
//     midpoint of a log-linear bin of under 0.8% width (sparsehist.go).
//
// Means are exact in every case.
//
// # Directions
//
// A metric is better when lower (BetterLower), when higher (BetterHigher), or never
// (BetterNone, "descriptive"): a descriptive metric describes the shape of token delivery —
// tokens per chunk, and per-token ITL percentiles, which are 0 for the k-1 tokens that
// arrive inside a chunk of k — and a change in it is reported as VerdictChanged, never as
// better or worse, and no --fail-on rule may name it.

// Directions of MetricInfo.Better and MetricDelta.Better.
const (
	BetterLower  = "lower"
	BetterHigher = "higher"
	// BetterNone marks a descriptive metric: its change is never judged.
	BetterNone = "descriptive"
)

// Storage says how a metric's values are held while comparing.
type Storage string

// Storages.
const (
	// StorageHistogram: one value per request, kept exact per request by Compare and in an
	// HdrHistogram by Summarize.
	StorageHistogram Storage = "histogram"
	// StorageBins: many values per request (per token, per chunk), kept by Compare as
	// log-linear bins per request with exact sums, and in an HdrHistogram by Summarize.
	StorageBins Storage = "bins"
	// StorageScalar: a per-run ratio of counts (a rate or a fraction), not a distribution.
	StorageScalar Storage = "scalar"
	// StorageSummaryOnly: a histogram of the Summary that Compare does not take (the client's
	// own schedule lag describes the harness, not the endpoint).
	StorageSummaryOnly Storage = "summary-only"
)

// Family is a distribution: a value per request (or per token or chunk) summarized by the
// statistics in Stats.
type Family struct {
	Name string // e.g. "ttft"; the key of Summary.Histograms
	Unit string // "ms", "tokens" or "index"
	// Scale multiplies a value as stored in the family's HdrHistogram (µs, tokens, or the
	// fluidity index times 1000) into Unit.
	Scale float64
	// Better is the direction of every statistic except the percentiles when PctBetter is set.
	Better    string
	PctBetter string
	Storage   Storage
	// Overlay: a Comparison carries both sides' CDFs of this family (Comparison.CDFs).
	Overlay bool
	Short   string // table label, e.g. "E2E"
	Title   string // chart title, e.g. "End-to-end latency"
	What    string // what it measures, one line
}

// Stats are the statistics of a distribution family, in report order.
var Stats = []string{"mean", "p50", "p90", "p95", "p99", "p999", "max"}

// statBetter is the direction of one statistic of f.
func (f *Family) statBetter(stat string) string {
	if f.PctBetter != "" && strings.HasPrefix(stat, "p") {
		return f.PctBetter
	}
	return f.Better
}

// Scalar is a per-run metric: a ratio of counts over a side's steady-state records.
type Scalar struct {
	Name   string // e.g. "goodput.fraction"
	Unit   string // "req/s", "tok/s", "fraction" or "stalls"
	Better string
	Title  string
	What   string
	// ratio is the metric's computation in Compare: numerator and denominator from a
	// (weighted) side over window seconds; the metric is num/den, undefined when den <= 0.
	ratio func(a *scalarAcc, window float64) (num, den float64)
	// value reads the metric from a Summary.
	value func(s *Summary) float64
}

// families are the distribution families in the order of the h* histogram indices of
// summarize.go (a test checks the order).
var families = [nHist]Family{
	{Name: "ttft", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "TTFT", Title: "TTFT", What: "time to first token, from the intended send time"},
	{Name: "tpot", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "TPOT", Title: "TPOT", What: "(e2e - ttft) / (output tokens - 1); averages away stalls"},
	{Name: "itl", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, PctBetter: BetterNone, Storage: StorageBins,
		Short: "ITL per token", Title: "ITL per token", What: "a chunk of k tokens counts its gap once and k-1 zero gaps"},
	{Name: "itl_chunk", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageBins,
		Short: "ITL per chunk", Title: "ITL per chunk", What: "gap between consecutive content chunks"},
	{Name: "itl_burst", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageBins,
		Short: "ITL per burst", Title: "ITL per burst",
		What: "gap between bursts (chunks within 1 ms of each other): the decode cadence per engine pass"},
	{Name: "e2e", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "E2E", Title: "End-to-end latency", What: "end-to-end, from the intended send time"},
	{Name: "queue", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "Queue", Title: "Queue wait", What: "waiting for a concurrency slot"},
	{Name: "max_gap", Overlay: true, Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "Max gap", Title: "Largest gap per request", What: "largest chunk gap of each request"},
	{Name: "normalized", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "E2E / token", Title: "Normalized latency", What: "normalized latency; hides stalls"},
	{Name: "tokens_per_chunk", Overlay: true, Unit: "tokens", Scale: scaleCount, Better: BetterNone, Storage: StorageBins,
		Short: "Tokens per chunk", Title: "Tokens per chunk", What: "tokens carried by each content chunk: the shape of delivery"},
	{Name: "tokens_per_burst", Unit: "tokens", Scale: scaleCount, Better: BetterNone, Storage: StorageBins,
		Short: "Tokens per burst", Title: "Tokens per burst",
		What: "tokens delivered by each burst (chunks within 1 ms of each other): 1 + accepted drafts under speculation"},
	{Name: "fluidity", Overlay: true, Unit: "index", Scale: scaleFluidity, Better: BetterHigher, Storage: StorageHistogram,
		Short: "Fluidity", Title: "Fluidity index", What: "share of a request's token deadlines met (Metron's fluidity index)"},
	{Name: "lag", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageSummaryOnly,
		Short: "Schedule lag", Title: "Client schedule lag", What: "actual minus intended send time: the client's own health"},
	{Name: "ttfat", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "TTFAT", Title: "Time to first answer token",
		What: "of requests that reasoned first: time to the first answer token (content or tool call), from the intended send time"},
	{Name: "itl_reasoning", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageSummaryOnly,
		Short: "ITL reasoning", Title: "ITL per token while reasoning",
		What: "of requests that reasoned first: per-token gaps of the reasoning phase"},
	{Name: "itl_answer", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageSummaryOnly,
		Short: "ITL answer", Title: "ITL per token of the answer",
		What: "of requests that reasoned first: per-token gaps of the answer after the reasoning"},
	// Agentic sessions: one value per completed session (sessions.go); Compare pairs sessions
	// by their first turn's id.
	{Name: "session_wall", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "Session wall", Title: "Session wall time",
		What: "per session: first turn's intended send to last turn's end"},
	{Name: "session_model", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterLower, Storage: StorageHistogram,
		Short: "Session model", Title: "Session time waiting on the model",
		What: "per session: the turns' latencies along its critical path"},
	{Name: "session_tool", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterNone, Storage: StorageSummaryOnly,
		Short: "Session tools", Title: "Session time running tools",
		What: "per session: the tool delays along its critical path (from the trace)"},
	{Name: "session_think", Unit: "ms", Scale: scaleMicrosToMs, Better: BetterNone, Storage: StorageSummaryOnly,
		Short: "Session think", Title: "Session think time",
		What: "per session: the users' think times along its critical path (from the trace)"},
}

// scalars are the per-run metrics, in report order.
var scalars = []Scalar{
	{Name: "throughput.requests_per_s", Unit: "req/s", Better: BetterHigher, Title: "Throughput",
		What:  "successful requests per second of the steady window",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.ok, w },
		value: func(s *Summary) float64 { return s.Throughput.RequestsPerS }},
	{Name: "throughput.input_tokens_per_s", Unit: "tok/s", Better: BetterHigher, Title: "Input throughput",
		What:  "input tokens of successful requests per second",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.okIn, w },
		value: func(s *Summary) float64 { return s.Throughput.InputTokensPerS }},
	{Name: "throughput.output_tokens_per_s", Unit: "tok/s", Better: BetterHigher, Title: "Output throughput",
		What:  "output tokens of successful requests per second",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.okOut, w },
		value: func(s *Summary) float64 { return s.Throughput.OutputTokensPerS }},
	{Name: "goodput.fraction", Unit: "fraction", Better: BetterHigher, Title: "Goodput",
		What:  "share of all requests, failed included, that met every SLO",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.met, a.all },
		value: func(s *Summary) float64 { return s.Goodput.Fraction }},
	{Name: "goodput.requests_per_s", Unit: "req/s", Better: BetterHigher, Title: "Goodput rate",
		What:  "requests per second that met every SLO",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.met, w },
		value: func(s *Summary) float64 { return s.Goodput.RequestsPerS }},
	{Name: "stalls.requests_fraction", Unit: "fraction", Better: BetterLower, Title: "Stalled requests",
		What:  "share of successful requests with at least one stall",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.stallReqs, a.ok },
		value: func(s *Summary) float64 { return s.Stalls.RequestFraction }},
	{Name: "stalls.per_request", Unit: "stalls", Better: BetterLower, Title: "Stalls per request",
		What:  "stalls per successful request",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.stalls, a.ok },
		value: func(s *Summary) float64 { return ratioOrNaN(float64(s.Stalls.Count), float64(s.Requests.Succeeded)) }},
	{Name: "stalls.time_fraction", Unit: "fraction", Better: BetterLower, Title: "Stalled time",
		What:  "share of decode time spent in stalls",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.stalledNs, a.decNs },
		value: func(s *Summary) float64 { return s.Stalls.StalledTimeFraction }},
	{Name: "fluidity.fraction_ge_0_9", Unit: "fraction", Better: BetterHigher, Title: "Fluid requests",
		What:  "share of requests with a fluidity index of at least 0.9",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.fluGE, a.fluN },
		value: func(s *Summary) float64 { return s.Fluidity.FractionAbove90 }},
	{Name: "failures.fraction", Unit: "fraction", Better: BetterLower, Title: "Failures",
		What:  "share of requests that failed",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.failed, a.all },
		value: func(s *Summary) float64 { return ratioOrNaN(float64(s.Requests.Failed), float64(s.Requests.Total)) }},
	// Quality (issue 17): in a paired comparison its interval is the paired bootstrap of
	// quality.go (finishPairedQuality), otherwise the two-level bootstrap.
	{Name: qualityMetric, Unit: "fraction", Better: BetterHigher, Title: "Quality",
		What:  "share of graded requests (those with expect checks) whose response passed every check",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.qPassed, a.qGraded },
		value: func(s *Summary) float64 {
			if s.Quality == nil {
				return math.NaN()
			}
			return ratioOrNaN(float64(s.Quality.Passed), float64(s.Quality.Graded))
		}},
	// Prefix cache (issue 34; prefixcache.go). Higher is better: for the same trace, tokens
	// found in the cache are prefill the server did not compute, so "prefix caching on vs off"
	// or "router A vs B" is judged by it. It describes the server's cache and routing, not
	// the workload, so only runs of the same trace compare meaningfully (as for every metric).
	{Name: PrefixCacheMetric, Unit: "fraction", Better: BetterHigher, Title: "Prefix-cache hit rate",
		What:  "cached prompt tokens over prompt tokens, of the succeeded requests that reported them",
		ratio: func(a *scalarAcc, w float64) (float64, float64) { return a.cached, a.cachePrompt },
		value: func(s *Summary) float64 {
			if s.PrefixCache == nil {
				return math.NaN()
			}
			return s.PrefixCache.HitRate
		}},
}

// metricAliases are short names accepted by ParseFailOn and CompareOptions.Metrics.
var metricAliases = map[string]string{
	"goodput":      "goodput.fraction",
	"throughput":   "throughput.output_tokens_per_s",
	"fluidity":     "fluidity.mean",
	"stalls":       "stalls.requests_fraction",
	"failures":     "failures.fraction",
	"quality":      qualityMetric,
	"prefix_cache": PrefixCacheMetric,
}

// DefaultCompareMetrics is the metric set Compare reports when CompareOptions.Metrics is empty.
var DefaultCompareMetrics = []string{
	"ttft.p50", "ttft.p95", "ttft.p99",
	"tpot.p50", "tpot.p95", "tpot.p99",
	"itl.p50", "itl.p95", "itl.p99",
	"itl_chunk.p50", "itl_chunk.p99",
	"itl_burst.p50", "itl_burst.p99",
	"e2e.p50", "e2e.p95", "e2e.p99",
	"max_gap.p99",
	"throughput.requests_per_s", "throughput.output_tokens_per_s",
	"goodput.fraction", "goodput.requests_per_s",
	"stalls.requests_fraction", "fluidity.mean", "fluidity.fraction_ge_0_9",
	"tokens_per_chunk.mean", "tokens_per_burst.mean", "failures.fraction",
}

// MetricInfo describes one metric of the registry.
type MetricInfo struct {
	Name    string // canonical name
	Unit    string
	Better  string // BetterLower, BetterHigher or BetterNone
	Storage Storage
	Title   string
	What    string
	// Family and Stat split a distribution metric ("ttft", "p95"); both are "" for a scalar.
	Family, Stat string
}

// Families returns the distribution families in report order.
func Families() []Family { return slices.Clone(families[:]) }

// LookupFamily returns the family called name.
func LookupFamily(name string) (Family, bool) {
	for _, f := range families {
		if f.Name == name {
			return f, true
		}
	}
	return Family{}, false
}

// Metrics lists every metric Compare can take, each family's statistics in Stats order and
// then the scalars.
func Metrics() []MetricInfo {
	var out []MetricInfo
	for i := range families {
		f := &families[i]
		if f.Storage == StorageSummaryOnly {
			continue
		}
		for _, st := range Stats {
			out = append(out, familyMetric(f, st))
		}
	}
	for i := range scalars {
		out = append(out, scalarMetric(&scalars[i]))
	}
	return out
}

func familyMetric(f *Family, stat string) MetricInfo {
	return MetricInfo{Name: f.Name + "." + stat, Unit: f.Unit, Better: f.statBetter(stat), Storage: f.Storage,
		Title: f.Short + " " + stat, What: f.What, Family: f.Name, Stat: stat}
}

func scalarMetric(s *Scalar) MetricInfo {
	return MetricInfo{Name: s.Name, Unit: s.Unit, Better: s.Better, Storage: StorageScalar, Title: s.Title, What: s.What}
}

func lookupScalar(name string) *Scalar {
	for i := range scalars {
		if scalars[i].Name == name {
			return &scalars[i]
		}
	}
	return nil
}

// LookupMetric resolves a metric name or alias ("ttft.p95", "goodput", "itl_chunk.p50") to its
// registry entry. The error lists the valid names.
func LookupMetric(name string) (MetricInfo, error) {
	n := strings.ToLower(strings.TrimSpace(name))
	if a, ok := metricAliases[n]; ok {
		n = a
	}
	if s := lookupScalar(n); s != nil {
		return scalarMetric(s), nil
	}
	fam, stat, ok := strings.Cut(n, ".")
	if f, known := LookupFamily(fam); known {
		if f.Storage == StorageSummaryOnly {
			return MetricInfo{}, fmt.Errorf("metric %q: %s (%s) is in the summary but not compared", name, fam, f.What)
		}
		if !ok {
			return MetricInfo{}, fmt.Errorf("metric %q: name a statistic, e.g. %s.p95 (one of %s)", name, fam, strings.Join(Stats, ", "))
		}
		if slices.Contains(Stats, stat) {
			return familyMetric(&f, stat), nil
		}
		return MetricInfo{}, fmt.Errorf("metric %q: unknown statistic %q; use one of %s", name, stat, strings.Join(Stats, ", "))
	}
	return MetricInfo{}, fmt.Errorf("unknown metric %q; valid: %s", name, strings.Join(MetricNames(), ", "))
}

// MetricNames lists the families with a placeholder statistic and every scalar metric, for
// help texts and errors.
func MetricNames() []string {
	var out []string
	for _, f := range families {
		if f.Storage != StorageSummaryOnly {
			out = append(out, f.Name+".{"+strings.Join(Stats, ",")+"}")
		}
	}
	for _, s := range scalars {
		out = append(out, s.Name)
	}
	sort.Strings(out)
	return out
}

// MetricValue reads a metric from a summary: a family's statistic from its Dist (the
// fluidity index from its histogram, when the summary keeps it), a scalar from its block.
// It is NaN when the summary holds no such value.
func MetricValue(sum *Summary, name string) (float64, error) {
	info, err := LookupMetric(name)
	if err != nil {
		return math.NaN(), err
	}
	if s := lookupScalar(info.Name); s != nil {
		return s.value(sum), nil
	}
	d, ok := summaryDist(sum, info.Family)
	if !ok || d.Count == 0 {
		return math.NaN(), nil
	}
	return distStat(d, info.Stat), nil
}

// summaryDist is the Dist of family fam in sum.
func summaryDist(sum *Summary, fam string) (Dist, bool) {
	l := &sum.Latency
	switch fam {
	case "ttft":
		return l.TTFT, true
	case "tpot":
		return l.TPOT, true
	case "itl":
		return l.ITL, true
	case "itl_chunk":
		return l.ITLChunk, true
	case "itl_burst":
		return l.ITLBurst, true
	case "e2e":
		return l.E2E, true
	case "queue":
		return l.Queue, true
	case "max_gap":
		return l.MaxGap, true
	case "normalized":
		return l.Normalized, true
	case "tokens_per_chunk":
		return sum.TokensPerChunk, true
	case "tokens_per_burst":
		return sum.TokensPerBurst, true
	case "lag":
		return sum.Client.LagMs, true
	}
	d, err := histDist(sum, fam)
	return d, err == nil && d.Count > 0
}

// LatencyDist returns the distribution of family name in l ("ttft", "itl_chunk", ...); ok is
// false for a family that Latency does not hold (tokens per chunk, fluidity, lag).
func LatencyDist(l Latency, name string) (d Dist, ok bool) {
	switch name {
	case "tokens_per_chunk", "tokens_per_burst", "fluidity", "lag":
		return Dist{}, false
	}
	return summaryDist(&Summary{Latency: l}, name)
}

// distStat is statistic stat of d.
func distStat(d Dist, stat string) float64 {
	switch stat {
	case "mean":
		return d.Mean
	case "p50":
		return d.P50
	case "p90":
		return d.P90
	case "p95":
		return d.P95
	case "p99":
		return d.P99
	case "p999":
		return d.P999
	}
	return d.Max
}

// quantileRank is the package's quantile rule (see the registry's doc comment): the 1-based
// rank of the sample at quantile q of n samples.
func quantileRank(q, n float64) float64 {
	r := math.Floor(q*n + 0.5)
	if r < 1 {
		r = 1
	}
	if r > n {
		r = n
	}
	return r
}

func ratioOrNaN(num, den float64) float64 {
	if den <= 0 {
		return math.NaN()
	}
	return num / den
}
