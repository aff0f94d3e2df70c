package loadgen

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"runtime"
	"sync/atomic"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

// CPUs is the CPU capacity of the process: GOMAXPROCS as the Go runtime chose it at start (the
// CPU count, or a container's CPU limit), read before a program raises GOMAXPROCS for
// scheduling headroom (llmbench runs twice as many Ps as CPUs; see cmd/llmbench).
var CPUs = runtime.GOMAXPROCS(0)

// Timeouts bound each request; 0 means none (the CLI sets defaults, see docs/reliability.md,
// "Limits and secrets"). Each produces its own failure kind. Only generated text counts as output:
// role-only chunks, empty deltas, usage chunks and comments keep no timer from firing.
type Timeouts struct {
	// Connect bounds the wait for a connection, from sending: the dial and TLS handshake (and
	// HTTP/2's settings), or a pooled connection (metrics.FailTimeoutConnect; a dial that fails
	// outright is metrics.FailConnect). It no longer bounds the response headers: a server
	// that holds a request in its queue is not unreachable (phases.go).
	Connect time.Duration
	// Headers bounds, for a streamed request, the wait from the connection to the response
	// headers (metrics.FailTimeoutHeaders); 0 leaves it to FirstToken, which runs from sending
	// and is then named timeout_headers when it fires before them. A non-streaming response's
	// headers arrive with the whole generation, so FirstToken bounds that wait instead.
	Headers time.Duration
	// FirstToken bounds the time from sending to the first generated text
	// (metrics.FailTimeoutFirst).
	FirstToken time.Duration
	// Idle bounds the gap, in a stream, between two chunks of generated text, from the first
	// one on (metrics.FailTimeoutIdle); before it, FirstToken applies.
	Idle time.Duration
	// Total bounds the whole request from sending to the end (metrics.FailTimeoutTotal).
	Total time.Duration
}

// Target is the endpoint under test.
type Target struct {
	// URL is the server's base URL, e.g. http://127.0.0.1:8000, with or without /v1.
	URL string
	// API is "completions", "chat", "responses" (OpenAI Responses), "messages" (Anthropic
	// Messages), "embeddings" (never streamed; see api.go), or "" to choose per request
	// (Messages → chat, else completions).
	API string
	// BatchSize is, with API "embeddings", the number of trace requests sent as one call
	// (batch.go); 0 or 1 sends one per call. Above 1 with another API is an error.
	BatchSize int
	// Model is the model name to request; "" discovers it from /v1/models.
	Model string
	// Backend selects which extensions are sent: "vllm" (the default when empty), "sglang",
	// "tgi", "llamacpp", "ollama" or "openai". See BackendExtensions.
	Backend string
	// Stream requests server-sent events (TTFT, ITL); false sends non-streaming requests.
	Stream bool
	// APIKey is sent as a bearer token (as x-api-key with API "messages") and written nowhere else: error messages and response
	// ids are scrubbed of it (internal/redact).
	APIKey string
	// Headers are extra request headers. Their values, and each token part of them, are
	// scrubbed like the key; so are the URL's user info and query values. They are sent to the
	// target's host only: a redirect to another host is not followed.
	Headers map[string]string
	// MaxLineBytes bounds one line (and one event) of a streamed response; a longer one fails
	// the request as metrics.FailMalformed. 0 means DefaultMaxLineBytes.
	MaxLineBytes int
	// CACertFile is a PEM file of CAs to trust for HTTPS; InsecureSkipVerify skips
	// verification.
	CACertFile         string
	InsecureSkipVerify bool
	Timeouts           Timeouts

	// Connections at scale (issue 18).
	//
	// SourceAddrs, when set, are the local addresses new connections are dialed from, in
	// turn (round robin per new connection), so that tens of thousands of connections to one
	// host:port do not run out of ephemeral ports (about 28,000 per source address on
	// Linux). On loopback every 127.x.y.z address works without configuration; elsewhere
	// they must be addresses of this machine. Not used with Options.Dial. See
	// ParseSourceAddrs.
	SourceAddrs []netip.Addr
	// HTTP2 speaks HTTP/2: with prior knowledge (h2c) to an http:// URL, and only HTTP/2
	// (ALPN h2) to an https:// one, so a server without it fails to connect. Without it an
	// http:// URL gets HTTP/1.1 and an https:// one what ALPN settles (HTTP/2 if offered).
	// HTTP/2 multiplexes streams over few connections (Result.Connections).
	HTTP2 bool

	// SessionHeader names the header that carries each session turn's affinity key
	// (traces.Request.Affinity, else its Session, with ".r<k>" for repeat k when Repeat > 1),
	// so that a router can pin a session to one replica; "" sends none. The CLI's default is
	// x-session-id.
	SessionHeader string
}

