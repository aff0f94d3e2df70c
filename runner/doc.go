// Package runner holds the CLI's use cases: it reads a trace, runs a Producer (loadgen over
// HTTP, or the simulator of runner/engineadapter) against a target, streams Records to a
// results directory (summary.json, requests.msgpack, report.html), summarizes them with
// metrics and renders reports. Run (RunHTTP, Execute), ab, sweep and the results-directory
// helpers live here so that cmd/llmbench stays a thin layer of flags.
//
// It must not import refengine: the embedded reference engine is started by
// runner/engineadapter and handed in as an endpoint (or, for simulate, as a Producer). It
// installs no signal handlers (Interrupts carries the channel the CLI owns) and computes no
// statistic (metrics does).
//
// runner is not a supported Go API: its only client is cmd/llmbench and it changes with the
// commands. Programs should use traces, workloads, loadgen, metrics, reports and refengine.
// See docs/ARCHITECTURE.md.
package runner
