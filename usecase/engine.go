package usecase

import (
	"fmt"
	"os"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/tokenizer"
)

// EngineOptions are the reference-engine flags shared by serve, run, simulate and ab
// (--model, --gpu, --tp, --spec-k, --faults, …).
type EngineOptions struct {
	Model, GPU          string
	TP                  int
	WeightDtype         string
	KVDtype             string
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	BlockSize           int
	GPUMemUtil          float64
	NumBlocks           int
	MaxModelLen         int
	PrefixCaching       bool
	SpecK               int
	SpecAlpha           string
	SpecDraftModel      string
	// speculative methods (issue 22, item 5)
	SpecMethod      string
	SpecTree        int
	SpecRepetition  string
	SpecDraftTP     int
	Faults          string
	Noise           string
	ServedModelName string
	Profiles        string
	Seed            string
	// ResolvedSeed is the seed EngineSeed chose (once, so that "random" is one draw).
	ResolvedSeed uint64
	// Now is the clock --engine-seed random draws from (time.Now when nil).
	Now            func() time.Time
	Disaggregated  bool
	KVTransferGBps float64
	Wire           string
	Reasoning      float64
	Quality        string
	// LoRA adapters (issue 38; lora.go): --lora NAME[:RANK] and --max-loras.
	LoRAs    []string
	MaxLoRAs int
	// Changed says which engine flags were given (--model names the model an endpoint is
	// asked for; the others, given with --endpoint, are refused).
	Changed Changed
}

// EngineFlagNames lists the flags of EngineOptions.
var EngineFlagNames = []string{"model", "gpu", "tp", "weight-dtype", "kv-dtype", "max-num-seqs",
	"max-num-batched-tokens", "block-size", "gpu-memory-utilization", "num-gpu-blocks", "max-model-len",
	"enable-prefix-caching", "spec-k", "spec-alpha", "spec-draft-model", "spec-method", "spec-tree", "spec-repetition", "spec-draft-tp", "faults", "served-model-name",
	"profiles", "engine-seed", "disaggregated", "kv-transfer-gbps", "wire", "reasoning", "engine-noise", "quality",
	"lora", "max-loras"} // LoRA adapters (issue 38; lora.go)

