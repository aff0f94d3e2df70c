package main

import (
	"fmt"
	"io"
	"math"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/internal/redact"
	"github.com/llmbench/llmbench/internal/safetext"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/reports"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
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
	fs.DurationVar(&f.tConnect, "timeout-connect", 30*time.Second, "fail a request not connected, or (streaming) with no response headers, after this long (timeout_connect; 0 = none; with --no-stream the headers come with the answer and --timeout-first-token bounds them)")
	fs.DurationVar(&f.tFirstToken, "timeout-first-token", 5*time.Minute, "fail a request with no generated text after this long from sending (timeout_first_token; role-only chunks do not count; 0 = none)")
	fs.DurationVar(&f.tIdle, "timeout-idle", 60*time.Second, "fail a request whose stream brings no generated text for this long (timeout_idle; role-only chunks and keep-alives do not count; 0 = none)")
	fs.DurationVar(&f.tTotal, "timeout-total", 30*time.Minute, "fail a request that takes longer than this in all (timeout_total; 0 = none)")
	fs.IntVar(&f.maxLine, "max-line-bytes", loadgen.DefaultMaxLineBytes, "fail a streamed response with a line or event longer than this many bytes (malformed)")
	fs.StringVar(&f.tokenizer, "tokenizer", "", `token counter: "reference", "approx", or a path to a Hugging Face tokenizer.json (default: reference on the embedded engine, approx elsewhere)`)
	fs.StringVar(&f.promptSizing, "prompt-sizing", loadgen.SizingAuto, `how prompts synthesized from input_tokens are made that many tokens on the target: "server" (word costs from its /tokenize: vLLM, SGLang, llama.cpp), "calibrate" (probe requests' usage.prompt_tokens), "tokenizer" (fit with --tokenizer), or "auto": tokenizer on the embedded engine or with a tokenizer.json, else server, else calibrate (docs/inputs.md)`)
	fs.StringVar(&f.sourceAddrs, "source-addrs", "", "dial new connections from these local addresses in turn, so that tens of thousands of connections to one host do not run out of ephemeral ports: a comma-separated list of IPs and ranges, e.g. 127.0.0.2-127.0.0.9 on loopback")
	fs.BoolVar(&f.http2, "http2", false, "speak HTTP/2: h2c with prior knowledge to http:// endpoints (the embedded engine and serve accept it), only ALPN h2 to https:// ones; streams then share connections")
	fs.BoolVar(&f.scrapeMetric, "scrape-metrics", false, "poll the endpoint's Prometheus /metrics during the run (running/waiting requests, KV-cache usage, preemptions, and GPU power under DCGM names: docs/energy.md) for the report")
	fs.StringVar(&f.sessionHeader, "session-header", "x-session-id", `header that carries each session turn's affinity key (the trace's "affinity", else its session) so a router can pin sessions; "" sends none`)
	return f
}

