// Package metrics turns Records into numbers: HdrHistogram percentiles of TTFT, TPOT, ITL (per
// token and per chunk), E2E and queue time; stalls, fluidity-index, goodput under SLOs,
// throughput, time series, cost, bootstrap confidence intervals and paired comparisons.
//
// Record is the one type every producer (loadgen from the wire, the simulate adapter from the
// reference engine's ground truth) emits and every consumer reads. This package owns it and
// its on-disk encoding (requests.msgpack). It never does network I/O and never renders a
// report. Every metric is declared once, in the registry (registry.go); README.md in this
// directory documents every definition, default and statistical method.
//
// This package is a supported Go API for programs that read, summarize or compare llmbench
// results: Record and its file (CreateRecordFile, ReadRecords, EachRecord, FileSource),
// Summarize and Summary (the summary.json contract), Compare and Comparison, ParseFailOn, the
// metric registry (Metrics, Families, LookupMetric, MetricValue) and MergeSummaries. Within a
// schema version (SummarySchema, ComparisonSchema) names and fields stay compatible; additions
// may come in any release. docs/ARCHITECTURE.md follows a Record from the wire to the report.
package metrics

// FailureKind classifies why a request failed. The empty kind means success.
type FailureKind string

// Failure kinds. A failed request keeps its partial timings.
const (
	FailNone           FailureKind = ""
	FailConnect        FailureKind = "connect"         // dial/TLS error before any response
	FailHTTP429        FailureKind = "http_429"        // rate limited
	FailHTTP4xx        FailureKind = "http_4xx"        // other 4xx; Status has the code
	FailHTTP5xx        FailureKind = "http_5xx"        // 5xx; Status has the code
	FailTimeoutConnect FailureKind = "timeout_connect" // not connected in time (dial, TLS)
	FailTimeoutFirst   FailureKind = "timeout_first_token"
	FailTimeoutIdle    FailureKind = "timeout_idle"  // gap between chunks too long
	FailTimeoutTotal   FailureKind = "timeout_total" // whole request too long
	FailStreamBroken   FailureKind = "stream_broken" // connection ended mid-stream / no [DONE]
	FailMalformed      FailureKind = "malformed"     // bad SSE framing or JSON
	FailEmpty          FailureKind = "empty"         // completed with no generated text
	FailShortOutput    FailureKind = "short_output"  // fewer tokens than asked with ignore_eos
	FailCanceled       FailureKind = "canceled"      // the client stopped it (interrupt, end of run)
	FailDropped        FailureKind = "dropped"       // never sent (concurrency cap, run ended first)
	FailServerError    FailureKind = "server_error"  // an error object inside a 200 stream

	// FailContextLength: the server refused the prompt (or prompt plus max_tokens) as longer
	// than the model's context, whatever its HTTP status or error framing (llama.cpp's
	// exceed_context_size_error, OpenAI's context_length_exceeded, vLLM's and SGLang's
	// messages); Record.ErrorPromptTokens and ErrorContextTokens say by how much when the
	// server said so.
	FailContextLength FailureKind = "context_length"

	// FailClientFDLimit: the client had no file descriptor left for a new connection
	// (EMFILE/ENFILE on dial). The client's limit, not the server's failure: a run with one
	// is client-limited (issue 18).
	FailClientFDLimit FailureKind = "client_fd_limit"

	// FailModelNotFound: the server does not serve the model or adapter the request named
	// (HTTP 404 with vLLM's NotFoundError "The model `x` does not exist.", OpenAI's
	// model_not_found, or any 404 whose message says the model does not exist). Record.Model
	// says which name (issue 38).
	FailModelNotFound FailureKind = "model_not_found"

	// FailTimeoutHeaders: connected and sent, but the server sent no response headers within
	// the headers timeout (or, unset, the first-token timeout). Real servers (Ollama,
	// llama.cpp) send none while a request waits for a slot, so this is the server queueing
	// under load, a failure of the server, not of the network (issue 45). The summary names
	// it among the failures that leave only survivors in the latency percentiles
	// (WaitedOut).
	FailTimeoutHeaders FailureKind = "timeout_headers"
)

// WaitedOut reports whether a request of kind k was given up on while it waited for the
// server to answer: no headers, no first token, a silent stream or no end in time. Such a
// request is left out of the latency distributions although it took longer than their bounds
// suggest, so an overloaded server's percentiles over the rest are a survivors' view (the
// summary's warning says so).
func (k FailureKind) WaitedOut() bool {
	switch k {
	case FailTimeoutHeaders, FailTimeoutFirst, FailTimeoutIdle, FailTimeoutTotal:
		return true
	}
	return false
}

// Cancellations (issue 38). KindCancelled is an outcome of its own, kept in Record.Failure so
// that every record still has one outcome: the client closed the stream on purpose (the
// trace's cancel_after_ms, or a run stopping its in-flight requests, such as a saturation
// stop) — neither a success nor a failure. A cancelled record keeps its partial timings and
// the tokens received before the cancel; the summary counts it in Requests.Cancelled, never in
// Failed, and keeps it out of the latency percentiles and of goodput's denominator
// (summarize.go). loadgen.CancelInFlight is the one way to produce it on the wire.
const KindCancelled FailureKind = "cancelled"

