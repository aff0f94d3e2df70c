package perf

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"reflect"
	"sort"
	"strings"
	"time"
)

// Model describes a transformer by the numbers that decide its serving cost. The fields mirror
// a Hugging Face config.json (num_hidden_layers, hidden_size, num_attention_heads,
// num_key_value_heads, head_dim, intermediate_size, vocab_size, max_position_embeddings) plus
// the parameter counts published on the model card.
type Model struct {
	Name    string
	Layers  int     // transformer blocks (num_hidden_layers)
	Hidden  int     // residual width (hidden_size)
	Heads   int     // query heads (num_attention_heads)
	KVHeads int     // key/value heads (num_key_value_heads); < Heads means grouped-query attention
	HeadDim int     // per-head width (head_dim)
	FFN     int     // MLP intermediate width (intermediate_size), per expert for MoE
	Vocab   int     // vocabulary size (vocab_size)
	Params  float64 // total parameters, all experts included (model card)
	// ActiveParams is the number of parameters each token passes through: equal to Params for
	// a dense model, smaller for a mixture-of-experts model.
	ActiveParams float64
	// Experts and ActiveExperts are the MoE expert count per layer and the experts each token
	// is routed to (num_local_experts, num_experts_per_tok); 0 for a dense model.
	Experts, ActiveExperts int
	MaxContext             int // longest sequence the model accepts (max_position_embeddings)
	// Vision prices images (vision.go); the zero value means DefaultVision.
	Vision Vision
}

// GPU describes one accelerator by its data-sheet numbers.
type GPU struct {
	Name     string
	MemBytes float64 // HBM capacity in bytes (the data sheet's decimal GB × 1e9)
	MemBW    float64 // HBM bandwidth, bytes/s
	// Dense (no sparsity) peak tensor-core throughput per second. 0 means the format is not
	// supported and the bf16 rate is used instead.
	BF16FLOPS, FP8FLOPS, INT8OPS float64
	// LinkBW is the per-GPU, per-direction interconnect bandwidth (NVLink), bytes/s, used for
	// the tensor-parallel all-reduce.
	LinkBW float64
	// BWEff and FLOPEff, when > 0, are this GPU's achievable fractions of peak bandwidth and
	// FLOP/s, used when Config leaves its own at 0 (the built-in profiles leave them 0, so the
	// package defaults apply). KVBWEff likewise stands in for Config.KVBWEff.
	BWEff, FLOPEff, KVBWEff float64
	// StepOverhead, when > 0, is the per-step CPU cost of a deployment on this GPU, used when
	// Config leaves its own at 0. A calibrated profile (llmbench calibrate) sets it with the
	// efficiencies; the built-in profiles leave it 0.
	StepOverhead time.Duration

	// StepOverheadPerSeq, when > 0, is a deployment's host time per scheduled sequence per
	// step (Config.StepOverheadPerSeq), used when Config leaves its own at 0; the built-in
	// profiles leave it 0 (package documentation, "Host overhead per sequence").
	StepOverheadPerSeq time.Duration
	// HostBW is the host-to-GPU bandwidth per direction (PCIe), bytes/s: the data sheet's
	// bidirectional PCIe figure halved. It prices copying a LoRA adapter into a slot
	// (refengine's Config.LoRAs); 0 means DefaultHostBW.
	HostBW float64
	// Power (issue 39; power.go): the board's idle and maximum power. Zero: the built-in
	// figures for the GPU's name, if any (PowerOf).
	Power Power
}

// DefaultHostBW is the host-to-GPU bandwidth of a profile that gives none: PCIe Gen4 x16,
// 64 GB/s both ways, 32 GB/s per direction.
const DefaultHostBW = 32e9

// HostBandwidth is g.HostBW, or DefaultHostBW when the profile gives none.
func (g GPU) HostBandwidth() float64 {
	if g.HostBW > 0 {
		return g.HostBW
	}
	return DefaultHostBW
}

// IsMoE reports whether the model routes tokens to a subset of experts.
func (m Model) IsMoE() bool { return m.Experts > 0 }

