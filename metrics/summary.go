package metrics

// SummarySchema is the value of Summary.Schema; bump it only with a breaking change.
const SummarySchema = "llmbench.summary/v1"

// Summary is everything a report shows, serialized as summary.json (a stable contract that
// tools and CI read). Latencies are in milliseconds, rates per second.
type Summary struct {
	Schema     string     `json:"schema"`
	Run        RunInfo    `json:"run"`
	Requests   Requests   `json:"requests"`
	Throughput Throughput `json:"throughput"`
	Latency    Latency    `json:"latency_ms"`
	Stalls     Stalls     `json:"stalls"`
	Fluidity   Fluidity   `json:"fluidity"`
	Goodput    Goodput    `json:"goodput"`
	Client     Client     `json:"client"`
	// Reasoning is present when requests streamed or reported reasoning before the answer.
	Reasoning *Reasoning `json:"reasoning,omitempty"`
	// Sessions is present when requests belonged to multi-turn or agentic sessions: per-session
	// wall time and its split into model, tool and think time (sessions.go).
	Sessions *Sessions `json:"sessions,omitempty"`
	// PrefixCache is present when requests reported the prompt tokens the server found in
	// its prefix cache: the hit rate and TTFT by reuse (prefixcache.go).
	PrefixCache *PrefixCache `json:"prefix_cache,omitempty"`
	// TokensPerChunk is the distribution of tokens carried by each content chunk (1 for
	// token-by-token streaming; more under speculative decoding or server-side batching).
	TokensPerChunk Dist `json:"tokens_per_chunk"`
	// TokensPerBurst is the distribution of tokens delivered by each burst (chunks within
	// BurstWindow of each other): 1 for plain decoding, 1 + accepted draft tokens for
	// speculative decoding, on any wire framing.
	TokensPerBurst Dist `json:"tokens_per_burst"`
	// Excluded holds the warm-up and cool-down phases, shown separately and never mixed into
	// the headline numbers.
	Excluded map[string]*PhaseSummary `json:"excluded,omitempty"`
	// Workload characterizes the traffic that was sent (filled by the caller from the trace).
	Workload any `json:"workload,omitempty"`
	// Cost is present when prices were given.
	Cost *Cost `json:"cost,omitempty"`
	// TimeSeries holds per-second series for charts.
	TimeSeries *TimeSeries `json:"timeseries,omitempty"`
	// ByClass has the same blocks per request class.
	ByClass map[string]*ClassSummary `json:"by_class"`
	// Histograms are the mergeable encodings of the latency histograms (name -> base64), so
	// results of several runs or shards combine without loss.
	Histograms map[string]string `json:"histograms,omitempty"`
	// Warnings are plain-language problems with the run (client-limited, token count
	// mismatch, failures); a report shows them at the top.
	Warnings []string `json:"warnings"`
	// Inputs compares the prompt tokens the trace asked for with those the server counted,
	// when llmbench synthesized prompts (inputs.go, docs/inputs.md).
	Inputs *InputCheck `json:"inputs,omitempty"`
	// Quality is present when requests were graded against expect checks (issue 17).
	Quality *Quality `json:"quality,omitempty"`

	// Cluster (simulate --replicas): the per-replica load of a simulated cluster, as the
	// engine reported it; absent for a single engine and for runs over HTTP.
	Cluster *Cluster `json:"cluster,omitempty"`
	// ServerPrefixCache (run --scrape-metrics): the server's prefix-cache hit rate over the
	// measured window from its counters (prefixcache_server.go).
	ServerPrefixCache *ServerPrefixCache `json:"server_prefix_cache,omitempty"`

	// ByModel (issue 38; models.go) has the headline blocks per model or LoRA adapter the
	// requests named, keyed by name (DefaultModelKey for the run's --model); present only
	// when there was more than one.
	ByModel map[string]*ClassSummary `json:"by_model,omitempty"`
	// PrefixPriming (run --prime-prefixes, --prefix-hit-rate; issue 34): how the server's
	// prefix cache was flushed and primed before the measured window, and the requested hit
	// rate checked against the achieved one (prefixpriming.go).
	PrefixPriming *PrefixPriming `json:"prefix_priming,omitempty"`
	// Energy (issue 39; energy.go): with --scrape-metrics or --power-metrics, the GPUs' energy
	// over the measured window; its figures are null when the power is unknown.
	Energy *Energy `json:"energy,omitempty"`
	// Saturation (issue 39, run/sweep --stop-on-saturation): the online detector's first
	// saturated verdict (saturation.go); absent when the run was not watched or never
	// saturated.
	Saturation *SaturationVerdict `json:"saturation,omitempty"`
	// Speculative (issue 38) is present when the server reported its speculative acceptance:
	// its counters over the window (run --scrape-metrics) or per-response fields, beside the
	// client's tokens per decode burst (speculative.go).
	Speculative *Speculative `json:"speculative,omitempty"`
	// specClient is the client's decode bursts, kept for AttachServerSpeculative when no
	// response reported acceptance (not serialized).
	specClient ClientBursts
}