// Options configure a run.
type Options struct {
	Target Target
	// Concurrency > 0 runs closed loop with that many requests in flight, ignoring arrival
	// times (label "closed-loop").
	Concurrency int
	// MaxConcurrency > 0 caps an open-loop run: a request due while the cap is reached waits
	// for a slot; the wait is queue time (Sent - Dispatched) and counts in TTFT and E2E, which
	// are measured from Intended.
	MaxConcurrency int
	// MaxWaiting bounds, in an open-loop run, the requests dispatched and not yet sent
	// (waiting for a MaxConcurrency slot, or for the CPU when the client falls behind). Past
	// it the dispatcher waits for one to be sent, so the overload shows as schedule lag (the
	// summary then says client-limited) rather than as memory: a late request is not
	// materialized before there is room for it. 0 means DefaultMaxWaiting; negative, no
	// bound.
	MaxWaiting int
	// RateScale divides arrival offsets and the think times of multi-turn sessions (2 =
	// twice the rate: the trace's timeline compressed by half); 0 means 1.
	RateScale float64
	// CancelScale divides each request's cancel_after_ms (traces.Request.CancelAfter,
	// cancel.go): the embedded engine's time scale, so that the delay is in the engine's GPU
	// time like every timeout. 0 or 1: as the trace says. RateScale does not change it.
	CancelScale float64
	// Duration stops sending after this long (0 = whole trace). Requests whose intended send
	// time falls at or after it are outside the run: they get no Record and are counted in
	// Result.Skipped.
	Duration time.Duration
	// MaxRequests limits the run to the first N requests in intended order (0 = all); the
	// rest are counted in Result.Skipped.
	MaxRequests int
	// Warmup and Cooldown mark records whose intended time falls in the first Warmup or the
	// last Cooldown of the run (its Duration, else the replay's length: the trace's last
	// arrival plus one mean inter-arrival gap, times Repeat) with metrics.PhaseWarmup /
	// PhaseCooldown. Cooldown needs Duration in closed loop.
	Warmup, Cooldown time.Duration
	// Repeat replays the trace N times back to back (Record.Repeat is the 0-based index);
	// 0 means 1.
	Repeat int
	// Seed seeds prompt synthesis.
	Seed int64
	// KeepOutput keeps the answer text and tool calls (Record.OutputText, Record.ToolCalls) of
	// every request; without it they are kept only for requests whose trace line carries
	// expect checks.
	KeepOutput bool
	// Tokenizer synthesizes prompts of InputTokens tokens, counts prompt tokens and, when the
	// server sends no per-chunk usage, each chunk's output tokens. Nil synthesizes prompts for
	// the reference tokenizer and counts one token per content chunk (TokenSource "chunks").
	Tokenizer tokenizer.Tokenizer
	// PromptSizing says how prompts synthesized from input_tokens are sized on the target
	// (SizingModes; "" and SizingTokenizer fit them with Tokenizer). With SizingServer,
	// SizingCalibrate or SizingAuto, RunSource measures the target before sending (see
	// SizingServer) unless Sizer is given.
	PromptSizing string
	// Sizer is a sizing already measured (MeasureSizing), reused by the runs of ab and
	// sweep against the same target; it wins over PromptSizing.
	Sizer *Sizer
	// PromptBlockTokens is the number of tokens per hash_ids block (default 512).
	PromptBlockTokens int
	// Grace is how long, after ctx is canceled, in-flight requests may finish before they are
	// canceled (default 10s).
	Grace time.Duration
	// Progress, when set, is updated live.
	Progress *Progress
	// Clock is the time source; nil is the real monotonic clock with sub-millisecond pacing.
	Clock Clock
	// Dial, when set, replaces the TCP dialer (tests use in-memory connections).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)
	// StartAt, when set, is the run epoch on the wall clock: the run waits until then before
	// sending, and every Record time counts from it (a start already past sends the first
	// requests late, and their lag shows). The shards of one run share it (runner.Shard).
	StartAt time.Time
	// Whole, when Len > 0, is the trace this run replays a shard of: the length of one pass
	// (Repeat) and the nominal end (cool-down) come from it, so that every shard shares them.
	Whole TraceShape
}

