// Package runner wires the pipeline for the CLI's commands: it reads a trace, runs loadgen
// against a target (or the simulate adapter), streams Records to a results directory, summarizes
// them with metrics and renders reports. It holds the use cases (run, simulate, ab, sweep) so
// that cmd/llmbench stays a thin layer of flags.
//
// It must not import refengine: the embedded reference engine is started by cmd and handed in as
// an endpoint (or, for simulate, as a function).
package runner
