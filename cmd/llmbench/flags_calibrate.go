package main

import (
	"fmt"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// calibrateFitOptions is what calibrate fits besides the constants: the scheduling limits
// the engine flags did not give (issue 35, item 4).
func calibrateFitOptions(f *engineFlags, o *calibrate.Options) {
	o.FitMaxNumSeqs = !f.fs.Lookup("max-num-seqs").Changed
	o.FitMaxNumBatchedTokens = !f.fs.Lookup("max-num-batched-tokens").Changed
}

// applyProfileCalibration applies the calibration block of the --profiles file data
// (calibrate.Calibration) to cfg when cfg's GPU is the one calibrated: the learned cap on
// running sequences and token budget per step, each unless its flag was given.
func (f *engineFlags) applyProfileCalibration(cfg *refengine.Config, reg *perf.Registry, data []byte) error {
	c, err := calibrate.ParseProfileCalibration(data, f.profiles)
	if err != nil {
		return fmt.Errorf("--profiles: %w", err)
	}
	if c == nil {
		return nil
	}
	name := cfg.GPU
	if name == "" {
		name = "h100" // refengine's default
	}
	g, err := reg.GPU(name)
	if err != nil || g.Name != c.GPU {
		return nil // another GPU than the one calibrated: the engine's checks report unknown names
	}
	if c.MaxNumSeqs > 0 && !f.fs.Lookup("max-num-seqs").Changed {
		cfg.MaxNumSeqs = c.MaxNumSeqs
	}
	if c.MaxNumBatchedTokens > 0 && !f.fs.Lookup("max-num-batched-tokens").Changed {
		cfg.MaxNumBatchedTokens = c.MaxNumBatchedTokens
	}
	return nil
}