// ChangedNames lists the engine flags given, other than --model and --served-model-name
// (which also name the model to request from an endpoint), sorted, as "--a, --b".
func (f *EngineOptions) ChangedNames() string {
	var names []string
	for _, n := range EngineFlagNames {
		if n == "model" || n == "served-model-name" {
			continue
		}
		if f.Changed.Has(n) {
			names = append(names, "--"+n)
		}
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// DefaultEngineSeed seeds the reference engine when --engine-seed is not given: a fixed seed,
// so that two identical plain runs produce identical outputs (ab and compare check hashes).
const DefaultEngineSeed = 1

// ModelName is the model name given with --served-model-name or --model, "" when neither was
// set.
func (f *EngineOptions) ModelName() string {
	if f.ServedModelName != "" {
		return f.ServedModelName
	}
	if f.Changed.Has("model") {
		return f.Model
	}
	return ""
}

// EngineSeed resolves --engine-seed: a positive integer, or "random" for one drawn from the
// clock. The engine takes 0 to mean "from the clock", so 0 is refused rather than passed on.
// The first call decides; later ones return the same seed.
func (f *EngineOptions) EngineSeed() (uint64, error) {
	if f.ResolvedSeed != 0 {
		return f.ResolvedSeed, nil
	}
	if strings.EqualFold(strings.TrimSpace(f.Seed), "random") {
		now := f.Now
		if now == nil {
			now = time.Now
		}
		for t := uint64(now().UnixNano()); f.ResolvedSeed == 0; t++ {
			f.ResolvedSeed = tokenizer.Mix(t)
		}
		return f.ResolvedSeed, nil
	}
	n, err := strconv.ParseUint(strings.TrimSpace(f.Seed), 10, 64)
	if err != nil || n == 0 {
		return 0, fmt.Errorf("--engine-seed %q: want a seed >= 1, or random", clip(f.Seed, 40))
	}
	f.ResolvedSeed = n
	return n, nil
}

// Config builds the engine configuration from the flags (TimeScale, APIKey and the limits are
// left for the command to set).
func (f *EngineOptions) Config() (refengine.Config, error) {
	seed, err := f.EngineSeed()
	if err != nil {
		return refengine.Config{}, err
	}
	cfg := refengine.Config{
		Model: f.Model, GPU: f.GPU, TP: f.TP, WeightDtype: f.WeightDtype, KVDtype: f.KVDtype,
		MaxNumSeqs: f.MaxNumSeqs, MaxNumBatchedTokens: f.MaxNumBatchedTokens, BlockSize: f.BlockSize,
		GPUMemUtil: f.GPUMemUtil, NumBlocks: f.NumBlocks, MaxModelLen: f.MaxModelLen,
		DisablePrefixCaching: !f.PrefixCaching, SpecK: f.SpecK,
		SpecDraftModel: f.SpecDraftModel, ServedModelName: f.ServedModelName, Seed: seed,
		SpecMethod: f.SpecMethod, SpecTree: f.SpecTree, SpecDraftTP: f.SpecDraftTP,
		Disaggregated: f.Disaggregated, KVTransferBW: f.KVTransferGBps * 1e9,
		Wire: f.Wire, ReasoningFraction: f.Reasoning,
	}
	if err := f.checkCombinations(); err != nil {
		return cfg, err
	}
	if err := f.specMethodConfig(&cfg); err != nil {
		return cfg, err
	}
	if err := f.parsed(&cfg); err != nil {
		return cfg, err
	}
	return cfg, nil
}

// checkCombinations refuses flags that need another flag.
func (f *EngineOptions) checkCombinations() error {
	if f.KVTransferGBps != 0 && !f.Disaggregated {
		return fmt.Errorf("--kv-transfer-gbps applies only with --disaggregated")
	}
	if f.SpecDraftTP != 0 && f.SpecDraftModel == "" {
		return fmt.Errorf("--spec-draft-tp %d needs --spec-draft-model (the draft it shards)", f.SpecDraftTP)
	}
	if f.SpecDraftModel != "" && f.SpecK == 0 {
		return fmt.Errorf("--spec-draft-model %s needs --spec-k > 0 (the draft length)", clip(f.SpecDraftModel, 60))
	}
	if f.SpecAlpha != "" && f.SpecK == 0 {
		return fmt.Errorf("--spec-alpha %s needs --spec-k > 0 (the draft length)", clip(f.SpecAlpha, 40))
	}
	return nil
}

// parsed sets the configuration parsed from text: faults, noise, the quality model and the
// profiles file.
func (f *EngineOptions) parsed(cfg *refengine.Config) error {
	faults, err := refengine.ParseFaults(f.Faults)
	if err != nil {
		return fmt.Errorf("--faults: %w", err)
	}
	cfg.Faults = faults
	if cfg.Noise, err = refengine.ParseNoise(f.Noise); err != nil {
		return fmt.Errorf("--engine-noise: %w", err)
	}
	if cfg.Quality, err = refengine.ParseQuality(f.Quality); err != nil {
		return fmt.Errorf("--quality: %w", err)
	}
	if err := f.applyLoRA(cfg); err != nil { // LoRA adapters (issue 38)
		return err
	}
	if f.Profiles != "" {
		data, err := os.ReadFile(f.Profiles)
		if err != nil {
			return fmt.Errorf("--profiles: %w", err)
		}
		reg := perf.NewRegistry()
		if err := reg.LoadJSON(data, f.Profiles); err != nil {
			return fmt.Errorf("--profiles: %w", err)
		}
		cfg.Profiles = reg
		if err := f.applyProfileCalibration(cfg, reg, data); err != nil {
			return err
		}
	}
	return nil
}

// specMethodConfig applies --spec-alpha, --spec-method, --spec-tree and --spec-repetition
// (issue 22, item 5); the engine checks how they combine.
func (f *EngineOptions) specMethodConfig(cfg *refengine.Config) error {
	if f.SpecAlpha != "" {
		alphas, err := refengine.ParseSpecAlphas(f.SpecAlpha)
		if err != nil {
			return fmt.Errorf("--spec-alpha: %w", err)
		}
		if len(alphas) == 1 {
			cfg.SpecAlpha = alphas[0]
		} else {
			cfg.SpecAlphas = alphas
		}
	}
	for _, fl := range []struct {
		name string
		set  bool
	}{{"--spec-method", f.SpecMethod != ""}, {"--spec-tree", f.SpecTree != 0}, {"--spec-repetition", f.SpecRepetition != ""}} {
		if fl.set && f.SpecK == 0 {
			return fmt.Errorf("%s needs --spec-k > 0 (the draft length)", fl.name)
		}
	}
	if f.SpecRepetition != "" {
		rep, err := refengine.ParseSpecRepetition(f.SpecRepetition)
		if err != nil {
			return fmt.Errorf("--spec-repetition: %w", err)
		}
		cfg.SpecRepetition = rep
	}
	return nil
}