// Validate checks that the model's numbers are usable and consistent.
func (m Model) Validate() error {
	name := m.Name
	if name == "" {
		name = "(unnamed model)"
	}
	check := func(field string, v int) error {
		if v <= 0 {
			return fmt.Errorf("model %s: %s must be > 0, got %d", name, field, v)
		}
		return nil
	}
	for _, c := range []struct {
		f string
		v int
	}{{"layers", m.Layers}, {"hidden", m.Hidden}, {"heads", m.Heads}, {"kv_heads", m.KVHeads},
		{"head_dim", m.HeadDim}, {"ffn", m.FFN}, {"vocab", m.Vocab}, {"max_context", m.MaxContext}} {
		if err := check(c.f, c.v); err != nil {
			return err
		}
	}
	if m.Heads%m.KVHeads != 0 {
		return fmt.Errorf("model %s: heads (%d) must be a multiple of kv_heads (%d)", name, m.Heads, m.KVHeads)
	}
	if !(m.Params > 0) || math.IsInf(m.Params, 0) {
		return fmt.Errorf("model %s: params must be a positive number of parameters (e.g. 8.03e9), got %g", name, m.Params)
	}
	if !(m.ActiveParams > 0) || m.ActiveParams > m.Params {
		return fmt.Errorf("model %s: active_params must be in (0, params=%g], got %g", name, m.Params, m.ActiveParams)
	}
	if m.Experts < 0 || m.ActiveExperts < 0 {
		return fmt.Errorf("model %s: experts and active_experts must be >= 0", name)
	}
	if m.Experts == 0 && m.ActiveExperts != 0 {
		return fmt.Errorf("model %s: active_experts is set but experts is 0; set experts for a mixture-of-experts model", name)
	}
	if m.Experts > 0 {
		if m.ActiveExperts <= 0 || m.ActiveExperts > m.Experts {
			return fmt.Errorf("model %s: active_experts must be in [1, experts=%d], got %d", name, m.Experts, m.ActiveExperts)
		}
		if m.ActiveExperts < m.Experts && !(m.ActiveParams < m.Params) {
			return fmt.Errorf("model %s: a mixture-of-experts model needs active_params < params", name)
		}
	}
	return nil
}

// Validate checks that the GPU's numbers are usable.
func (g GPU) Validate() error {
	name := g.Name
	if name == "" {
		name = "(unnamed gpu)"
	}
	pos := func(field string, v float64) error {
		if !(v > 0) || math.IsInf(v, 0) {
			return fmt.Errorf("gpu %s: %s must be > 0 and finite, got %g", name, field, v)
		}
		return nil
	}
	if err := pos("memory", g.MemBytes); err != nil {
		return err
	}
	if err := pos("memory bandwidth", g.MemBW); err != nil {
		return err
	}
	if err := pos("bf16 FLOP/s", g.BF16FLOPS); err != nil {
		return err
	}
	for _, c := range []struct {
		f string
		v float64
	}{{"fp8 FLOP/s", g.FP8FLOPS}, {"int8 OP/s", g.INT8OPS}, {"link bandwidth", g.LinkBW}, {"host bandwidth", g.HostBW}} {
		if c.v < 0 || math.IsNaN(c.v) || math.IsInf(c.v, 0) {
			return fmt.Errorf("gpu %s: %s must be >= 0 (0 = unsupported), got %g", name, c.f, c.v)
		}
	}
	for _, c := range []struct {
		f string
		v float64
	}{{"bw_eff", g.BWEff}, {"flop_eff", g.FLOPEff}, {"kv_bw_eff", g.KVBWEff}} {
		if c.v < 0 || c.v > 1 || math.IsNaN(c.v) {
			return fmt.Errorf("gpu %s: %s must be in (0, 1], or 0 for the default, got %g", name, c.f, c.v)
		}
	}
	if g.StepOverhead < 0 {
		return fmt.Errorf("gpu %s: step_overhead_us must be >= 0 (0 for the default), got %v", name, g.StepOverhead)
	}
	if g.StepOverheadPerSeq < 0 {
		return fmt.Errorf("gpu %s: step_overhead_per_seq_us must be >= 0 (0 for none), got %v", name, g.StepOverheadPerSeq)
	}
	return nil
}