// RunInfo describes how the run was made.
type RunInfo struct {
	Command     string  `json:"command"`
	Trace       string  `json:"trace"`
	Endpoint    string  `json:"endpoint"`
	Model       string  `json:"model"`
	Backend     string  `json:"backend,omitempty"`
	API         string  `json:"api,omitempty"` // --api: completions, chat, responses, messages, embeddings ("" per request)
	Seed        int64   `json:"seed"`
	Start       string  `json:"start"` // RFC 3339
	DurationS   float64 `json:"duration_s"`
	Version     string  `json:"llmbench_version"`
	Mode        string  `json:"mode"` // "open-loop", "closed-loop", "simulated"
	Concurrency int     `json:"concurrency,omitempty"`
	// MaxConcurrency caps an open-loop run (0 = none).
	MaxConcurrency int     `json:"max_concurrency,omitempty"`
	RateScale      float64 `json:"rate_scale,omitempty"`
	Repeat         int     `json:"repeat,omitempty"`
	Interrupted    bool    `json:"interrupted"`
	Tokenizer      string  `json:"tokenizer,omitempty"`
	// PromptSizing says how prompts synthesized from input_tokens were sized on the target
	// when llmbench measured it (the server's /tokenize, or calibration; docs/inputs.md);
	// empty when the tokenizer named by Tokenizer fitted them.
	PromptSizing string            `json:"prompt_sizing,omitempty"`
	Engine       map[string]string `json:"engine,omitempty"` // reference-engine or server config seen
	Host         Host              `json:"host"`
	// Shard is set for one shard of a sharded run, Merged for the result of llmbench merge.
	Shard  *ShardInfo `json:"shard,omitempty"`
	Merged *MergeInfo `json:"merged,omitempty"`
	// PromptSalt is the salt of the run's synthesized prompts (ab's repeats, runner/abrepeats.go;
	// run --cold or --prompt-salt; 0: the plain prompts of Seed). Runs of different salts sent
	// different prompts, so their outputs are not compared.
	PromptSalt uint64 `json:"prompt_salt,omitempty"`
	// SaltNonce is, for a run of an ab, the invocation's nonce its salt came from (ab
	// --salt-nonce sends the same prompts again).
	SaltNonce uint64 `json:"salt_nonce,omitempty"`
	// Cold (run --cold, issue 45) says how the run kept the server's prefix cache from serving
	// prompts it had seen before: the flush it made, the salt of its prompts.
	Cold *ColdStart `json:"cold,omitempty"`
	// EngineSeed seeds the reference engine's unseeded sampling and fault draws (run on the
	// embedded engine, simulate); 0 when no reference engine served the run.
	EngineSeed uint64 `json:"engine_seed,omitempty"`
	// TraceFingerprint identifies the trace that was replayed, so that compare can refuse to
	// pair runs of different traces.
	TraceFingerprint *TraceFingerprint `json:"trace_fingerprint,omitempty"`
	// TimeScale is how many times faster than real time the reference engine ran (0: not
	// recorded, or an endpoint, which runs in real time).
	TimeScale float64 `json:"time_scale,omitempty"`
	// Config is every setting of the command that made the run: its flags with their values
	// (defaults included), less those that may carry secrets (keys, headers, endpoints, which
	// appear redacted in Endpoint).
	Config map[string]string `json:"config,omitempty"`

	// BatchSize is the trace requests sent per call with the embeddings API (--batch-size;
	// 0 or 1: one per call).
	BatchSize int `json:"batch_size,omitempty"`
}

