// Package loadgen replays a trace against an OpenAI-compatible endpoint and emits one
// metrics.Record per request: open-loop scheduling from absolute offsets (latency measured from
// the intended send time), closed-loop and capped modes, streaming clients for /v1/completions
// and /v1/chat/completions, per-chunk token timing and accounting, failure classification and
// cancellation.
//
// It must never import refengine (the reference engine is just another server to it), compute
// statistics (package metrics) or render reports.
package loadgen
