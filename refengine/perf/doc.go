// Package perf is the reference engine's performance model: model and GPU profiles and a
// roofline that prices each engine step (prefill chunks, decode tokens and speculative verify
// tokens of a continuous batch) and sizes the PagedAttention KV cache.
//
// It is pure arithmetic: no clocks, no I/O, no global mutable state. The scheduler in
// refengine decides what runs in a step; this package only says how long it takes.
package perf