// Built-in profiles. Sources are listed in the package documentation.
var builtinModels = []Model{
	{Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336,
		Vocab: 128256, Params: 8.03e9, ActiveParams: 8.03e9, MaxContext: 131072},
	{Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128, FFN: 28672,
		Vocab: 128256, Params: 70.6e9, ActiveParams: 70.6e9, MaxContext: 131072},
	{Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128, FFN: 14336,
		Vocab: 32000, Params: 46.7e9, ActiveParams: 12.9e9, Experts: 8, ActiveExperts: 2, MaxContext: 32768},
	{Name: "llama-3.2-1b", Layers: 16, Hidden: 2048, Heads: 32, KVHeads: 8, HeadDim: 64, FFN: 8192,
		Vocab: 128256, Params: 1.24e9, ActiveParams: 1.24e9, MaxContext: 131072},
}

var builtinGPUs = []GPU{
	{Name: "a100-80gb", MemBytes: 80e9, MemBW: 2.039e12, BF16FLOPS: 312e12, FP8FLOPS: 0, INT8OPS: 624e12, LinkBW: 300e9, HostBW: 32e9},
	{Name: "h100-sxm", MemBytes: 80e9, MemBW: 3.35e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12, INT8OPS: 1979e12, LinkBW: 450e9, HostBW: 64e9},
	{Name: "h200", MemBytes: 141e9, MemBW: 4.8e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12, INT8OPS: 1979e12, LinkBW: 450e9, HostBW: 64e9},
}

// Aliases map an accepted spelling (after normalization) to a canonical profile name.
var builtinModelAliases = map[string]string{
	"llama3.1-8b":                 "llama-3.1-8b",
	"llama-3.1-8b-instruct":       "llama-3.1-8b",
	"llama3.1-8b-instruct":        "llama-3.1-8b",
	"meta-llama-3.1-8b":           "llama-3.1-8b",
	"meta-llama-3.1-8b-instruct":  "llama-3.1-8b",
	"llama3.1-70b":                "llama-3.1-70b",
	"llama-3.1-70b-instruct":      "llama-3.1-70b",
	"llama3.1-70b-instruct":       "llama-3.1-70b",
	"meta-llama-3.1-70b":          "llama-3.1-70b",
	"meta-llama-3.1-70b-instruct": "llama-3.1-70b",
	"mixtral":                     "mixtral-8x7b",
	"mixtral-8x7b-v0.1":           "mixtral-8x7b",
	"mixtral-8x7b-instruct":       "mixtral-8x7b",
	"mixtral-8x7b-instruct-v0.1":  "mixtral-8x7b",
	"llama3.2-1b":                 "llama-3.2-1b",
	"llama-3.2-1b-instruct":       "llama-3.2-1b",
	"llama3.2-1b-instruct":        "llama-3.2-1b",
}

var builtinGPUAliases = map[string]string{
	"a100":       "a100-80gb",
	"a100-80g":   "a100-80gb",
	"a100-sxm":   "a100-80gb",
	"a100-sxm4":  "a100-80gb",
	"h100":       "h100-sxm",
	"h100-80gb":  "h100-sxm",
	"h100-sxm5":  "h100-sxm",
	"h200-sxm":   "h200",
	"h200-141gb": "h200",
}

// normalizeName lower-cases a profile name, drops a Hugging Face organisation prefix
// ("meta-llama/", "mistralai/") and turns spaces and underscores into dashes.
func normalizeName(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		s = s[i+1:]
	}
	s = strings.NewReplacer(" ", "-", "_", "-").Replace(s)
	return s
}

// Registry is a set of model and GPU profiles addressed by name. The zero value is empty;
// NewRegistry returns one holding the built-in profiles. A Registry is not safe for concurrent
// mutation; build it fully (Add, LoadJSON) before sharing it, after which concurrent lookups
// are safe.
type Registry struct {
	models       map[string]Model
	gpus         map[string]GPU
	modelAliases map[string]string
	gpuAliases   map[string]string
}

