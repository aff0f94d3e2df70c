package main

import (
	"github.com/llmbench/llmbench/refengine"
)

// The engine flags as the tests of this package read them: the flags' values copied into
// usecase.EngineOptions (opts), then its methods.

// changedNames lists the engine flags set on the command line (see
// usecase.EngineOptions.ChangedNames).
func (f *engineFlags) changedNames() string {
	o := f.opts()
	return o.ChangedNames()
}

// changed reports whether any engine-only flag was set (see changedNames).
func (f *engineFlags) changed() bool { return f.changedNames() != "" }

// modelName is the model name given with --served-model-name or --model, "" when neither was
// set.
func (f *engineFlags) modelName() string {
	o := f.opts()
	return o.ModelName()
}

// engineSeed resolves --engine-seed (see usecase.EngineOptions.EngineSeed); the first call
// decides, later ones return the same seed.
func (f *engineFlags) engineSeed() (uint64, error) {
	o := f.opts()
	seed, err := o.EngineSeed()
	f.resolvedSeed = o.ResolvedSeed
	return seed, err
}

// config builds the engine configuration from the flags (see usecase.EngineOptions.Config).
func (f *engineFlags) config() (refengine.Config, error) {
	o := f.opts()
	cfg, err := o.Config()
	f.resolvedSeed = o.ResolvedSeed
	return cfg, err
}
