// Package workloads generates synthetic traffic with the shape of production: arrival
// processes (constant, Poisson, Gamma with a burstiness knob, on/off bursts, linear ramp,
// diurnal curve), length distributions (fixed, uniform, normal, log-normal, Zipf, empirical)
// with optional input/output correlation, presets (chat, rag, summarization, code, reasoning,
// agentic, mixed), shared-prefix groups, multi-turn sessions with growing context, and prompt
// text synthesis with exact token counts.
//
// A Spec describes a workload completely (it is also the JSON spec file of `llmbench gen`);
// Generate(spec) is a pure function of it, seed included, that returns traces.Request values
// with absolute arrival offsets. Nothing here computes "sleep between requests": replaying at
// the right time is the load generator's job. Trace-level tools (scale, slice, sample, filter)
// live in package traces.
//
// Prompter (NewPrompter(...).Text, which caches shared blocks) turns a request that has only token
// counts into text with exactly InputTokens tokens under a tokenizer, deterministic from a seed,
// with byte-identical leading text for requests that share leading hash_ids.
//
// GenerateProbes (ProbeSpec) makes quality probes: graded chat requests whose answers are
// planted in the prompt (long-context-probe, tool-calling, json-output, and a temperature
// sweep over any of them), each with its expect checks (see probes.go).
//
// The package must never talk to the network, read the clock, or measure anything; it reads no
// files either (the CLI loads spec files and empirical source traces and passes them in).
//
// This package is a supported Go API: Spec (whose JSON form is the spec file of `llmbench
// gen`), Generate, Arrivals, ParseDist, the presets, Prompter and the probes (GenerateProbes,
// ProbePresets, ProbeTools, ProbeInvoiceSchema). A spec and seed give the
// same trace in every release unless a release note says otherwise.
package workloads
