// Package refengine is the reference engine: a simulated GPU serving engine that speaks the
// OpenAI-compatible streaming API and emits each token at the time a real engine would
// (continuous batching, PagedAttention KV blocks, chunked prefill, prefix caching, speculative
// decoding, quantization), driven by the roofline model in refengine/perf. It runs on a real
// (optionally scaled) clock behind HTTP, or on a virtual clock for whole-trace simulation, and
// keeps every request's ground-truth timeline so tests can measure the harness's own error.
//
// It must never import loadgen, metrics or reports: it shares only the wire protocol (and the
// reference tokenizer) with the rest of llmbench.
package refengine
