// Package workloads generates synthetic traffic with the shape of production: arrival
// processes (constant, Poisson, Gamma, on/off, ramp, diurnal), length distributions, presets
// (chat, rag, summarization, code, reasoning, agentic, mixed), shared-prefix groups, multi-turn
// sessions, prompt text synthesis with exact token counts, and rescaling.
//
// Schedules are pure functions of a seed that produce absolute arrival offsets. It produces
// traces.Request values and must never talk to the network or measure anything.
package workloads