// Host are the client machine's facts.
type Host struct {
	OS        string `json:"os"`
	Arch      string `json:"arch"`
	CPUs      int    `json:"cpus"`
	CPUModel  string `json:"cpu_model,omitempty"`
	GoVersion string `json:"go_version"`
	// GOMAXPROCS is the Go scheduler's processor count during the run (llmbench runs twice
	// the CPUs unless $GOMAXPROCS says otherwise).
	GOMAXPROCS int `json:"gomaxprocs,omitempty"`

	// Connections at scale (issue 18): FDLimit is the soft limit on open files during the
	// run (llmbench raises it to the hard limit at start; 0: unknown). Every HTTP/1.1 stream
	// in flight holds one, two with the embedded engine.
	FDLimit int `json:"fd_limit,omitempty"`
}

// Requests counts outcomes.
type Requests struct {
	Total     int            `json:"total"`
	Succeeded int            `json:"succeeded"`
	Failed    int            `json:"failed"`
	Failures  map[string]int `json:"failures"` // by FailureKind
	// Dropped counts requests never sent (FailDropped: the run was interrupted or a cap was
	// reached first). They are in Total but not in Failed or Failures, add no tokens and do
	// not stretch the throughput window: Succeeded + Failed + Dropped = Total.
	Dropped    int            `json:"dropped,omitempty"`
	FailStatus map[string]int `json:"failures_by_status"` // by HTTP status code

	// Cancelled counts requests the client cancelled on purpose (KindCancelled: the trace's
	// cancel_after_ms, or a stop of the run's in-flight requests). They are in Total and, with
	// the tokens they received, in OutputTokens, but not in Failed, Failures, the latency
	// distributions or goodput's denominator: Succeeded + Failed + Dropped + Cancelled = Total.
	Cancelled int `json:"cancelled,omitempty"`

	// InputTokens are the prompt tokens of the succeeded requests (a failed request's prompt
	// is not throughput), each counted per its InputSource; OutputTokens the output tokens.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// InputSource counts the succeeded requests by where their prompt count came from:
	// server usage, client tokenizer or trace (Record.InputSource; "unknown" in old records).
	InputSource map[string]int `json:"input_source,omitempty"`
	// TokenSource counts requests by where their output token count came from.
	TokenSource map[string]int `json:"token_source"`
	// TokenMismatch is the fraction of requests whose client count differs from the server's
	// reported usage (only over requests where both exist).
	TokenMismatch float64 `json:"token_mismatch_fraction"`
	// TokenCompared is how many requests had both counts (TokenMismatch's denominator).
	TokenCompared int `json:"token_compared"`
	// TokenMismatchTokens is the size of the difference: the sum over compared requests of
	// |client count − server count|; TokenComparedTokens the server's output tokens of those
	// requests, its scale. Absent in summaries written before they existed.
	TokenMismatchTokens int64 `json:"token_mismatch_tokens,omitempty"`
	TokenComparedTokens int64 `json:"token_compared_tokens,omitempty"`
	// TokenAttribution counts requests by how their output tokens were split among chunks
	// (per-chunk usage, tokenizer, even, chunks); TokenSource says where the totals came from.
	TokenAttribution map[string]int `json:"token_attribution,omitempty"`
	// UsageRejected counts requests whose server usage was not plausible and was not used
	// for counting (Record.UsageRejected says why).
	UsageRejected int `json:"usage_rejected,omitempty"`
	// FailureMessages lists, per failure kind, the most common messages of the failed
	// requests (at most FailMessagesShown, each cut to FailMessageLen runes).
	FailureMessages map[string][]MessageCount `json:"failure_messages,omitempty"`
}

