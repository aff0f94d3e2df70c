package usecase

import (
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
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
