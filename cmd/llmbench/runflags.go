package main

import (
	"strconv"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// targetFlags select and configure the endpoint under test.
type targetFlags struct {
	endpoint     string
	api          string
	batchSize    int
	backend      string
	noStream     bool
	apiKeyEnv    string
	headers      []string
	caCert       string
	insecure     bool
	tConnect     time.Duration
	tHeaders     time.Duration
	tFirstToken  time.Duration
	tIdle        time.Duration
	tTotal       time.Duration
	maxLine      int
	tokenizer    string
	promptSizing string
	scrapeMetric bool
	// Connections at scale (issue 18).
	sourceAddrs string
	http2       bool
	// Agentic sessions.
	sessionHeader string
}

func addTargetFlags(fs *pflag.FlagSet) *targetFlags {
	f := &targetFlags{}
	fs.StringVar(&f.endpoint, "endpoint", "", "base URL of an OpenAI-compatible server (default: the embedded reference engine on a loopback port)")
	fs.StringVar(&f.api, "api", "", `the API to call: "completions", "chat", "responses" (OpenAI Responses), "messages" (Anthropic Messages: the key goes in x-api-key) or "embeddings" (never streamed; see --batch-size) (default: chat for requests with messages, completions otherwise)`)
	fs.IntVar(&f.batchSize, "batch-size", 1, "with --api embeddings: send N consecutive trace requests as one call (its input array); throughput and latency are then per batch")
	fs.StringVar(&f.backend, "backend", "vllm", "server kind, selects which extensions are sent: vllm, sglang, tgi, llamacpp, ollama, openai")
	fs.BoolVar(&f.noStream, "no-stream", false, "send non-streaming requests (no TTFT/ITL, only end-to-end latency)")
	fs.StringVar(&f.apiKeyEnv, "api-key-env", "", "name of the environment variable holding the API key (sent as a bearer token, or as x-api-key with --api messages; never written to results)")
	fs.StringArrayVar(&f.headers, "header", nil, "extra request header K:V (repeatable)")
	fs.StringVar(&f.caCert, "ca-cert", "", "PEM file of a CA to trust for HTTPS endpoints")
	fs.BoolVar(&f.insecure, "insecure", false, "skip TLS certificate verification")
	fs.DurationVar(&f.tConnect, "timeout-connect", 30*time.Second, "fail a request not connected after this long: the dial and TLS handshake, or a pooled connection (timeout_connect; 0 = none)")
	fs.DurationVar(&f.tHeaders, "timeout-headers", 0, "fail a streamed request whose response headers have not come this long after it connected: the server held it, queued for a slot or stalled (timeout_headers; 0 = bounded by --timeout-first-token, which then also reports timeout_headers; not with --no-stream, whose headers come with the answer)")
	fs.DurationVar(&f.tFirstToken, "timeout-first-token", 5*time.Minute, "fail a request with no generated text after this long from sending (timeout_first_token; role-only chunks do not count; 0 = none)")
	fs.DurationVar(&f.tIdle, "timeout-idle", 60*time.Second, "fail a request whose stream brings no generated text for this long (timeout_idle; role-only chunks and keep-alives do not count; 0 = none)")
	fs.DurationVar(&f.tTotal, "timeout-total", 30*time.Minute, "fail a request that takes longer than this in all (timeout_total; 0 = none)")
	fs.IntVar(&f.maxLine, "max-line-bytes", usecase.DefaultMaxLineBytes, "fail a streamed response with a line or event longer than this many bytes (malformed)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", `token counter: "reference", "approx", or a path to a Hugging Face tokenizer.json (default: reference on the embedded engine, approx elsewhere)`)
	fs.StringVar(&f.promptSizing, "prompt-sizing", usecase.SizingAuto, `how prompts synthesized from input_tokens are made that many tokens on the target: "server" (word costs from its /tokenize: vLLM, SGLang, llama.cpp), "calibrate" (probe requests' usage.prompt_tokens), "tokenizer" (fit with --tokenizer), or "auto": tokenizer on the embedded engine or with a tokenizer.json, else server, else calibrate (docs/inputs.md)`)
	fs.StringVar(&f.sourceAddrs, "source-addrs", "", "dial new connections from these local addresses in turn, so that tens of thousands of connections to one host do not run out of ephemeral ports: a comma-separated list of IPs and ranges, e.g. 127.0.0.2-127.0.0.9 on loopback")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2: h2c with prior knowledge to http:// endpoints (the embedded engine and serve accept it), only ALPN h2 to https:// ones; streams then share connections")
	fs.BoolVar(&f.scrapeMetric, "scrape-metrics", false, "poll the endpoint's Prometheus /metrics during the run (running/waiting requests, KV-cache usage, preemptions, and GPU power under DCGM names: docs/energy.md) for the report")
	fs.StringVar(&f.sessionHeader, "session-header", "x-session-id", `header that carries each session turn's affinity key (the trace's "affinity", else its session) so a router can pin sessions; "" sends none`)
	return f
}

// loadFlags shape the traffic.
type loadFlags struct {
	concurrency    int
	maxConcurrency int
	rateScale      float64
	timeScale      float64
	duration       time.Duration
	maxRequests    int
	warmup         time.Duration
	cooldown       time.Duration
	repeat         int
	seed           int64
	grace          time.Duration
	blockTokens    int
}

func addLoadFlags(fs *pflag.FlagSet) *loadFlags {
	f := &loadFlags{}
	fs.IntVar(&f.concurrency, "concurrency", 0, "closed loop: keep N requests in flight, ignoring trace arrival times (labelled closed-loop in every result)")
	fs.IntVar(&f.maxConcurrency, "max-concurrency", 0, "cap an open-loop run at N in flight; waiting for a slot is reported as queue time and counted in TTFT/E2E")
	fs.Float64Var(&f.rateScale, "rate-scale", 1, "multiply the trace's arrival rate by X (offsets divided by X)")
	fs.Float64Var(&f.timeScale, "time-scale", 1, "embedded engine only: run engine and trace X times faster than real time and report times scaled back (quick checks; client overhead is magnified X times)")
	fs.DurationVar(&f.duration, "duration", 0, "stop sending after this long (0 = whole trace)")
	fs.IntVar(&f.maxRequests, "max-requests", 0, "send at most N requests (0 = all)")
	fs.DurationVar(&f.warmup, "warmup", 0, "requests intended in the first D are warm-up: excluded from the headline numbers and shown separately")
	fs.DurationVar(&f.cooldown, "cooldown", 0, "requests intended in the last D are cool-down: excluded and shown separately")
	fs.IntVar(&f.repeat, "repeat", 1, "replay the trace N times back to back")
	fs.Int64Var(&f.seed, "seed", 1, "seed for prompt synthesis and sampling")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "on Ctrl-C, wait this long for in-flight requests before canceling them")
	fs.IntVar(&f.blockTokens, "prefix-block-tokens", 512, "tokens per hash_ids block when synthesizing shared-prefix prompts")
	return f
}