// Throughput over the measured (steady-state) window.
type Throughput struct {
	RequestsPerS     float64 `json:"requests_per_s"`
	InputTokensPerS  float64 `json:"input_tokens_per_s"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	WindowS          float64 `json:"window_s"`
	// WindowStartS / WindowEndS bound the steady window in seconds from the run epoch (first
	// intended send to last completion), so that shards sharing an epoch merge exactly.
	WindowStartS float64 `json:"window_start_s"`
	WindowEndS   float64 `json:"window_end_s"`
}

// Dist is a distribution summary.
type Dist struct {
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P95   float64 `json:"p95"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	Max   float64 `json:"max"`
	Min   float64 `json:"min"`
	Count int64   `json:"count"`
	// CDF is a compact cumulative distribution for charts: value at each listed quantile.
	CDF []CDFPoint `json:"cdf,omitempty"`
}

// CDFPoint is one point of a CDF: the fraction of samples at or below Value.
type CDFPoint struct {
	Q     float64 `json:"q"`
	Value float64 `json:"v"`
}

// Latency holds every latency distribution, in ms.
type Latency struct {
	TTFT Dist `json:"ttft"`
	// TPOT is vLLM's (e2e - ttft) / (output_tokens - 1) per request. It averages away stalls.
	TPOT Dist `json:"tpot"`
	// ITL is per token: a chunk of k tokens contributes k gaps (the chunk gap, then k-1 zeros).
	ITL Dist `json:"itl"`
	// ITLChunk is per chunk: the gap between consecutive content chunks.
	ITLChunk Dist `json:"itl_chunk"`
	// ITLBurst is per burst: the gap between consecutive bursts, a burst being the chunks that
	// arrived within BurstWindow of each other (one engine pass, however the wire framed it).
	ITLBurst Dist `json:"itl_burst"`
	E2E      Dist `json:"e2e"`
	// Queue is time spent waiting for a concurrency slot (Sent - Dispatched).
	Queue Dist `json:"queue"`
	// MaxGap is the largest chunk gap of each request.
	MaxGap Dist `json:"max_gap"`
	// Normalized is e2e / output tokens per request; it hides stalls.
	Normalized Dist `json:"normalized"`
}

// Stalls are gaps between bursts above a threshold (a gap inside a burst is never one).
type Stalls struct {
	ThresholdMs   float64 `json:"threshold_ms"`
	ThresholdRule string  `json:"threshold_rule"` // e.g. "5x median burst ITL (7.3 ms)" or "absolute"
	// Source is where the threshold came from: StallGiven, StallSLOMaxGap, StallSLOTBT,
	// StallBurstCadence or StallFloor (deadlines.go).
	Source string `json:"threshold_source"`
	// BurstCadenceMs is the median per-burst ITL a StallBurstCadence threshold (or the floor
	// that replaced it) was derived from; in a comparison, the base side's.
	BurstCadenceMs float64 `json:"burst_cadence_ms,omitempty"`
	// BurstWindowMs is BurstWindow: chunks closer than this are one burst.
	BurstWindowMs     float64 `json:"burst_window_ms"`
	Count             int64   `json:"count"`
	RequestsWithStall int64   `json:"requests_with_stall"`
	RequestFraction   float64 `json:"requests_with_stall_fraction"`
	StalledTimeMs     float64 `json:"stalled_time_ms"`
	// StalledTimeFraction is stalled time over total decode time (first token to end).
	StalledTimeFraction float64 `json:"stalled_time_fraction"`
	// DecodeTimeMs is the total decode time (StalledTimeFraction's denominator).
	DecodeTimeMs float64 `json:"decode_time_ms"`
}

// Fluidity is Metron's fluidity-index distribution over requests.
type Fluidity struct {
	TTFTDeadlineMs float64 `json:"ttft_deadline_ms"`
	TBTDeadlineMs  float64 `json:"tbt_deadline_ms"`
	// DeadlineRule says where the deadlines came from: "given", "from the SLO", or derived
	// from the run (DefaultFluidityPace times its median TTFT and TPOT).
	DeadlineRule string  `json:"deadline_rule,omitempty"`
	IndexMean    float64 `json:"index_mean"`
	IndexP1      float64 `json:"index_p1"`
	IndexP5      float64 `json:"index_p5"`
	IndexP50     float64 `json:"index_p50"`
	// FractionAbove90 is the fraction of requests with index >= 0.9.
	FractionAbove90 float64 `json:"fraction_ge_0_9"`
}