// target builds the loadgen target; model is the model name to request ("" = discover).
func (f *targetFlags) target(app *App, url, model string) (loadgen.Target, error) {
	t := loadgen.Target{
		URL:                url,
		API:                f.api,
		BatchSize:          f.batchSize,
		Model:              model,
		Backend:            f.backend,
		Stream:             !f.noStream,
		CACertFile:         f.caCert,
		InsecureSkipVerify: f.insecure,
		Timeouts:           loadgen.Timeouts{Connect: f.tConnect, FirstToken: f.tFirstToken, Idle: f.tIdle, Total: f.tTotal},
		MaxLineBytes:       f.maxLine,
		SessionHeader:      f.sessionHeader,
		HTTP2:              f.http2,
	}
	if f.sourceAddrs != "" {
		addrs, err := loadgen.ParseSourceAddrs(f.sourceAddrs)
		if err != nil {
			return t, fmt.Errorf("--source-addrs: %w", err)
		}
		t.SourceAddrs = addrs
	}
	if f.tConnect < 0 || f.tFirstToken < 0 || f.tIdle < 0 || f.tTotal < 0 {
		return t, fmt.Errorf("--timeout-connect, --timeout-first-token, --timeout-idle and --timeout-total must be >= 0 (0 = none)")
	}
	if f.maxLine < 1024 {
		return t, fmt.Errorf("--max-line-bytes %d: want at least 1024", f.maxLine)
	}
	if err := checkEndpoint(url); err != nil {
		return t, err
	}
	if f.api != "" && !slices.Contains(loadgen.APIs(), f.api) {
		return t, fmt.Errorf("--api %s: want one of %s", safetext.Quote(f.api, 40), strings.Join(loadgen.APIs(), ", "))
	}
	if f.batchSize < 1 || (f.batchSize > 1 && f.api != "embeddings") {
		return t, fmt.Errorf("--batch-size %d: want at least 1, and above 1 only with --api embeddings", f.batchSize)
	}
	if f.apiKeyEnv != "" {
		key := app.Getenv(f.apiKeyEnv)
		if key == "" {
			return t, fmt.Errorf("--api-key-env %s: the variable is empty or unset", f.apiKeyEnv)
		}
		t.APIKey = key
	}
	if len(f.headers) > 0 {
		t.Headers = map[string]string{}
		for _, h := range f.headers {
			k, v, ok := strings.Cut(h, ":")
			k, v = strings.TrimSpace(k), strings.TrimSpace(v)
			if !ok || k == "" {
				return t, fmt.Errorf("--header %s: want K:V", redactHeader(h))
			}
			if !validHeaderName(k) {
				return t, fmt.Errorf("--header %s: the name may hold only letters, digits and !#$%%&'*+-.^_`|~", safetext.Quote(k, 64))
			}
			if strings.ContainsAny(v, "\r\n\x00") {
				return t, fmt.Errorf("--header %s: the value holds a line break or NUL (one header per --header)", safetext.Quote(k, 64))
			}
			t.Headers[k] = v
		}
	}
	return t, nil
}

// checkEndpoint rejects an --endpoint that would fail every request: not http(s), no host, a
// port outside 1-65535, or control characters.
func checkEndpoint(raw string) error {
	shown := safetext.Quote(redact.URL(raw), 200)
	if strings.ContainsFunc(raw, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return fmt.Errorf("--endpoint %s: holds a control character", shown)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Hostname() == "" {
		return fmt.Errorf("--endpoint %s: want http://host:port or https://host (optionally ending in /v1)", shown)
	}
	if p := u.Port(); p != "" {
		if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return fmt.Errorf("--endpoint %s: port %s is not in 1-65535", shown, safetext.Quote(p, 20))
		}
	} else if strings.HasSuffix(u.Host, ":") {
		return fmt.Errorf("--endpoint %s: empty port", shown)
	}
	return nil
}

// validHeaderName reports whether k is an HTTP token (RFC 9110 section 5.6.2).
func validHeaderName(k string) bool {
	for i := 0; i < len(k); i++ {
		c := k[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0) {
			return false
		}
	}
	return k != ""
}

// redactHeader keeps a header's name and hides its value in error messages; a header given
// without ':' is shown not at all (it may be a bare secret).
func redactHeader(h string) string {
	if k, _, ok := strings.Cut(h, ":"); ok {
		return safetext.Escape(k, 64) + ":" + redact.Marker
	}
	return "<a value without ':'>"
}

func (f *targetFlags) loadTokenizer(embedded bool) (tokenizer.Tokenizer, error) {
	spec := f.tokenizer
	if spec == "" {
		if embedded {
			spec = "reference"
		} else {
			spec = "approx"
		}
	}
	tok, err := tokenizer.Load(spec)
	if err != nil {
		return nil, fmt.Errorf("--tokenizer: %w", err)
	}
	return tok, nil
}