// NewRegistry returns a fresh registry holding the built-in profiles (and their aliases).
// The built-in profiles are valid by construction (a test validates each).
func NewRegistry() *Registry {
	r := &Registry{}
	r.init()
	for _, m := range builtinModels {
		r.models[m.Name] = m
	}
	for _, g := range builtinGPUs {
		r.gpus[g.Name] = g
	}
	for k, v := range builtinModelAliases {
		r.modelAliases[k] = v
	}
	for k, v := range builtinGPUAliases {
		r.gpuAliases[k] = v
	}
	return r
}

func (r *Registry) init() {
	if r.models == nil {
		r.models = map[string]Model{}
		r.gpus = map[string]GPU{}
		r.modelAliases = map[string]string{}
		r.gpuAliases = map[string]string{}
	}
}

// Clone returns an independent copy of r, so that a caller can add profiles to it without
// changing r.
func (r *Registry) Clone() *Registry {
	c := &Registry{}
	c.init()
	for k, v := range r.models {
		c.models[k] = v
	}
	for k, v := range r.gpus {
		c.gpus[k] = v
	}
	for k, v := range r.modelAliases {
		c.modelAliases[k] = v
	}
	for k, v := range r.gpuAliases {
		c.gpuAliases[k] = v
	}
	return c
}

// Add validates and adds profiles, replacing any existing profile of the same (normalized)
// name. Nothing is added when one profile is invalid.
func (r *Registry) Add(models []Model, gpus []GPU) error {
	r.init()
	for _, m := range models {
		if err := m.Validate(); err != nil {
			return err
		}
		if normalizeName(m.Name) == "" {
			return errors.New("model profile without a name")
		}
	}
	for _, g := range gpus {
		if err := g.Validate(); err != nil {
			return err
		}
		if normalizeName(g.Name) == "" {
			return errors.New("gpu profile without a name")
		}
	}
	for _, m := range models {
		k := normalizeName(m.Name)
		m.Name = k
		r.models[k] = m
		delete(r.modelAliases, k)
	}
	for _, g := range gpus {
		k := normalizeName(g.Name)
		g.Name = k
		r.gpus[k] = g
		delete(r.gpuAliases, k)
	}
	return nil
}

// LoadJSON parses a profile override file (see ParseProfiles) and adds its profiles.
func (r *Registry) LoadJSON(data []byte, name string) error {
	models, gpus, err := ParseProfiles(data, name)
	if err != nil {
		return err
	}
	if err := r.Add(models, gpus); err != nil {
		return fmt.Errorf("%s: %w", name, err)
	}
	return nil
}

// Model returns the model profile called name (case-insensitive; aliases and a Hugging Face
// organisation prefix are accepted). The error lists the valid names.
func (r *Registry) Model(name string) (Model, error) {
	k := normalizeName(name)
	if a, ok := r.modelAliases[k]; ok {
		k = a
	}
	if m, ok := r.models[k]; ok {
		return m, nil
	}
	return Model{}, fmt.Errorf("unknown model %q: valid models are %s (or add one with a profile file)",
		name, strings.Join(r.ModelNames(), ", "))
}

// GPU returns the GPU profile called name (case-insensitive; aliases accepted). The error
// lists the valid names.
func (r *Registry) GPU(name string) (GPU, error) {
	k := normalizeName(name)
	if a, ok := r.gpuAliases[k]; ok {
		k = a
	}
	if g, ok := r.gpus[k]; ok {
		return g, nil
	}
	return GPU{}, fmt.Errorf("unknown gpu %q: valid GPUs are %s (or add one with a profile file)",
		name, strings.Join(r.GPUNames(), ", "))
}