// metricFlags set SLOs, stall rules and prices.
type metricFlags struct {
	fs        *pflag.FlagSet
	inputTol  float64
	slo       string
	classSLO  []string
	stall     string
	priceIn   float64
	priceOut  float64
	gpuHour   float64
	gpus      int
	currency  string
	lagLimit  time.Duration
	fluidTTFT time.Duration
	fluidTBT  time.Duration
}

func addMetricFlags(fs *pflag.FlagSet) *metricFlags {
	f := &metricFlags{fs: fs}
	fs.StringVar(&f.slo, "slo", "", "SLOs for goodput, e.g. ttft=500ms,tpot=50ms,max_gap=1s,e2e=20s,itl_p99=100ms (bare numbers are ms)")
	fs.StringArrayVar(&f.classSLO, "class-slo", nil, "per-class SLOs CLASS:ttft=…,tpot=… (repeatable; overrides --slo for that class)")
	fs.StringVar(&f.stall, "stall-threshold", "5x", "a gap between bursts (chunks over 1ms apart) above this is a stall: a duration (e.g. 250ms), or a multiple (e.g. 5x), at least 20ms, of the --slo tpot (else itl_p99) when set, else of the median ITL per burst (in ab and compare: arm A's); an --slo max_gap is the threshold itself")
	fs.Float64Var(&f.priceIn, "price-input", 0, "price per million input tokens (cost block; a token-priced API: not with --gpu-hour-cost)")
	fs.Float64Var(&f.priceOut, "price-output", 0, "price per million output tokens (cost block; not with --gpu-hour-cost)")
	fs.Float64Var(&f.gpuHour, "gpu-hour-cost", 0, "price of one GPU-hour (cost block for a server you run, with --gpus; not with token prices)")
	fs.IntVar(&f.gpus, "gpus", 1, "GPUs serving the endpoint, for --gpu-hour-cost")
	fs.StringVar(&f.currency, "currency", "USD", "currency label for the cost block (with a price)")
	fs.DurationVar(&f.lagLimit, "lag-limit", 0, "flag the client as limited when schedule lag P99 exceeds this (0 = metrics default)")
	fs.DurationVar(&f.fluidTTFT, "fluidity-ttft", 0, "fluidity-index TTFT deadline (0 = derived; see docs/metrics.md)")
	fs.DurationVar(&f.fluidTBT, "fluidity-tbt", 0, "fluidity-index per-token deadline (0 = derived; see docs/metrics.md)")
	fs.Float64Var(&f.inputTol, "input-tolerance", usecase.DefaultInputTolerance, "how far, as a fraction of the total, the server's usage.prompt_tokens of the synthesized prompts may differ from the trace's input_tokens: beyond it the summary flags the inputs (run, report, compare) and run, ab and sweep exit 3 (docs/inputs.md)")
	return f
}