// DefaultMaxWaiting is Options.MaxWaiting when 0: at ≈ 10 KB a request (its goroutine,
// prompt and encoded body), about 40 MB of late requests at most.
const DefaultMaxWaiting = 4096

// TraceShape is what the schedule needs of a whole trace: its first and last arrival and its
// number of requests (see metrics.ReplayLength).
type TraceShape struct {
	First, Last time.Duration
	Len         int
}

// Progress holds live counters a caller may poll while Run works.
type Progress struct {
	Sent         atomic.Int64 // requests written to the wire
	Waiting      atomic.Int64 // dispatched (open loop) and not yet sent: waiting for a slot or the CPU
	InFlight     atomic.Int64 // sent and not yet finished
	Done         atomic.Int64 // records emitted (succeeded or failed)
	Failed       atomic.Int64 // records emitted with a failure
	OutputTokens atomic.Int64 // output tokens counted so far
}

// Clock is the time source of a run. Now must carry a monotonic reading; SleepUntil returns
// when Now() >= t or with ctx's error when ctx ends first.
type Clock interface {
	Now() time.Time
	SleepUntil(ctx context.Context, t time.Time) error
}

// Result describes a finished run; the Records went to the sink.
type Result struct {
	// Start is the run epoch: every Record time is nanoseconds after it (monotonic).
	Start time.Time
	// Elapsed is the run's length, from Start to the last record.
	Elapsed time.Duration
	// Model is the model requested (given or discovered).
	Model string
	// Sizer is the prompt sizing the run used (nil: Options.Tokenizer fitted the prompts).
	Sizer *Sizer
	// Mode is "open-loop" or "closed-loop".
	Mode string
	// Sent counts requests written to the wire; Succeeded + Failed + Cancelled counts every
	// Record.
	Sent, Succeeded, Failed int
	// Cancelled counts records the client cancelled on purpose (metrics.KindCancelled:
	// cancel_after_ms or CancelInFlight); they are not in Failed.
	Cancelled int
	// Dropped counts records of requests never sent (metrics.FailDropped); they are in Failed.
	Dropped int
	// Skipped counts trace requests outside the run (Duration, MaxRequests, a run stopped
	// early with ErrStopped); no Record.
	Skipped int
	// Interrupted reports that ctx was canceled before the run finished.
	Interrupted bool
	// TraceErr is set when the trace could not be read again during the run (a trace file
	// changed or became unreadable): sending stopped there, and the requests not read have no
	// Record and are not counted anywhere else.
	TraceErr error
	// ClientCPUFraction is the process's CPU time (user+sys) over wall time × CPUs
	// during the run; -1 where the platform cannot tell. It includes anything else running in
	// the process (an embedded reference engine, for one).
	ClientCPUFraction float64
	// CPUStealFraction is the share of the machine's CPU time the hypervisor gave to other
	// machines during the run (/proc/stat; -1 where the platform cannot tell). On a virtual
	// machine the schedule lag and every latency include those stalls.
	CPUStealFraction float64
	// Connections counts the connections dialed during the run (HTTP/1.1: about one per
	// concurrent stream; HTTP/2: streams share them). 0 when Options.Dial was given.
	Connections int
	// LateStart is how long after Options.StartAt the run was ready to send (0 when it was
	// ready in time, or without StartAt). Requests due before then were sent at once, late:
	// their schedule lag, and so their TTFT, include the wait.
	LateStart time.Duration
}

