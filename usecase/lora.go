package usecase

import (
	"fmt"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// applyLoRA copies --lora and --max-loras into cfg (issue 38, docs/adapters.md).
func (f *EngineOptions) applyLoRA(cfg *refengine.Config) error {
	for _, s := range f.LoRAs {
		l, err := refengine.ParseLoRA(s)
		if err != nil {
			return err
		}
		cfg.LoRAs = append(cfg.LoRAs, l)
	}
	if f.MaxLoRAs < 0 {
		return fmt.Errorf("--max-loras %d: must be >= 1 (0: 1 slot)", f.MaxLoRAs)
	}
	if f.MaxLoRAs > 0 && len(cfg.LoRAs) == 0 {
		return fmt.Errorf("--max-loras %d needs adapters to hold: give --lora NAME[:RANK]", f.MaxLoRAs)
	}
	cfg.MaxLoRAs = f.MaxLoRAs
	return nil
}

// changed reports whether the engine flag name was given.
func (f *EngineOptions) changed(name string) bool { return f.Changed != nil && f.Changed(name) }

// CalibrateFitOptions is what calibrate fits besides the constants: the scheduling limits
// the engine flags did not give (issue 35, item 4).
func (f *EngineOptions) CalibrateFitOptions(o *calibrate.Options) {
	o.FitMaxNumSeqs = !f.changed("max-num-seqs")
	o.FitMaxNumBatchedTokens = !f.changed("max-num-batched-tokens")
}

// applyProfileCalibration applies the calibration block of the --profiles file data
// (calibrate.Calibration) to cfg when cfg's GPU is the one calibrated: the learned cap on
// running sequences, token budget per step and the longest request the server declared, each
// unless its flag was given.
func (f *EngineOptions) applyProfileCalibration(cfg *refengine.Config, reg *perf.Registry, data []byte) error {
	c, err := calibrate.ParseProfileCalibration(data, f.Profiles)
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
	if c.MaxNumSeqs > 0 && !f.changed("max-num-seqs") {
		cfg.MaxNumSeqs = c.MaxNumSeqs
	}
	if c.MaxNumBatchedTokens > 0 && !f.changed("max-num-batched-tokens") {
		cfg.MaxNumBatchedTokens = c.MaxNumBatchedTokens
	}
	if c.MaxModelLen > 0 && !f.changed("max-model-len") {
		cfg.MaxModelLen = c.MaxModelLen
	}
	return nil
}