// ModelNames returns the canonical model names, sorted.
func (r *Registry) ModelNames() []string {
	names := make([]string, 0, len(r.models))
	for k := range r.models {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// GPUNames returns the canonical GPU names, sorted.
func (r *Registry) GPUNames() []string {
	names := make([]string, 0, len(r.gpus))
	for k := range r.gpus {
		names = append(names, k)
	}
	sort.Strings(names)
	return names
}

// builtin is never mutated after package initialization; the package-level lookups read it.
var builtin = NewRegistry()

// LookupModel returns a built-in model profile by name (case-insensitive, aliases accepted:
// "llama-3.1-8b", "meta-llama/Llama-3.1-8B-Instruct", "mixtral", ...).
func LookupModel(name string) (Model, error) { return builtin.Model(name) }

// LookupGPU returns a built-in GPU profile by name ("a100-80gb"/"a100", "h100-sxm"/"h100",
// "h200"), case-insensitive.
func LookupGPU(name string) (GPU, error) { return builtin.GPU(name) }

// ModelNames lists the built-in model profiles.
func ModelNames() []string { return builtin.ModelNames() }

// GPUNames lists the built-in GPU profiles.
func GPUNames() []string { return builtin.GPUNames() }

// profileFile is the JSON layout of a profile override file. GPU numbers use the units of
// data sheets (GB, GB/s, TFLOP/s) so that a file can be checked against them by eye.
type profileFile struct {
	Models []modelJSON `json:"models,omitempty"`
	GPUs   []gpuJSON   `json:"gpus"`

	// Calibration is what llmbench calibrate learned of the deployment besides the GPU's
	// constants (its cap on running sequences, its residuals); this package keeps it opaque:
	// calibrate.ParseProfileCalibration reads it.
	Calibration json.RawMessage `json:"calibration,omitempty"`
}

type modelJSON struct {
	Name          string  `json:"name"`
	Layers        int     `json:"layers"`
	Hidden        int     `json:"hidden"`
	Heads         int     `json:"heads"`
	KVHeads       int     `json:"kv_heads"`
	HeadDim       int     `json:"head_dim"`
	FFN           int     `json:"ffn"`
	Vocab         int     `json:"vocab"`
	Params        float64 `json:"params"`
	ActiveParams  float64 `json:"active_params"`
	Experts       int     `json:"experts"`
	ActiveExperts int     `json:"active_experts"`
	MaxContext    int     `json:"max_context"`

	// Vision (vision.go); omitted means DefaultVision.
	Vision *visionJSON `json:"vision,omitempty"`
}

type visionJSON struct {
	TilePx        int     `json:"tile_px"`
	TokensPerTile int     `json:"tokens_per_tile"`
	BaseTokens    int     `json:"base_tokens"`
	MaxSide       int     `json:"max_side"`
	ShortSide     int     `json:"short_side"`
	EncoderParams float64 `json:"encoder_params"`
}

type gpuJSON struct {
	Name       string  `json:"name"`
	MemGB      float64 `json:"mem_gb"`
	MemBWGBs   float64 `json:"mem_bw_gbs"`
	BF16TFLOPS float64 `json:"bf16_tflops"`
	FP8TFLOPS  float64 `json:"fp8_tflops"`
	INT8TOPS   float64 `json:"int8_tops"`
	LinkGBs    float64 `json:"link_gbs"`
	BWEff      float64 `json:"bw_eff,omitempty"`
	FLOPEff    float64 `json:"flop_eff,omitempty"`
	KVBWEff    float64 `json:"kv_bw_eff,omitempty"`
	// StepOverheadUS is the per-step overhead in microseconds.
	StepOverheadUS float64 `json:"step_overhead_us,omitempty"`

	// StepOverheadPerSeqUS is the host time per scheduled sequence per step, microseconds.
	StepOverheadPerSeqUS float64 `json:"step_overhead_per_seq_us,omitempty"`
	// HostGBs is the host-to-GPU (PCIe) bandwidth per direction, GB/s (0: DefaultHostBW).
	HostGBs float64 `json:"host_gbs,omitempty"`
}

// ParseProfiles parses a profile override file; name (usually the file's path) prefixes every
// error. The file is JSON:
//
//	{
//	  "models": [{"name": "my-13b", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40,
//	              "head_dim": 128, "ffn": 13824, "vocab": 32000, "params": 13.0e9,
//	              "max_context": 4096}],
//	  "gpus":   [{"name": "l40s", "mem_gb": 48, "mem_bw_gbs": 864, "bf16_tflops": 362,
//	              "fp8_tflops": 733, "int8_tops": 733, "link_gbs": 32}]
//	}
//
// Model fields follow config.json; "active_params" defaults to "params" and "experts" /
// "active_experts" are only for mixture-of-experts models. GPU fields are in data-sheet units:
// GB (1e9 bytes), GB/s, dense TFLOP/s (TOP/s for int8), per-direction link GB/s; an omitted
// fp8/int8 rate means unsupported. Optional "bw_eff", "flop_eff" and "kv_bw_eff" set the GPU's
// achievable fractions of peak (see Config.BWEff, Config.KVBWEff) and "step_overhead_us" its
// per-step overhead (Config.StepOverhead); llmbench calibrate writes them, and a top-level
// "calibration" object (the scheduling limits it learned, its residuals) that this parser
// carries without reading (calibrate.ParseProfileCalibration reads it). Optional
// "step_overhead_per_seq_us" is the host time per scheduled sequence per step
// (Config.StepOverheadPerSeq; 18.4 for vLLM 0.10, see "Host overhead per sequence"). Optional
// "host_gbs" is the host-to-GPU (PCIe) bandwidth per direction that prices LoRA adapter loads
// (default DefaultHostBW). Unknown fields are errors, so a typo cannot silently fall
// back to a default. Profiles are validated; names must be unique within the file.
func ParseProfiles(data []byte, name string) (models []Model, gpus []GPU, err error) {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f profileFile
	if err := dec.Decode(&f); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			line, col := lineCol(data, se.Offset)
			return nil, nil, fmt.Errorf("%s:%d:%d: invalid profile JSON: %w", name, line, col, err)
		}
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) && te.Field != "" {
			line, col := lineCol(data, te.Offset)
			return nil, nil, fmt.Errorf("%s:%d:%d: field %q must be %s, not %s: %w", name, line, col, te.Field, jsonKind(te.Type), te.Value, err)
		}
		return nil, nil, fmt.Errorf("%s: invalid profile file (want {\"models\": [...], \"gpus\": [...]}): %w", name, err)
	}
	if dec.More() {
		return nil, nil, fmt.Errorf("%s: trailing data after the profile object", name)
	}
	seen := map[string]bool{}
	for i, mj := range f.Models {
		m := Model{Name: mj.Name, Layers: mj.Layers, Hidden: mj.Hidden, Heads: mj.Heads, KVHeads: mj.KVHeads,
			HeadDim: mj.HeadDim, FFN: mj.FFN, Vocab: mj.Vocab, Params: mj.Params, ActiveParams: mj.ActiveParams,
			Experts: mj.Experts, ActiveExperts: mj.ActiveExperts, MaxContext: mj.MaxContext}
		if v := mj.Vision; v != nil {
			m.Vision = Vision{TilePx: v.TilePx, TokensPerTile: v.TokensPerTile, BaseTokens: v.BaseTokens,
				MaxSide: v.MaxSide, ShortSide: v.ShortSide, EncoderParams: v.EncoderParams}
			if err := m.Vision.validate(); err != nil {
				return nil, nil, fmt.Errorf("%s: models[%d]: vision: %w", name, i, err)
			}
		}
		if m.ActiveParams == 0 {
			m.ActiveParams = m.Params
		}
		k := normalizeName(m.Name)
		if k == "" {
			return nil, nil, fmt.Errorf("%s: models[%d]: name is required", name, i)
		}
		if seen[k] {
			return nil, nil, fmt.Errorf("%s: models[%d]: duplicate model name %q", name, i, m.Name)
		}
		seen[k] = true
		if err := m.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: models[%d]: %w", name, i, err)
		}
		models = append(models, m)
	}
	seen = map[string]bool{}
	for i, gj := range f.GPUs {
		g := GPU{Name: gj.Name, MemBytes: gj.MemGB * 1e9, MemBW: gj.MemBWGBs * 1e9, BF16FLOPS: gj.BF16TFLOPS * 1e12,
			FP8FLOPS: gj.FP8TFLOPS * 1e12, INT8OPS: gj.INT8TOPS * 1e12, LinkBW: gj.LinkGBs * 1e9, HostBW: gj.HostGBs * 1e9,
			BWEff: gj.BWEff, FLOPEff: gj.FLOPEff, KVBWEff: gj.KVBWEff,
			StepOverhead: time.Duration(math.Round(gj.StepOverheadUS * 1e3))}
		if math.IsNaN(gj.StepOverheadUS) || gj.StepOverheadUS < 0 || gj.StepOverheadUS > 1e7 {
			return nil, nil, fmt.Errorf("%s: gpus[%d]: step_overhead_us must be in [0, 1e7] microseconds, got %g", name, i, gj.StepOverheadUS)
		}
		if v := gj.StepOverheadPerSeqUS; math.IsNaN(v) || v < 0 || v > 1e5 {
			return nil, nil, fmt.Errorf("%s: gpus[%d]: step_overhead_per_seq_us must be in [0, 1e5] microseconds, got %g", name, i, v)
		}
		g.StepOverheadPerSeq = time.Duration(math.Round(gj.StepOverheadPerSeqUS * 1e3))
		k := normalizeName(g.Name)
		if k == "" {
			return nil, nil, fmt.Errorf("%s: gpus[%d]: name is required", name, i)
		}
		if seen[k] {
			return nil, nil, fmt.Errorf("%s: gpus[%d]: duplicate gpu name %q", name, i, g.Name)
		}
		seen[k] = true
		if err := g.Validate(); err != nil {
			return nil, nil, fmt.Errorf("%s: gpus[%d]: %w", name, i, err)
		}
		gpus = append(gpus, g)
	}
	return models, gpus, nil
}