// realClock paces in three stages so that sends land well within a millisecond of their time
// without hogging a core: a Go timer up to a window before the target (Go timers can fire a
// millisecond late, so the window adapts to about twice the recent lateness, between minSpin
// and maxSpin), then kernel sleeps (fineSleep: the thread sleeps, so a loaded machine does not
// punish it as a CPU hog), then a busy wait for the last busyWait.
type realClock struct {
	late atomic.Int64 // moving average of timer lateness, ns
	// poller says whether the kernel sleeps may wait through the network poller (fineSleep);
	// nil: they may.
	poller func() bool
}

const (
	minSpin     = 200 * time.Microsecond
	maxSpin     = 4 * time.Millisecond
	initialLate = time.Millisecond
	busyWait    = 100 * time.Microsecond
)

func newRealClock() *realClock {
	c := &realClock{}
	c.late.Store(int64(initialLate))
	return c
}

func (c *realClock) Now() time.Time { return time.Now() }

// leadClock is a Clock whose open-loop requests are started lead ahead of their time and
// sleep the rest themselves (openLoop): the real clock, with its fine-sleep window as the lead.
type leadClock interface {
	Clock
	lead() time.Duration
}

func (c *realClock) lead() time.Duration { return c.window() }

func (c *realClock) window() time.Duration {
	return min(max(2*time.Duration(c.late.Load()), minSpin), maxSpin)
}

func (c *realClock) SleepUntil(ctx context.Context, t time.Time) error {
	w := c.window()
	if d := time.Until(t) - w; d > 0 {
		tm := time.NewTimer(d)
		select {
		case <-ctx.Done():
			tm.Stop()
			return ctx.Err()
		case <-tm.C:
		}
		late := int64(time.Since(t.Add(-w)))
		old := c.late.Load()
		c.late.Store(old + (late-old)/8)
	}
	for {
		left := time.Until(t)
		if left <= 0 {
			return nil
		}
		if left > busyWait {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			fineSleep(left-busyWait*4/5, c.poller == nil || c.poller())
		}
	}
}

// WakeLateness paces n waits of d, one after another, as a run paces its sends on the real
// clock (its fine sleeps through the network poller, as over HTTP/2), and returns how late
// each ended. On an otherwise idle process this is the machine's own floor under a run's
// schedule lag: the part that no client can remove (llmbench bench reports its P99).
func WakeLateness(ctx context.Context, n int, d time.Duration) ([]time.Duration, error) {
	c := newRealClock()
	late := make([]time.Duration, 0, n)
	for range n {
		t := time.Now().Add(d)
		if err := c.SleepUntil(ctx, t); err != nil {
			return late, err
		}
		late = append(late, time.Since(t))
	}
	return late, nil
}

// extensions are the non-standard request fields a backend accepts.
type extensions struct {
	ignoreEOS       bool // ignore_eos: generate exactly max_tokens
	minTokens       bool // min_tokens = max_tokens
	includeUsage    bool // stream_options.include_usage: final usage chunk
	continuousUsage bool // stream_options.continuous_usage_stats: usage in every chunk
}

// Backends lists the accepted Target.Backend values.
func Backends() []string { return []string{"vllm", "sglang", "tgi", "llamacpp", "ollama", "openai"} }

// BackendExtensions says which extensions a backend preset sends, for documentation and
// results: ignore_eos, min_tokens, stream_options.include_usage and
// stream_options.continuous_usage_stats.
func BackendExtensions(backend string) (map[string]bool, error) {
	e, err := backendExtensions(backend)
	if err != nil {
		return nil, err
	}
	return map[string]bool{
		"ignore_eos":             e.ignoreEOS,
		"min_tokens":             e.minTokens,
		"include_usage":          e.includeUsage,
		"continuous_usage_stats": e.continuousUsage,
	}, nil
}

func backendExtensions(backend string) (extensions, error) {
	switch backend {
	case "", "vllm":
		return extensions{true, true, true, true}, nil
	case "sglang":
		return extensions{true, true, true, true}, nil
	case "llamacpp":
		return extensions{ignoreEOS: true, includeUsage: true}, nil
	case "tgi", "ollama", "openai":
		return extensions{includeUsage: true}, nil
	}
	return extensions{}, fmt.Errorf("backend %q: want one of vllm, sglang, tgi, llamacpp, ollama, openai", backend)
}
