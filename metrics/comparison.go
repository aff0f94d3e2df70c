package metrics

// ComparisonSchema is the value of Comparison.Schema (what `compare --format json` prints).
const ComparisonSchema = "llmbench.comparison/v1"

// Verdicts of one metric in a Comparison.
const (
	// VerdictRegressed: a --fail-on rule names this metric and the whole confidence interval
	// of the change lies beyond the rule's limit. Only this verdict fails a CI gate.
	VerdictRegressed = "regressed"
	// VerdictWorse: the interval excludes zero on the bad side, but no rule was broken.
	VerdictWorse = "worse"
	// VerdictBetter: the interval excludes zero on the good side.
	VerdictBetter = "better"
	// VerdictChanged: the interval excludes zero on a descriptive metric (BetterNone), whose
	// change is neither better nor worse (tokens per chunk, per-token ITL percentiles).
	VerdictChanged = "changed"
	// VerdictUnchanged: the interval contains zero; the data cannot tell the sides apart.
	VerdictUnchanged = "unchanged"
	// VerdictNA: the metric is undefined on a side (for example no request had two tokens).
	VerdictNA = "n/a"
	// VerdictNotAssessable: the data cannot say how noisy the metric is: a per-run scalar
	// (throughput) with one run per side, or an interval of zero width. Never a verdict.
	VerdictNotAssessable = "not assessable"
)

// How a MetricDelta's interval was computed (MetricDelta.Method).
const (
	// MethodBootstrap: two-level bootstrap (runs, then time blocks of request ids), t interval
	// on its standard error.
	MethodBootstrap = "two-level bootstrap"
	// MethodRuns: Welch t interval over the per-run values (per-run scalars).
	MethodRuns = "Welch t over runs"
	// MethodNewcombe: Newcombe hybrid score interval on effective sample sizes (proportions).
	MethodNewcombe = "Newcombe score"
	// MethodPairedBootstrap: percentile bootstrap of the per-request differences, paired by
	// id (the quality pass rate).
	MethodPairedBootstrap = "paired bootstrap"
)

// MDEPower is the power at which MetricDelta.MDE is stated.
const MDEPower = 0.8

// Comparison is the result of Compare: per-metric deltas between a base and a candidate
// result set with bootstrap confidence intervals, the regression verdict, the output
// equivalence check and overlaid CDF data. It is JSON-serializable as is.
type Comparison struct {
	Schema string `json:"schema"`
	// Method says in words how the intervals were computed (paired or not, resamples, level).
	Method string `json:"method"`
	// Multiplicity names the correction applied to the better/worse labels of the metrics
	// not named in --fail-on ("holm": Holm's step-down, family-wise error at 1 − Confidence).
	Multiplicity string `json:"multiplicity"`
	// BlockLength is the number of consecutive requests (in arrival order) per bootstrap block.
	BlockLength int `json:"block_length"`
	// Paired is true when requests were matched by id and resampled jointly.
	Paired bool `json:"paired"`
	// MatchedIDs is the number of request ids present on both sides (the paired units).
	MatchedIDs int            `json:"matched_ids"`
	Resamples  int            `json:"resamples"`
	Confidence float64        `json:"confidence"` // e.g. 0.95
	Seed       uint64         `json:"seed"`
	Base       ComparisonSide `json:"base"`
	Cand       ComparisonSide `json:"cand"`
	// Metrics holds one row per compared metric, in a stable order.
	Metrics []MetricDelta `json:"metrics"`
	// Thresholds are the --fail-on rules that were applied.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Regressed is true when at least one metric has VerdictRegressed.
	Regressed bool `json:"regressed"`
	// Regressions names the regressed metrics.
	Regressions []string `json:"regressions"`
	// Equivalence compares output hashes per request id (meaningful at temperature 0).
	Equivalence *Equivalence `json:"output_equivalence,omitempty"`
	// CDFs holds both sides' CDFs per distribution ("ttft", "tpot", "itl", "itl_chunk", "e2e",
	// "max_gap", "tokens_per_chunk", "fluidity") for overlaid charts.
	CDFs map[string]CDFPair `json:"cdfs"`
	// ConfigDiff lists every configuration difference between the sides that the run facts
	// show (filled by the caller that knows the results directories; see RunConfig).
	ConfigDiff []ConfigDifference `json:"config_diff"`
	// Warnings are plain-language caveats (unpaired fallback, unmatched ids, client-limited
	// runs, token mismatches on a side).
	Warnings []string `json:"warnings"`
	// Quality is the paired quality comparison, present when both sides graded requests of
	// the same ids (issue 17).
	Quality *QualityComparison `json:"quality,omitempty"`
	// Judge is the pairwise LLM judge's verdict on the two sides (ab --judge-endpoint).
	Judge *JudgeSummary `json:"judge,omitempty"`

	// ByModel (issue 38) lists each model's headline numbers on both sides when a side sent
	// more than one model (from the sides' by_model blocks; point values, no intervals).
	ByModel []ModelDelta `json:"by_model,omitempty"`
	// Energy (issue 39; energy_compare.go): the sides' energy per request and tokens per
	// joule, from their summaries, when a run of either side measured it.
	Energy *EnergyComparison `json:"energy,omitempty"`
	// CacheConfound (issue 45; cacheconfound.go) is present when the sides' servers found
	// more of the prompts in their prefix caches than the trace designs, by amounts that
	// differ beyond CacheConfoundLimit: the metrics it names have VerdictWithheld, and its
	// Statement is also the first warning.
	CacheConfound *CacheConfound `json:"cache_confound,omitempty"`
}

