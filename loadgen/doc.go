// Package loadgen replays a trace against an OpenAI-compatible endpoint and emits one
// metrics.Record per request.
//
// # Scheduling
//
// Open loop (the default): each request is dispatched at its trace offset (divided by
// Options.RateScale) from the run start, computed from absolute offsets, never by sleeping
// between requests, and never waiting for earlier requests. Pacing uses a Go timer, then
// kernel sleeps, then a short busy wait, so dispatch lands well within a millisecond of the
// intended time. Record.Intended is the schedule, Record.Dispatched when the dispatcher fired
// (the difference is schedule lag, the client's health) and Record.Sent when the HTTP request
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
// Every request of the run yields exactly one Record, streamed to the sink as it finishes (no
// record is kept, so memory is flat in the number of requests). Requests never sent because
// the run was interrupted, or queued behind the cap when it was, are metrics.FailDropped;
// requests still in flight when the grace period after an interrupt ends are
// metrics.FailCanceled with their partial timings. Requests outside Options.Duration or
// Options.MaxRequests are not part of the run and get no Record (Result.Skipped).
//
// Failure kinds: connect (dial, TLS, or the connection closed before any response),
// http_429 / http_4xx / http_5xx with Status and the server's error message, timeout_connect
// (no headers in time), timeout_first_token, timeout_idle (silence between events),
// timeout_total, stream_broken (the stream ended without [DONE] or the connection broke),
// malformed (bad SSE framing or chunk JSON, or more than 2×max_tokens+4096 content chunks),
// server_error (an error object or "event: error"
// inside a 200 stream), empty (no generated text), short_output (fewer tokens than max_tokens
// although ignore_eos was sent; the server's usage count is used when it reports one) and
// canceled. Error messages are truncated with metrics.TruncateError and scrubbed of the API
// key, header values and URL credentials.
//
// # Token accounting
//
// TTFT is the first chunk that carries generated text (content, reasoning_content or text);
// a role-only prelude does not count. A chunk's token count comes from the server's
// per-chunk usage when present (the delta of cumulative completion_tokens, as vLLM sends
// with continuous_usage_stats; usage reported by text-less chunks is owed to the next content
// chunk), else from Options.Tokenizer over the chunk's text (at least one), else one per chunk.
// Each content chunk is one metrics.Chunk{T, Tokens}, so both per-token and per-chunk gaps
// can be derived. Record.TokenSource says which source counted the request;
// ServerInputTokens/ServerOutputTokens are the server's final usage (-1 when not reported);
// OutputHash is the FNV-64a of the whole output text, in hex.
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
// Progress, DiscoverModel, Backends and BackendExtensions, CPUs. A program can drive its own
// replay and consume the Records; everything else is unexported. See docs/ARCHITECTURE.md for
// where it sits in the pipeline.
package loadgen