// jsonKind names the JSON value a Go type decodes from.
func jsonKind(t reflect.Type) string {
	if t == nil {
		return "a different JSON type"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int64, reflect.Int32:
		return "an integer"
	case reflect.Float64, reflect.Float32:
		return "a number"
	case reflect.String:
		return "a string"
	case reflect.Slice:
		return "an array"
	case reflect.Struct:
		return "an object"
	}
	return "a " + t.String()
}

// lineCol converts a byte offset into a 1-based line and column.
func lineCol(data []byte, off int64) (int, int) {
	if off > int64(len(data)) {
		off = int64(len(data))
	}
	if off < 0 {
		off = 0
	}
	prefix := data[:off]
	line := 1 + bytes.Count(prefix, []byte{'\n'})
	col := int(off) - bytes.LastIndexByte(prefix, '\n')
	return line, col
}

// FormatProfiles encodes model and GPU profiles in the file format ParseProfiles reads
// (data-sheet units; a GPU's efficiencies and step overhead when set), one indented JSON
// object.
func FormatProfiles(models []Model, gpus []GPU) ([]byte, error) {
	var f profileFile
	for _, m := range models {
		if err := m.Validate(); err != nil {
			return nil, err
		}
		f.Models = append(f.Models, modelJSON{Name: m.Name, Layers: m.Layers, Hidden: m.Hidden, Heads: m.Heads,
			KVHeads: m.KVHeads, HeadDim: m.HeadDim, FFN: m.FFN, Vocab: m.Vocab, Params: m.Params,
			ActiveParams: m.ActiveParams, Experts: m.Experts, ActiveExperts: m.ActiveExperts, MaxContext: m.MaxContext})
		if v := m.Vision; v.TilePx > 0 {
			f.Models[len(f.Models)-1].Vision = &visionJSON{TilePx: v.TilePx, TokensPerTile: v.TokensPerTile,
				BaseTokens: v.BaseTokens, MaxSide: v.MaxSide, ShortSide: v.ShortSide, EncoderParams: v.EncoderParams}
		}
	}
	for _, g := range gpus {
		if err := g.Validate(); err != nil {
			return nil, err
		}
		f.GPUs = append(f.GPUs, gpuJSON{Name: g.Name, MemGB: g.MemBytes / 1e9, MemBWGBs: g.MemBW / 1e9,
			BF16TFLOPS: g.BF16FLOPS / 1e12, FP8TFLOPS: g.FP8FLOPS / 1e12, INT8TOPS: g.INT8OPS / 1e12,
			LinkGBs: g.LinkBW / 1e9, HostGBs: g.HostBW / 1e9, BWEff: g.BWEff, FLOPEff: g.FLOPEff, KVBWEff: g.KVBWEff,
			StepOverheadUS:       float64(g.StepOverhead) / 1e3,
			StepOverheadPerSeqUS: float64(g.StepOverheadPerSeq) / 1e3})
	}
	out, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return nil, err
	}
	return append(out, '\n'), nil
}