// ComparisonSide describes one side (base or candidate) of a Comparison.
type ComparisonSide struct {
	Label string `json:"label"`
	// Runs is how many result sets were pooled on this side.
	Runs int `json:"runs"`
	// Requests counts the steady-state records used (after matching, when paired).
	Requests  int `json:"requests"`
	Succeeded int `json:"succeeded"`
	// Summary is the pooled summary of this side, computed with the comparison's shared
	// options (same SLOs, stall threshold and fluidity deadlines on both sides); its
	// Histograms and TimeSeries are left out.
	Summary *Summary `json:"summary"`
}

// MetricDelta is one metric's comparison. Delta = Cand - Base in the metric's unit; DeltaPct
// and the *Pct interval are percent of Base (0 when Base is 0). The interval [CILow, CIHigh]
// is the bootstrap confidence interval of Delta.
type MetricDelta struct {
	Name   string `json:"name"`   // e.g. "ttft.p95"
	Unit   string `json:"unit"`   // "ms", "req/s", "tok/s", "fraction", "tokens", "index"
	Better string `json:"better"` // "lower", "higher" or "descriptive" (BetterNone)

	Base      float64 `json:"base"`
	Cand      float64 `json:"cand"`
	Delta     float64 `json:"delta"`
	DeltaPct  float64 `json:"delta_pct"`
	CILow     float64 `json:"ci_low"`
	CIHigh    float64 `json:"ci_high"`
	CILowPct  float64 `json:"ci_low_pct"`
	CIHighPct float64 `json:"ci_high_pct"`

	Verdict string `json:"verdict"` // one of the Verdict* constants
	// Threshold is the --fail-on rule applied to this metric, as written ("" when none).
	Threshold string `json:"threshold,omitempty"`

	// Method is how the interval was computed (one of the Method* constants); SE is the
	// standard error of Delta and DF the degrees of freedom of its t quantile (0 for
	// Newcombe). PValue is the two-sided p-value of "no change"; PAdjusted is it after the
	// multiplicity correction for metrics not named in --fail-on (Comparison.Multiplicity),
	// which decides their better/worse label. Note says why a metric has no verdict.
	Method    string  `json:"method,omitempty"`
	SE        float64 `json:"se,omitempty"`
	DF        float64 `json:"df,omitempty"`
	PValue    float64 `json:"p_value"`
	PAdjusted float64 `json:"p_adjusted,omitempty"`
	Note      string  `json:"note,omitempty"`
	// MDE is the minimum detectable effect: the smallest change this design detects with
	// MDEPower at the comparison's confidence, from the observed noise (MDEPct in percent of
	// base). 0 when the metric is not assessable.
	MDE    float64 `json:"mde"`
	MDEPct float64 `json:"mde_pct"`

	// BaseSpread and CandSpread are the run-to-run spread of this metric when a side pooled
	// two or more runs.
	BaseSpread *Spread `json:"base_spread,omitempty"`
	CandSpread *Spread `json:"cand_spread,omitempty"`
}

// Spread is the run-to-run variation of one metric over the runs pooled on one side.
type Spread struct {
	Runs   int       `json:"runs"`
	Values []float64 `json:"values"` // per run, in the order given
	Min    float64   `json:"min"`
	Max    float64   `json:"max"`
	Mean   float64   `json:"mean"`
	StdDev float64   `json:"stddev"` // sample standard deviation (n-1)
	// CVPct is StdDev / Mean in percent (0 when Mean is 0).
	CVPct float64 `json:"cv_pct"`
}

// CDFPair is one distribution's CDF on both sides, for overlaid charts.
type CDFPair struct {
	Unit string     `json:"unit"`
	Base []CDFPoint `json:"base"`
	Cand []CDFPoint `json:"cand"`
}

// Equivalence is the per-request output check: for every request id that carries an output
// hash on both sides, all hashes seen for that id (every run, both sides) must be equal.
type Equivalence struct {
	// Compared counts ids with a hash on both sides.
	Compared int `json:"compared"`
	// Mismatched counts compared ids whose hashes differ.
	Mismatched int `json:"mismatched"`
	// MismatchIDs lists up to 20 mismatched ids, sorted.
	MismatchIDs []string `json:"mismatch_ids,omitempty"`
	// Unchecked counts ids present on both sides where a side had no hash (failed requests,
	// or a backend that gave no text).
	Unchecked int `json:"unchecked"`
}

// Threshold is one --fail-on rule: the metric regresses when the confidence interval of its
// change lies entirely beyond Value in the direction of Op. With Op ">" that means
// CILow > Value (or CILowPct > Value when Relative); with Op "<", CIHigh < Value.
type Threshold struct {
	Metric string `json:"metric"` // canonical name, e.g. "ttft.p95"
	Op     string `json:"op"`     // ">" or "<"
	// Value is the limit on the change: percent of base when Relative, else in the metric's
	// unit (durations are converted to ms).
	Value    float64 `json:"value"`
	Relative bool    `json:"relative"`
	// Unit is what Value is in: "%" when Relative, else the metric's unit ("ms", "fraction",
	// "req/s", ...); "" in a Threshold built by hand (read as the metric's unit).
	Unit string `json:"unit,omitempty"`
	// Text is the rule as written.
	Text string `json:"text"`
}