// Goodput is completed requests per second meeting every SLO (DistServe).
type Goodput struct {
	// SLO maps metric to limit in ms: "ttft", "tpot", "itl_p99", "max_gap", "e2e".
	SLO          map[string]float64            `json:"slo"`
	ClassSLO     map[string]map[string]float64 `json:"class_slo,omitempty"`
	RequestsPerS float64                       `json:"requests_per_s"`
	Fraction     float64                       `json:"fraction"` // of all requests, failed included, cancelled not
	Met          int                           `json:"met"`
}

// Client is the harness's own health.
type Client struct {
	LagMs       Dist    `json:"schedule_lag_ms"`
	CPUFraction float64 `json:"cpu_fraction"` // client process CPU / (wall * cores)
	// CPUStealFraction is the share of the client machine's CPU time its hypervisor gave to
	// other machines during the run (0: none, or not a virtual machine, or not measured).
	CPUStealFraction float64 `json:"cpu_steal_fraction,omitempty"`
	// Limited is true when the client may have been the bottleneck; Reason says why.
	Limited bool   `json:"limited"`
	Reason  string `json:"reason,omitempty"`
}

// PhaseSummary summarizes an excluded phase (warm-up, cool-down).
type PhaseSummary struct {
	Requests Requests `json:"requests"`
	Latency  Latency  `json:"latency_ms"`
}

// ClassSummary is the per-class breakdown.
type ClassSummary struct {
	Requests   Requests   `json:"requests"`
	Throughput Throughput `json:"throughput"`
	Latency    Latency    `json:"latency_ms"`
	Stalls     Stalls     `json:"stalls"`
	Fluidity   Fluidity   `json:"fluidity"`
	Goodput    Goodput    `json:"goodput"`
}

// Cost per request and per million tokens.
type Cost struct {
	Basis            string  `json:"basis"` // "token_price" or "gpu_hour"
	Total            float64 `json:"total"`
	PerRequest       float64 `json:"per_request"`
	PerMillionInput  float64 `json:"per_million_input_tokens,omitempty"`
	PerMillionOutput float64 `json:"per_million_output_tokens"`
	PerMillionTokens float64 `json:"per_million_tokens"`
	PerGoodRequest   float64 `json:"per_good_request,omitempty"`
	Currency         string  `json:"currency"`
}

// TimeSeries holds per-second buckets from the run epoch.
type TimeSeries struct {
	BucketS        float64   `json:"bucket_s"`
	T              []float64 `json:"t"` // bucket start, seconds
	InFlight       []int     `json:"in_flight"`
	Queued         []int     `json:"queued"`
	Sent           []int     `json:"sent"`
	Completed      []int     `json:"completed"`
	Failed         []int     `json:"failed"`
	OutputTokPerS  []float64 `json:"output_tokens_per_s"`
	TTFTP50        Series    `json:"ttft_p50_ms"` // NaN (null in JSON): no first token in the bucket
	TTFTP99        Series    `json:"ttft_p99_ms"`
	ITLP50         Series    `json:"itl_p50_ms"` // NaN (null in JSON): no ITL sample in the bucket
	ITLP99         Series    `json:"itl_p99_ms"`
	WarmupEndS     float64   `json:"warmup_end_s"`
	CooldownStartS float64   `json:"cooldown_start_s"`
	// Quality (issue 17): graded requests that ended in the bucket, and those that passed;
	// absent when nothing was graded.
	Graded []int `json:"graded,omitempty"`
	Passed []int `json:"passed,omitempty"`
	// PassRate is Passed / Graded per bucket (NaN, null in JSON, for a bucket with none).
	PassRate Series `json:"pass_rate,omitempty"`
}