// Cancelled reports whether the client cancelled the request on purpose (KindCancelled).
func (r *Record) Cancelled() bool { return r.Failure == KindCancelled }

// Token sources: where a Record's OutputTokens came from (TokenSource), and how that total
// was split among its chunks (TokenAttribution: the first three, TokensEven or
// TokensOnePerChunk).
const (
	TokensFromUsage     = "usage"     // server's per-chunk or final usage
	TokensFromTokenizer = "tokenizer" // client-side tokenizer over the text
	TokensFromChunks    = "chunks"    // one token per content chunk (last resort)
	// TokensEven: the server's total spread evenly over the chunks (no per-chunk usage, no
	// tokenizer); the largest-remainder rule keeps the sum exact.
	TokensEven = "even"
	// TokensOnePerChunk: the server's total equals the number of content chunks, so every
	// chunk carried exactly one token (a chunk with text carries at least one): exact, as on
	// servers that stream one event per token (llama.cpp, TGI, Ollama), whatever a
	// tokenizer makes of each chunk's text.
	TokensOnePerChunk = "one_per_chunk"
)

// Cache sources: which server field a Record's CachedInputTokens came from
// (Record.CacheSource).
const (
	CacheFromPromptDetails = "prompt_tokens_details" // OpenAI/vLLM/SGLang chat and completions usage
	CacheFromInputDetails  = "input_tokens_details"  // OpenAI Responses usage
	CacheFromMessages      = "cache_read_input_tokens"
	CacheFromTimings       = "timings.cache_n" // llama.cpp
	CacheFromEngine        = "engine"          // simulate: the reference engine's ground truth
)

// Input sources: where a Record's InputTokens came from (Record.InputSource).
const (
	InputFromUsage     = "usage"     // the server's usage.prompt_tokens
	InputFromTokenizer = "tokenizer" // the client's tokenizer over the prompt as sent
	InputFromTrace     = "trace"     // the trace's input_tokens (nothing better was known)
)

// Phases of a run; only steady-state records feed the headline numbers.
const (
	PhaseSteady   = ""
	PhaseWarmup   = "warmup"
	PhaseCooldown = "cooldown"
)

// Chunk is one streamed chunk that carried generated text: its arrival time and how many
// tokens it carried.
type Chunk struct {
	T      int64 // ns from the run epoch
	Tokens int32
}