func (f *metricFlags) changed(name string) bool {
	fl := f.fs.Lookup(name)
	return fl != nil && fl.Changed
}

// outputFlags choose where results go and how the report is built.
type outputFlags struct {
	out        string
	echartsJS  string
	noProgress bool
}

func addOutputFlags(fs *pflag.FlagSet) *outputFlags {
	f := &outputFlags{}
	fs.StringVarP(&f.out, "out", "o", "", "results directory (default results/<timestamp>)")
	fs.StringVar(&f.echartsJS, "echarts-js", "", "local echarts.min.js to inline into report.html (default $LLMBENCH_ECHARTS_JS; otherwise the report loads it by URL)")
	fs.BoolVar(&f.noProgress, "no-progress", false, "do not show the progress display")
	return f
}

// traceFlags name the trace a command replays.
type traceFlags struct {
	path    string
	lenient bool
	maxSpan time.Duration
	sha256  string         // --trace-sha256: the file must have this digest
	fs      *pflag.FlagSet // to read --rate-scale and --time-scale, which shorten a replay
}

func addTraceFlags(fs *pflag.FlagSet) *traceFlags {
	f := &traceFlags{fs: fs}
	fs.StringVar(&f.path, "trace", "", "trace file (JSONL, see traces/FORMAT.md; .msgpack for the msgpack encoding)")
	fs.BoolVar(&f.lenient, "lenient", false, "accept unknown fields in trace lines")
	fs.DurationVar(&f.maxSpan, "max-span", defaultMaxSpan, "refuse a trace whose replay would span longer than this (last arrival, or a session's start plus its think times)")
	fs.StringVar(&f.sha256, "trace-sha256", "", "refuse the trace file unless its SHA-256 is this (hex): a trace shipped to another machine is checked before anything is sent")
	return f
}

// defaultMaxSpan is the longest replay run, ab, sweep and simulate accept without --max-span.
const defaultMaxSpan = usecase.DefaultMaxSpan

// flagFloat is the value of a float flag of the command, 1 when it has none or it is not > 0.
func (f *traceFlags) flagFloat(name string) float64 {
	if f.fs == nil {
		return 1
	}
	fl := f.fs.Lookup(name)
	if fl == nil {
		return 1
	}
	v, err := strconv.ParseFloat(fl.Value.String(), 64)
	if err != nil || !(v > 0) {
		return 1
	}
	return v
}
