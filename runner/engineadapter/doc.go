// Package engineadapter joins the reference engine to the measurement pipeline. It is the one
// package allowed to import both refengine and the runner/loadgen/metrics side, because those
// two halves must not know each other (see docs/ARCHITECTURE.md, "Packages"):
//
//   - Simulator turns the engine's ground-truth timelines from a virtual-clock simulation into
//     metrics.Records (the producer behind `llmbench simulate` and `sweep --simulate`);
//   - StartEmbedded serves the engine in-process on a loopback port, the default target of
//     `run`, `ab` and `sweep` when no endpoint is given, and OpenTarget chooses between it and
//     an endpoint;
//   - Serve runs the engine as a standalone server (`llmbench serve`).
//
// It holds no statistics (metrics does) and no engine model (refengine does); it only maps one
// side's types onto the other's. It is not a supported Go API: the CLI is its only client.
package engineadapter
