package usecase

import (
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/runner"
)

// The reference engine's names the CLI lists in its flags' help, so that cmd/llmbench needs
// no import of the engine's packages.

// ModelNames are the built-in model profiles.
func ModelNames() []string { return perf.ModelNames() }

// GPUNames are the built-in GPU profiles.
func GPUNames() []string { return perf.GPUNames() }

// Wires are the engine's wire personalities (--wire).
var Wires = refengine.Wires

// Routers are the ways replicas share requests (--router); RouterRoundRobin is the default.
var Routers = refengine.Routers

// RouterRoundRobin is the default router.
const RouterRoundRobin = refengine.RouterRoundRobin

// Flag defaults the CLI shows, from the packages that own them.
const (
	// DefaultMaxLineBytes is --max-line-bytes' default (loadgen's).
	DefaultMaxLineBytes = loadgen.DefaultMaxLineBytes
	// SizingAuto is --prompt-sizing's default.
	SizingAuto = loadgen.SizingAuto
	// DefaultInputTolerance is --input-tolerance's default (metrics').
	DefaultInputTolerance = metrics.DefaultInputTolerance
	// DefaultMaxFailureRate is --max-failure-rate's default (runner's).
	DefaultMaxFailureRate = runner.DefaultMaxFailureRate
)

// ClientCPUs is the CPU capacity of the process as loadgen measured it at start (before the
// CLI's runtime tuning raises GOMAXPROCS; see loadgen.CPUs).
func ClientCPUs() int { return loadgen.CPUs }

// ReserveFileDescriptors raises the open files limit to the hard limit and reserves the
// kernel's descriptor table for it (runner.RaiseFDLimit, runner.ReserveFDTable): every stream
// in flight holds a descriptor, and growing the table later pauses the process.
func ReserveFileDescriptors() {
	soft, _, _ := runner.RaiseFDLimit()
	runner.ReserveFDTable(soft)
}