// sizing resolves --prompt-sizing for a target (embedded: the reference engine): auto is
// the tokenizer where it is exact (the embedded engine, a tokenizer.json), else the server.
func (f *targetFlags) sizing(embedded bool) (string, error) {
	mode := f.promptSizing
	if !slices.Contains(loadgen.SizingModes(), mode) {
		return "", fmt.Errorf("--prompt-sizing %s: want one of %s", safetext.Quote(mode, 40), strings.Join(loadgen.SizingModes(), ", "))
	}
	hfFile := f.tokenizer != "" && f.tokenizer != "reference" && f.tokenizer != "approx"
	switch {
	case embedded && (mode == loadgen.SizingServer || mode == loadgen.SizingCalibrate):
		return "", fmt.Errorf("--prompt-sizing %s measures an outside server; the embedded reference engine counts with the reference tokenizer, which sizes prompts exactly (give --endpoint, or drop the flag)", mode)
	case mode == loadgen.SizingAuto && (embedded || hfFile):
		return loadgen.SizingTokenizer, nil
	}
	return mode, nil
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

func (f *loadFlags) options(t loadgen.Target, tok tokenizer.Tokenizer) (loadgen.Options, error) {
	if f.concurrency < 0 || f.maxConcurrency < 0 || f.maxRequests < 0 || f.repeat < 1 {
		return loadgen.Options{}, fmt.Errorf("--concurrency, --max-concurrency and --max-requests must be >= 0 and --repeat >= 1")
	}
	if f.concurrency > 0 && f.maxConcurrency > 0 {
		return loadgen.Options{}, fmt.Errorf("--concurrency (closed loop) and --max-concurrency (open-loop cap) exclude each other")
	}
	if f.rateScale <= 0 || f.timeScale <= 0 {
		return loadgen.Options{}, fmt.Errorf("--rate-scale and --time-scale must be > 0")
	}
	return loadgen.Options{
		Target:            t,
		Concurrency:       f.concurrency,
		MaxConcurrency:    f.maxConcurrency,
		RateScale:         f.rateScale,
		Duration:          f.duration,
		MaxRequests:       f.maxRequests,
		Warmup:            f.warmup,
		Cooldown:          f.cooldown,
		Repeat:            f.repeat,
		Seed:              f.seed,
		Tokenizer:         tok,
		PromptBlockTokens: f.blockTokens,
		Grace:             f.grace,
	}, nil
}

func (f *loadFlags) mode() string {
	if f.concurrency > 0 {
		return "closed-loop"
	}
	return "open-loop"
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
	fs.Float64Var(&f.inputTol, "input-tolerance", metrics.DefaultInputTolerance, "how far, as a fraction of the total, the server's usage.prompt_tokens of the synthesized prompts may differ from the trace's input_tokens: beyond it the summary flags the inputs (run, report, compare) and run, ab and sweep exit 3 (docs/inputs.md)")
	return f
}

func (f *metricFlags) options() (metrics.Options, error) {
	var o metrics.Options
	if err := parseSLOFlags(&o, f.slo, f.classSLO); err != nil {
		return o, err
	}
	if st := strings.TrimSpace(f.stall); st != "" {
		if m, ok := strings.CutSuffix(st, "x"); ok {
			v, err := strconv.ParseFloat(m, 64)
			if err != nil || v <= 0 {
				return o, fmt.Errorf("--stall-threshold %q: want a positive multiple like 5x or a duration like 250ms", st)
			}
			o.StallMultiple = v
		} else {
			d, err := time.ParseDuration(st)
			if err != nil || d <= 0 {
				return o, fmt.Errorf("--stall-threshold %q: want a positive multiple like 5x or a duration like 250ms", st)
			}
			o.StallThreshold = d
		}
	}
	if f.priceIn < 0 || f.priceOut < 0 || f.gpuHour < 0 || f.gpus < 1 {
		return o, fmt.Errorf("prices must be >= 0 and --gpus >= 1")
	}
	tokenPriced := f.priceIn > 0 || f.priceOut > 0
	switch {
	case tokenPriced && f.gpuHour > 0:
		return o, fmt.Errorf("--gpu-hour-cost and --price-input/--price-output are two ways to price a run (the GPUs you rent, or the tokens an API bills): give one")
	case f.changed("gpus") && f.gpuHour == 0:
		return o, fmt.Errorf("--gpus counts the GPUs for --gpu-hour-cost; give --gpu-hour-cost too, or drop --gpus")
	case f.changed("currency") && !tokenPriced && f.gpuHour == 0:
		return o, fmt.Errorf("--currency labels a cost; give --price-input/--price-output or --gpu-hour-cost too, or drop --currency")
	}
	o.PricePerMInput, o.PricePerMOutput = f.priceIn, f.priceOut
	o.GPUHourCost, o.GPUCount, o.Currency = f.gpuHour, f.gpus, f.currency
	o.LagLimit = f.lagLimit
	if !(f.inputTol > 0) || math.IsInf(f.inputTol, 0) {
		return o, fmt.Errorf("--input-tolerance %g: want a fraction > 0, e.g. 0.05 for 5%%", f.inputTol)
	}
	o.InputTolerance = f.inputTol
	o.FluidityTTFT, o.FluidityTBT = f.fluidTTFT, f.fluidTBT
	return o, nil
}

// parseSLOFlags sets o's SLO and ClassSLO from --slo and --class-slo values.
func parseSLOFlags(o *metrics.Options, slo string, classSLO []string) error {
	if slo != "" {
		s, err := metrics.ParseSLO(slo)
		if err != nil {
			return fmt.Errorf("--slo: %w", err)
		}
		o.SLO = s
	}
	for _, cs := range classSLO {
		class, spec, ok := strings.Cut(cs, ":")
		if !ok || class == "" {
			return fmt.Errorf("--class-slo %q: want CLASS:ttft=…", cs)
		}
		s, err := metrics.ParseSLO(spec)
		if err != nil {
			return fmt.Errorf("--class-slo %s: %w", class, err)
		}
		if o.ClassSLO == nil {
			o.ClassSLO = map[string]metrics.SLO{}
		}
		o.ClassSLO[class] = s
	}
	return nil
}

// metricFlagNames lists the flags addMetricFlags defines.
var metricFlagNames = []string{"slo", "class-slo", "stall-threshold", "price-input", "price-output",
	"gpu-hour-cost", "gpus", "currency", "lag-limit", "fluidity-ttft", "fluidity-tbt", "input-tolerance"}

func (f *metricFlags) changed(name string) bool {
	fl := f.fs.Lookup(name)
	return fl != nil && fl.Changed
}

// anyChanged reports whether any metric flag was given.
func (f *metricFlags) anyChanged() bool {
	for _, n := range metricFlagNames {
		if f.changed(n) {
			return true
		}
	}
	return false
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

func (f *outputFlags) html(app *App) reports.HTMLOptions {
	return reports.HTMLOptions{EChartsJS: f.echartsJS, Getenv: app.Getenv}
}

// commandLine is the command as typed, redacted by the policy of the target it names (its
// --endpoint and --header values; see internal/redact).
func commandLine(args []string) string {
	return commandPolicy(args).Command("llmbench", args)
}

// commandPolicy builds the redaction policy of the target named in args.
func commandPolicy(args []string) *redact.Policy {
	var t redact.Target
	for i, a := range args {
		name, v, inline := strings.Cut(a, "=")
		if !inline {
			if i+1 >= len(args) {
				continue
			}
			v = args[i+1]
		}
		switch name {
		case "--endpoint":
			t.URL = v
		case "--a-endpoint", "--b-endpoint":
			t.MoreURLs = append(t.MoreURLs, v)
		case "--scrape-workers": // flags_prefix.go
			t.MoreURLs = append(t.MoreURLs, strings.Split(v, ",")...)
		case "--header":
			if t.Headers == nil {
				t.Headers = map[string]string{}
			}
			k, hv, _ := strings.Cut(v, ":")
			t.Headers[strings.TrimSpace(k)] = strings.TrimSpace(hv)
		}
	}
	return redact.New(t)
}

// redactURL hides a URL's user info and query values (see internal/redact).
func redactURL(s string) string { return redact.URL(s) }

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

// checkDigest refuses the trace file when --trace-sha256 names another digest.
func (f *traceFlags) checkDigest() error {
	if f.sha256 == "" {
		return nil
	}
	if err := traces.CheckSHA256(f.path, f.sha256); err != nil {
		return fmt.Errorf("--trace-sha256: %w", err)
	}
	return nil
}

func (f *traceFlags) read() ([]traces.Request, error) {
	if err := f.checkDigest(); err != nil {
		return nil, err
	}
	reqs, err := traces.ReadFile(f.path, traces.ReadOptions{Lenient: f.lenient})
	if err != nil {
		return nil, err
	}
	return reqs, f.checkSpan(traces.FromSlice(reqs))
}

// defaultMaxSpan is the longest replay run, ab, sweep and simulate accept without --max-span.
const defaultMaxSpan = 24 * time.Hour

// checkSpan refuses a trace whose replay would take longer than --max-span, before anything
// starts waiting. The replay's length is the trace's span divided by --rate-scale and
// --time-scale where the command has them.
func (f *traceFlags) checkSpan(src traces.Source) error {
	span := traceSpan(src)
	scale := f.flagFloat("rate-scale") * f.flagFloat("time-scale")
	replay := time.Duration(float64(span) / scale)
	if f.maxSpan > 0 && replay > f.maxSpan {
		return fmt.Errorf("%s: the replay would span %v (%.0f s from the start to the last request, at %g times the trace's rate); "+
			"check arrival_s and think_s, or give --max-span %v to replay it as it is",
			safetext.Escape(f.path, 300), replay.Round(time.Second), span.Seconds(), scale, replay.Round(time.Hour)+time.Hour)
	}
	return nil
}

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

// traceSpan is how long a replay of src lasts at least: its last arrival, or a session's
// first arrival plus all its think times, whichever is later.
func traceSpan(src traces.Source) time.Duration {
	_, span := src.Span()
	start := map[string]time.Duration{}
	think := map[string]time.Duration{}
	src.Sessions(func(_ int, q *traces.Request) {
		if s, ok := start[q.Session]; !ok || q.Arrival < s {
			start[q.Session] = q.Arrival
		}
		think[q.Session] += q.Think
	})
	for s, t0 := range start {
		span = max(span, t0+think[s])
	}
	return span
}

// open checks the trace like read, and returns it to be replayed from its file (read again on
// each pass, so that a long trace costs no memory) when it is in arrival order. A long trace
// that must be held instead gets a note on w saying how to avoid it.
func (f *traceFlags) open(w io.Writer) (traces.Source, error) {
	if err := f.checkDigest(); err != nil {
		return nil, err
	}
	src, err := traces.OpenFile(f.path, traces.ReadOptions{Lenient: f.lenient})
	if err == nil {
		if err := f.checkSpan(src); err != nil {
			return nil, err
		}
	}
	if err == nil && traces.Held(src) && src.Len() >= heldNoteMin {
		if st, serr := os.Stat(f.path); serr == nil && !st.Mode().IsRegular() {
			fmt.Fprintf(w, "note: %s is held in memory (%d requests) because a pipe can be read only once; "+
				"write the trace to a file to replay it as it is read\n", f.path, src.Len())
		} else {
			fmt.Fprintf(w, "note: %s is held in memory (%d requests) because its lines are not in arrival order; "+
				"`llmbench trace scale %s --factor 1 -o sorted.jsonl` writes a sorted copy that is replayed as it is read\n",
				f.path, src.Len(), f.path)
		}
	}
	return src, err
}

// heldNoteMin is the trace length from which holding it is worth a note.
var heldNoteMin = 100_000
