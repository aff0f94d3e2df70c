// Package loadgen replays a trace against an OpenAI-compatible endpoint and emits one
// metrics.Record per request. Besides completions and chat completions it speaks OpenAI
// Responses, Anthropic Messages and embeddings (Target.API, api.go), and sends the images of
// a trace's messages as each API's image parts (images.go).
//
// # Scheduling
//
// Open loop (the default): each request is dispatched at its trace offset (divided by
// Options.RateScale) from the run start, computed from absolute offsets, never by sleeping
// between requests, and never waiting for earlier requests. Pacing uses a Go timer, then
// kernel timers (a timerfd waited on through the network poller on Linux, nanosleep
// elsewhere), then a short busy wait, so dispatch lands well within a millisecond of the
// intended time. On the real clock the dispatcher starts each request a little ahead (the
// kernel-timer window) and the request sleeps the rest itself, so one late wake-up delays one
// request, not every request due behind it. Record.Intended is the schedule,
// Record.Dispatched when the request's own wait ended (the difference is schedule lag, the
// client's health) and Record.Sent when the HTTP request
// started. Latency is measured from Intended. With Options.MaxConcurrency a request due while
// the cap is reached waits for a slot in arrival order; the wait is queue time (Sent -
// Dispatched), never hidden by shifting the schedule. Options.Concurrency runs closed loop
// instead: N workers each send the next request when their previous one ends
// (Intended = Dispatched = Sent); a worker carries a whole multi-turn session, think times
// included, like a user.
//
// Multi-turn sessions (traces.Request.Session): the turns are sent in Turn order, each after
// the previous turn's response ended plus its Think time divided by Options.RateScale (that
// is its Intended time), carrying the conversation so far: chat requests get the earlier
// messages and the assistant replies; completion prompts get the earlier prompt and output
// prepended. A turn whose predecessor failed is not sent (FailDropped, "an earlier turn of
// this session failed").
//
// # Records
//
// A request whose trace line carries expect checks (or every request with
// Options.KeepOutput) keeps its answer text and its tool calls, assembled from streamed
// delta.tool_calls fragments, in Record.OutputText and Record.ToolCalls (capture.go; at most
// metrics.MaxOutputText bytes); graded requests are sent without ignore_eos and min_tokens.
//
// Every request of the run yields exactly one Record, streamed to the sink as it finishes (no
// record is kept, so memory is flat in the number of requests). Requests never sent because
// the run was interrupted, or queued behind the cap when it was, are metrics.FailDropped;
// requests still in flight when the grace period after an interrupt ends are
// metrics.FailCanceled with their partial timings. Requests outside Options.Duration or
// Options.MaxRequests are not part of the run and get no Record (Result.Skipped). A request
// the client cancels on purpose (the trace's cancel_after_ms, or CancelInFlight: cancel.go) is
// metrics.KindCancelled with its partial timings and tokens: an outcome of its own, not a
// failure (Result.Cancelled).
//
// Failure kinds: connect (dial, TLS, or the connection closed before any response),
// http_429 / http_4xx / http_5xx with Status and the server's error message, timeout_connect
// (no connection in time: dial, TLS), timeout_headers (connected, but a stream's response
// headers did not come in time: the server held it in its queue; phases.go),
// timeout_first_token (no generated text since sending), timeout_idle
// (no generated text since the last, from the first token on; role-only chunks, usage chunks
// and comments do not count), timeout_total, stream_broken (the stream ended without [DONE]
// or the connection broke), malformed (chunk JSON that does not parse, a line past
// Target.MaxLineBytes, more than 2×max_tokens+4096 content chunks or 64 bytes of text per
// requested token, a malformed status line or headers, a redirect loop or a redirect to
// another host), server_error (an error object or "event: error" inside a 200 stream), empty
// (no generated text, HTTP 204), short_output (fewer tokens than max_tokens although
// ignore_eos was sent; the server's usage count is used when it reports one), canceled, and
// client_fd_limit (no file descriptor left for a new connection, EMFILE/ENFILE: the
// client's limit, never blamed on the server as connect; the summary then says
// client-limited), and context_length (a refusal of the prompt as longer than the model's
// context, whatever its status or framing: errdetail.go). An error body's type and code, and a
// context-length error's prompt and context sizes, are kept in Record.ErrorType, ErrorCode,
// ErrorPromptTokens and ErrorContextTokens.
//
// Prompt sizing (sizing.go, docs/inputs.md): against an outside server, prompts synthesized
// from input_tokens are fitted to the server's own count, learned from its /tokenize or from
// probe requests' usage before the run; Record.InputTokens is the server's
// usage.prompt_tokens when reported (Record.InputSource says which count it is) and
// Record.IntendedInputTokens the trace's length.
// Error messages and response ids are scrubbed by the target's internal/redact policy (API
// key, header values and their token parts, URL user info and query values), escaped and
// truncated (metrics.TruncateError; ids to 128 bytes). Streams are read per the WHATWG
// server-sent events specification (CR, LF or CRLF line ends; unknown fields ignored).
//
// # Scale
//
// Memory per stream in flight is kept small (BenchmarkStreamMemory, BENCHMARKS.md): chunks
// are packed as varints until the stream ends, the SSE reader and the transport's buffers
// are sized to SSE lines, and the only goroutines per stream are the request's own and
// those net/http's HTTP/1.1 transport runs per connection. In an open-loop run at most
// Options.MaxWaiting requests are dispatched and not yet sent; past it the dispatcher waits
// (schedule lag) rather than materializing the backlog. Target.SourceAddrs spreads
// connections over local addresses (ephemeral ports); Target.HTTP2 multiplexes streams over
// few connections (Result.Connections counts them).
//
// # Token accounting
//
// TTFT is the first chunk that carries generated text (content, reasoning_content/reasoning,
// text, or a tool-call fragment: tool calls are generated output); a role-only prelude does
// not count. Record.FirstAnswer is the first chunk of the answer (not reasoning), and
// Record.ReasoningChunks counts the reasoning chunks before it.
//
// The server's usage is the token count whenever the response reports it anywhere (a final
// chunk with empty choices, usage on the last chunk that still has a choice, cumulative
// per-chunk usage as vLLM sends with continuous_usage_stats, a non-streaming body):
// OutputTokens is then the last completion_tokens reported and TokenSource "usage". The
// total is split among the chunks by the per-chunk usage deltas when every content chunk
// carried one (usage reported by text-less chunks is owed to the next content chunk). Else
// every content chunk carries at least one token: a total equal to the number of content
// chunks is one each, exactly (TokenAttribution "one_per_chunk": llama.cpp, TGI and Ollama
// stream one event per token), and a larger one is shared in proportion to
// Options.Tokenizer's counts (evenly without one), no chunk below one, by the
// largest-remainder rule so that the chunks sum to the total exactly (Record.TokenAttribution
// says which). Without usage, the total is the tokenizer's count of the whole output (at
// least one per chunk), split the same way, else each chunk is one. The tokenizer's count of
// the whole output text is kept in Record.ClientOutputTokens so that a bad tokenizer
// stays visible. Usage counts that are not plausible (negative, fractional, beyond
// MaxUsageCount, not numbers, or completion_tokens above max_tokens plus 16 + 25%) are not
// used; Record.UsageRejected says why. Each content chunk is one metrics.Chunk{T, Tokens},
// so both per-token and per-chunk gaps can be derived. ServerInputTokens/ServerOutputTokens
// are the server's usage (-1 when not reported or rejected); OutputHash is the FNV-64a of
// the whole output text, in hex.
//
// The SSE reader and the chunk decoder are hand-written for this hot path: they walk the
// bytes once and allocate nothing per chunk (see BenchmarkIngest).
//
// # Limits
//
// Package loadgen must never import refengine (the reference engine is just another server
// to it), compute statistics (package metrics) or render reports. It sends no proxy and no
// compression (both would distort timing); the API key goes only into the Authorization
// header.
//
// # API
//
// loadgen is a supported Go API: RunSource (and Run over a slice), Options, Target, Result,
// Progress, DiscoverModel, Backends and BackendExtensions, CPUs, ParseSourceAddrs and
// DefaultMaxWaiting. A program can drive its own
// replay and consume the Records; everything else is unexported. See docs/ARCHITECTURE.md for
// where it sits in the pipeline.
package loadgen