// Record is everything measured about one request. Times are nanoseconds from the run's
// monotonic epoch; 0 means "did not happen" for every time except Intended. Its msgpack
// encoding (requests.msgpack) is the table recordFields in recordcodec.go: a new field needs
// an entry there, and TestRecordCodecCoversEveryField fails until it has one.
type Record struct {
	ID      string
	Class   string
	Session string
	Turn    int
	Repeat  int    // repeat index (0-based) when a trace is replayed N times
	Phase   string // PhaseSteady, PhaseWarmup or PhaseCooldown
	Arm     string // A/B arm label, empty outside ab

	// Intended is when the schedule said to send the request; latency is measured from it.
	Intended int64
	// Dispatched is when the scheduler actually fired (Dispatched-Intended = schedule lag).
	Dispatched int64
	// Sent is when the HTTP request was written (Sent-Dispatched = queue time waiting for a
	// concurrency slot).
	Sent int64
	// Headers is when the response headers arrived.
	Headers int64
	// FirstToken is when the first chunk carrying generated text arrived (role-only prelude
	// chunks do not count).
	FirstToken int64
	// Chunks are the content chunks in arrival order (Chunks[0].T == FirstToken).
	Chunks []Chunk
	// End is when the response completed (or failed).
	End int64

	// InputTokens is the prompt length: the server's usage.prompt_tokens when it reported
	// one, else the client's tokenizer count or the trace's input_tokens (InputSource says
	// which); OutputTokens the generated tokens counted per TokenSource.
	InputTokens  int
	OutputTokens int
	TokenSource  string
	// InputSource is where InputTokens came from: InputFromUsage, InputFromTokenizer or
	// InputFromTrace ("" in records written before it existed, and for requests never sent).
	InputSource string
	// IntendedInputTokens is the prompt length the trace asked for when llmbench synthesized
	// the prompt from input_tokens (the whole prompt of a turn, carried conversation
	// included); 0 when the trace gave the text itself. Against ServerInputTokens it says
	// whether the prompt reached the server at the length the trace promised.
	IntendedInputTokens int
	// TokenAttribution is how OutputTokens were split among Chunks: per-chunk usage deltas,
	// tokenizer counts (rescaled to the server's total when there is one), evenly, or one
	// per chunk. Empty in records written before it existed.
	TokenAttribution string
	// ClientOutputTokens is the client tokenizer's own count of the output, kept next to the
	// server's so that a wrong tokenizer stays visible (0: no tokenizer counted it).
	ClientOutputTokens int
	// RequestedTokens is max_tokens as sent.
	RequestedTokens int
	// ServerInputTokens / ServerOutputTokens are the server's final usage (-1: not reported,
	// or rejected: see UsageRejected).
	ServerInputTokens  int
	ServerOutputTokens int
	// UsageRejected says why the server's usage was not used for counting (a count that is
	// negative, fractional, out of range, or more than max_tokens allows); empty otherwise.
	UsageRejected string
	// ReasoningTokens is how many output tokens were reasoning (the server's
	// completion_tokens_details.reasoning_tokens, else the tokens of the reasoning chunks);
	// they are part of OutputTokens. ReasoningChunks is how many leading Chunks carried
	// reasoning; FirstAnswer is when the first chunk of the answer (content, text or a tool
	// call) arrived, 0 if none did.
	ReasoningTokens int
	ReasoningChunks int
	FirstAnswer     int64
	// CachedInputTokens is how many prompt tokens the server said it found in its prefix
	// cache (usage.prompt_tokens_details.cached_tokens, Responses'
	// input_tokens_details.cached_tokens, Messages' cache_read_input_tokens, llama.cpp's
	// timings.cache_n); CacheSource says which field, and is "" when the server reported
	// none (then both counts are 0 and mean nothing: a zero Record reports no cache).
	// CacheWriteTokens is Messages' cache_creation_input_tokens. The prefix-cache block of
	// the summary (prefixcache.go) reads them.
	CachedInputTokens int
	CacheWriteTokens  int
	CacheSource       string

	Status  int
	Failure FailureKind
	Error   string // server or client message, truncated
	// ErrorType and ErrorCode are the server's error "type" and "code" (a number written in
	// decimal), each at most MaxErrorField bytes, escaped and scrubbed of secrets like Error;
	// ErrorPromptTokens and ErrorContextTokens are the prompt length and context size a
	// context-length error reported (llama.cpp's n_prompt_tokens and n_ctx, or the numbers
	// of vLLM's, SGLang's and OpenAI's messages); 0 when the server gave none.
	ErrorType          string
	ErrorCode          string
	ErrorPromptTokens  int
	ErrorContextTokens int
	OutputHash         string
	ResponseID         string

	// Quality (issue 17). OutputText is the response's text (content, or the completion's
	// text; reasoning is not part of it), at most MaxOutputText bytes, cut on a rune boundary;
	// ToolCalls are the tool calls the response made, their streamed fragments assembled. Both
	// are kept only for requests whose trace line carries expect, or for every request with
	// --keep-output, so that package quality can grade them, also offline (llmbench grade).
	OutputText string
	ToolCalls  []ToolCall
	// Grade is the outcome of the expect checks (metrics.GradePass, or one of GradeReasons;
	// "" when the request was not graded), stamped by package quality once the request
	// completed; GradeNote says which check failed and why (at most MaxGradeNote bytes).
	Grade     string
	GradeNote string

	// Agentic sessions (a turn of a session that waited for earlier turns). After is the id of
	// the dependency whose end released the turn (the latest to finish; "" for a turn that
	// waited for none); Think and ToolDelay are the user's think time and the agent's tool
	// delay it waited after that end, in ns on the run's timeline (rate-scaled), so that
	// Intended = that end + Think + ToolDelay. The sessions block (sessions.go) reads them.
	After     string
	Think     int64
	ToolDelay int64

	// Per-request model (issue 38). Model is the model or adapter name the trace line named
	// (traces.Request.Model); "" means the run's --model. The per-model block of the summary
	// (models.go) groups by it.
	Model string
	// Speculative decoding as the server reported it for this response (issue 38,
	// speculative.go): SpecDraftTokens draft tokens proposed and SpecAcceptedTokens of them
	// accepted (llama.cpp's timings.draft_n and draft_n_accepted; SGLang's meta_info
	// spec_draft_token_num and spec_accept_token_num), SpecPasses verification passes
	// (SGLang's meta_info spec_verify_ct). 0 when not reported; SpecSource names where they
	// came from (SpecFromTimings, SpecFromMetaInfo), "" when the response reported none.
	SpecDraftTokens    int
	SpecAcceptedTokens int
	SpecPasses         int
	SpecSource         string
}

// ToolCall is one tool call of a response: the call id, the function name and the arguments
// as the server sent them (JSON text, not validated here).
type ToolCall struct {
	ID, Name, Arguments string
}

// MaxOutputText bounds Record.OutputText (and each ToolCall's Arguments).
const MaxOutputText = 64 << 10

// TruncateOutput shortens s to MaxOutputText bytes on a rune boundary.
func TruncateOutput(s string) string {
	if len(s) <= MaxOutputText {
		return s
	}
	cut := MaxOutputText
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Failure == FailNone }

// MaxErrorLen bounds Record.Error.
const MaxErrorLen = 512

// MaxErrorField bounds Record.ErrorType and Record.ErrorCode.
const MaxErrorField = 64

// TruncateError shortens an error message to MaxErrorLen bytes on a rune boundary.
func TruncateError(s string) string {
	if len(s) <= MaxErrorLen {
		return s
	}
	cut := MaxErrorLen
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
