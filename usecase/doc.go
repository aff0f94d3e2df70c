// Package usecase holds the use cases of the llmbench commands: each command has an Options
// struct here that cobra fills in cmd/llmbench, and one function that runs it (AB for
// `llmbench ab`). It sits above runner and runner/engineadapter, so that a use case may start
// the embedded reference engine while runner stays free of refengine (docs/ARCHITECTURE.md,
// "Packages"). Tests build the Options directly, without cobra.
//
// The option groups shared by several commands (TargetOptions, LoadOptions, MetricOptions,
// OutputOptions, TraceOptions, EngineOptions, QualityOptions, FailureOptions) carry the flags'
// values and turn them into the packages' own option types, with the flag-named errors the
// CLI prints.
package usecase
