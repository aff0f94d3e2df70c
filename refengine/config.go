package refengine

import (
	"fmt"
	"math"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// Config configures an Engine (New) or a simulation (Simulate). The zero value of every field
// selects the documented default, so Config{} is Llama 3.1 8B in bf16 on one H100 SXM.
type Config struct {
	// Model and GPU name profiles in Profiles (aliases such as "h100" or
	// "meta-llama/Llama-3.1-8B-Instruct" work). Defaults "llama-3.1-8b" and "h100".
	Model string
	GPU   string
	// TP is the tensor-parallel degree, default 1.
	TP int
	// WeightDtype ("bf16", "fp8", "int8", "int4") and KVDtype ("bf16", "fp8"); default bf16.
	WeightDtype string
	KVDtype     string
	// Profiles resolves Model, GPU and SpecDraftModel; nil means the built-in profiles.
	Profiles *perf.Registry

	// Roofline tuning passed to perf.Config; zero selects perf's documented defaults
	// (BWEff 0.78, FLOPEff 0.75, StepOverhead 800µs, Combine "smooth", ReserveBytes 1e9; a
	// negative StepOverhead or ReserveBytes means none).
	BWEff        float64
	FLOPEff      float64
	StepOverhead time.Duration
	Combine      string
	ReserveBytes float64
	// StepOverheadPerSeq is host time per scheduled sequence per step (perf.Config's field of
	// the same name); 0 means none.
	StepOverheadPerSeq time.Duration

	// GPUMemUtil is the fraction of each GPU's memory the engine may use (default 0.9).
	GPUMemUtil float64
	// NumBlocks, when > 0, overrides the KV cache size computed from memory (in blocks).
	NumBlocks int
	// BlockSize is the PagedAttention block size in tokens (default 16).
	BlockSize int
	// MaxNumSeqs caps the running batch (default 256); MaxNumBatchedTokens is the token budget
	// of one step (default 8192). Both as in vLLM.
	MaxNumSeqs          int
	MaxNumBatchedTokens int
	// MaxModelLen is the longest prompt + output accepted; default the model's context length,
	// capped at the KV cache's capacity.
	MaxModelLen int
	// DisablePrefixCaching turns automatic prefix caching off (it is on by default, as in
	// vLLM v1).
	DisablePrefixCaching bool
	// HashIDTokens is the number of prompt tokens one hash_ids entry stands for (default 512,
	// as in the Mooncake traces and traces/FORMAT.md). A KV block is shared when the hash ids
	// covering its tokens, and all before them, are equal.
	HashIDTokens int

	// SpecK > 0 turns speculative decoding on with k draft tokens per verification pass. Each
	// draft token is accepted with probability SpecAlpha (default 0.8 when SpecK > 0),
	// independently, left to right. SpecDraftModel, when set, names a draft model profile
	// whose passes (k per step) are added to the step time and whose weights and KV share the
	// GPU memory; without it drafting is free (n-gram, EAGLE-like heads).
	SpecK          int
	SpecAlpha      float64
	SpecDraftModel string

	// Speculative methods (issue 22, item 5). SpecMethod says who drafts and so what drafting
	// costs (perf.SpecMethods; "" is "draft" with SpecDraftModel, else "free", the model
	// above): "draft" prices SpecDraftModel's k passes; "eagle" k passes of an EAGLE head
	// (perf.EAGLEHead) of the target; "medusa" one pass of k Medusa heads
	// (perf.MedusaHeadParams) and the verification of a tree of SpecTree candidates; "ngram"
	// no GPU work, drafting only when the request's text repeats (SpecRepetition).
	SpecMethod string
	// SpecAlphas, when set, gives the acceptance probability per draft position (position i
	// accepted with SpecAlphas[i-1] given the earlier ones; the last entry repeats), in place
	// of SpecAlpha; each in [0, 1]. Not with "ngram".
	SpecAlphas []float64
	// SpecTree is the number of candidate tokens an "eagle" or "medusa" step verifies (the
	// draft tree's nodes below its root, SpecK levels deep); 0 means SpecK (a chain) for
	// eagle and 4 × SpecK for medusa. The acceptance probabilities are then those of the
	// tree. Must be >= SpecK.
	SpecTree int
	// SpecRepetition is, for "ngram", the probability that a request's next text repeats text
	// it has seen, per request class (SimRequest.Class); the key "" is the default for other
	// classes and for HTTP requests, which carry no class (default 0.5). A decode step finds
	// a match with that probability, and each drafted token is then accepted with it.
	SpecRepetition map[string]float64
	// SpecDraftTP is the tensor-parallel degree of SpecDraftModel (0: TP), as vLLM's
	// speculative_draft_tensor_parallel_size.
	SpecDraftTP int

	// Disaggregated splits the engine into a prefill pool and a decode pool, each with the
	// full GPU setup (Model, GPU, TP, memory): a request's prompt and first token are computed
	// in the prefill pool, then its KV cache moves to the decode pool, taking
	// tokens × KV bytes per token / KVTransferBW (bytes/s; 0 selects TP × NVLink bandwidth ×
	// perf's link efficiency), and the decode pool generates the rest.
	Disaggregated bool
	KVTransferBW  float64

	// ServedModelName is the model name clients must send (default Model as given).
	ServedModelName string
	// DefaultMaxTokens is the output length of a chat request without max_tokens (default
	// 1024; completions default to 16 as in the OpenAI API). The engine never stops early on
	// its own, so this stands in for the natural end of an answer.
	DefaultMaxTokens int

	// TimeScale runs the real clock that many times faster than simulated GPU time (default
	// 1). Ignored when Clock is set.
	TimeScale float64
	// Clock, when set, replaces the scaled real clock (for example a VirtualClock).
	Clock Clock
	// Now is the wall clock (default time.Now); it feeds the scaled clock and "created".
	Now func() time.Time
	// Seed seeds unseeded sampling and fault draws (default: from the wall clock, so unseeded
	// sampling varies between runs; faults stay reproducible for a fixed Seed).
	Seed uint64

	// Faults injects failures into HTTP responses (see ParseFaults).
	Faults Faults
	// Noise makes step times vary as a real server's do (see ParseNoise); the zero value adds
	// none.
	Noise Noise
	// APIKey, when set, requires "Authorization: Bearer <APIKey>" on /v1/ endpoints.
	APIKey string
	// MaxBodyBytes bounds a request body (default 8 MiB); a larger declared Content-Length
	// is answered 413 before any of it is read.
	MaxBodyBytes int64
	// BodyReadTimeout bounds reading a request body, in real time (default 30 s): a client
	// that sends headers and then no body gets 408 instead of holding a connection forever.
	BodyReadTimeout time.Duration
	// MaxConcurrentRequests caps generation requests in flight (0: no cap); more get 429.
	MaxConcurrentRequests int
	// RateLimit caps accepted generation requests per second of wall time, with a burst of
	// max(1, RateLimit) (0: no cap); more get 429.
	RateLimit float64
	// TimelineCapacity is how many finished requests' timelines the engine keeps (default
	// 10000; in-flight ones are always kept).
	TimelineCapacity int

	// Wire is the wire personality of streamed responses: how the named server frames a
	// stream (one of Wires; "" is vllm). It changes bytes on the wire, never the timelines.
	Wire string
	// ReasoningFraction makes the first floor(ReasoningFraction × output) tokens of every
	// chat response reasoning, streamed before the answer in the personality's reasoning
	// field (vLLM's delta.reasoning_content by default; message.reasoning_content when not
	// streamed); 0 turns reasoning off. They are output tokens like the others (usage counts
	// them, and reports them in completion_tokens_details.reasoning_tokens where the server
	// does; the timeline counts them too).
	ReasoningFraction float64

	// Quality is the error model of the engine's answers (tools, structured output, lookups
	// in long documents; see the package doc, "Answers", and ParseQuality). The zero value
	// answers everything right.
	Quality Quality

	// LoRA adapters (issue 38; lora.go). LoRAs are the adapters served on the base model,
	// each requested by its name; MaxLoRAs is the number of adapter slots on the GPU (vLLM's
	// --max-loras; 0 means 1, vLLM's default; it needs LoRAs). A request naming an adapter
	// not in a slot waits for one; loading costs the adapter's bytes over the host link.
	LoRAs    []LoRA
	MaxLoRAs int
}

// resolved is a Config with defaults applied and the performance model built.
type resolved struct {
	Config
	roof        *perf.Roofline
	model       perf.Model
	draft       perf.Model
	specMethod  string
	specTree    int
	alphaGiven  bool // SpecAlpha was set, not defaulted
	numBlocks   int
	maxModelLen int
	lora        *loraModel // nil without adapters (lora.go)
}

// resolve fills the defaults, validates the result and derives the
// performance model: withDefaults, validate, then build.
func (c Config) resolve() (*resolved, error) {
	alphaGiven := c.SpecAlpha != 0
	c = c.withDefaults()
	if err := c.validate(); err != nil {
		return nil, err
	}
	return c.build(alphaGiven)
}

// withDefaults returns c with every zero field that has a default filled in.
func (c Config) withDefaults() Config {
	if c.Model == "" {
		c.Model = "llama-3.1-8b"
	}
	if c.GPU == "" {
		c.GPU = "h100"
	}
	if c.TP == 0 {
		c.TP = 1
	}
	if c.BlockSize == 0 {
		c.BlockSize = perf.DefaultBlockSize
	}
	if c.MaxNumSeqs == 0 {
		c.MaxNumSeqs = 256
	}
	if c.MaxNumBatchedTokens == 0 {
		c.MaxNumBatchedTokens = 8192
	}
	if c.HashIDTokens == 0 {
		c.HashIDTokens = 512
	}
	if c.SpecK > 0 && c.SpecAlpha == 0 && len(c.SpecAlphas) == 0 {
		c.SpecAlpha = 0.8
	}
	if c.ServedModelName == "" {
		c.ServedModelName = c.Model
	}
	if c.DefaultMaxTokens == 0 {
		c.DefaultMaxTokens = 1024
	}
	if c.TimeScale == 0 {
		c.TimeScale = 1
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = 8 << 20
	}
	if c.BodyReadTimeout == 0 {
		c.BodyReadTimeout = 30 * time.Second
	}
	if c.TimelineCapacity == 0 {
		c.TimelineCapacity = 10000
	}
	return c
}

// validate rejects a defaulted config whose fields are out of range or name
// an unknown wire personality, noise or quality setting.
func (c Config) validate() error {
	switch {
	case c.TP < 1:
		return fmt.Errorf("refengine: TP %d: the tensor-parallel degree must be >= 1", c.TP)
	case c.BlockSize < 1:
		return fmt.Errorf("refengine: BlockSize %d: must be >= 1 (vLLM uses 16)", c.BlockSize)
	case c.MaxNumSeqs < 1:
		return fmt.Errorf("refengine: MaxNumSeqs %d: must be >= 1", c.MaxNumSeqs)
	case c.MaxNumBatchedTokens < 1:
		return fmt.Errorf("refengine: MaxNumBatchedTokens %d: must be >= 1", c.MaxNumBatchedTokens)
	case c.SpecK < 0:
		return fmt.Errorf("refengine: SpecK %d: the draft length must be >= 0", c.SpecK)
	case c.SpecAlpha < 0 || c.SpecAlpha > 1 || math.IsNaN(c.SpecAlpha):
		return fmt.Errorf("refengine: SpecAlpha %g: the acceptance probability must be in [0, 1]", c.SpecAlpha)
	case c.TimeScale < 0 || math.IsNaN(c.TimeScale) || math.IsInf(c.TimeScale, 0):
		return fmt.Errorf("refengine: TimeScale %g: must be > 0 (2 runs twice as fast as the GPU)", c.TimeScale)
	case c.NumBlocks < 0:
		return fmt.Errorf("refengine: NumBlocks %d: must be >= 0 (0 sizes the cache from memory)", c.NumBlocks)
	case c.MaxModelLen < 0:
		return fmt.Errorf("refengine: MaxModelLen %d: must be >= 0", c.MaxModelLen)
	case c.RateLimit < 0 || c.MaxConcurrentRequests < 0 || c.MaxBodyBytes < 0 || c.BodyReadTimeout < 0:
		return fmt.Errorf("refengine: RateLimit, MaxConcurrentRequests, MaxBodyBytes and BodyReadTimeout must be >= 0")
	case c.DefaultMaxTokens < 1:
		return fmt.Errorf("refengine: DefaultMaxTokens %d: must be >= 1", c.DefaultMaxTokens)
	case c.KVTransferBW < 0 || math.IsNaN(c.KVTransferBW):
		return fmt.Errorf("refengine: KVTransferBW %g: must be >= 0 bytes/s (0: the GPUs' links)", c.KVTransferBW)
	case c.HashIDTokens < 0:
		return fmt.Errorf("refengine: HashIDTokens %d: must be >= 0", c.HashIDTokens)
	case !(c.ReasoningFraction >= 0 && c.ReasoningFraction < 1):
		return fmt.Errorf("refengine: ReasoningFraction %g: must be in [0, 1) (0.5 makes half of each answer reasoning)", c.ReasoningFraction)
	}
	if _, err := personalityFor(c.Wire); err != nil {
		return err
	}
	if err := c.Noise.validate(); err != nil {
		return err
	}
	if err := c.Quality.validate(); err != nil {
		return err
	}
	return nil
}

// build resolves the model, GPU and draft profiles of a validated config and
// derives the roofline, the KV-cache size and the maximum model length.
func (c Config) build(alphaGiven bool) (*resolved, error) {
	reg := c.Profiles
	if reg == nil {
		reg = perf.NewRegistry()
	}
	r := &resolved{Config: c, alphaGiven: alphaGiven}
	var err error
	if r.model, err = reg.Model(c.Model); err != nil {
		return nil, fmt.Errorf("refengine: model: %w", err)
	}
	gpu, err := reg.GPU(c.GPU)
	if err != nil {
		return nil, fmt.Errorf("refengine: gpu: %w", err)
	}
	pc := perf.Config{
		Model: r.model, GPU: gpu, TP: c.TP, WeightDtype: c.WeightDtype, KVDtype: c.KVDtype,
		BWEff: c.BWEff, FLOPEff: c.FLOPEff, StepOverhead: c.StepOverhead, Combine: c.Combine,
		GPUMemUtil: c.GPUMemUtil, ReserveBytes: c.ReserveBytes, BlockSize: c.BlockSize,
		StepOverheadPerSeq: c.StepOverheadPerSeq,
	}
	if c.SpecDraftModel != "" {
		if c.SpecK == 0 {
			return nil, fmt.Errorf("refengine: SpecDraftModel %q needs SpecK > 0 (the draft length)", c.SpecDraftModel)
		}
		if r.draft, err = reg.Model(c.SpecDraftModel); err != nil {
			return nil, fmt.Errorf("refengine: draft model: %w", err)
		}
		pc.Draft = r.draft
		pc.DraftTP = c.SpecDraftTP
	} else if c.SpecDraftTP != 0 {
		return nil, fmt.Errorf("refengine: SpecDraftTP %d needs SpecDraftModel (the draft model it shards)", c.SpecDraftTP)
	}
	if err := r.resolveSpecMethod(&pc); err != nil {
		return nil, err
	}
	if r.roof, err = perf.New(pc); err != nil {
		return nil, fmt.Errorf("refengine: %w", err)
	}
	r.numBlocks = r.roof.NumBlocks()
	if c.NumBlocks > 0 {
		r.numBlocks = c.NumBlocks
	}
	r.maxModelLen = r.model.MaxContext
	if c.MaxModelLen > 0 {
		r.maxModelLen = c.MaxModelLen
	}
	if r.maxModelLen <= 0 {
		r.maxModelLen = 131072
	}
	r.maxModelLen = min(r.maxModelLen, r.numBlocks*c.BlockSize)
	if err := r.resolveLoRA(); err != nil {
		return nil, err
	}
	return r, nil
}

// newCore builds a scheduler for a resolved config.
func (r *resolved) newCore() *core {
	return &core{
		blockSize:     r.BlockSize,
		maxSeqs:       r.MaxNumSeqs,
		maxBatched:    r.MaxNumBatchedTokens,
		prefixCaching: !r.DisablePrefixCaching,
		specK:         r.SpecK,
		specAlpha:     r.SpecAlpha,
		specAlphas:    r.SpecAlphas,
		specMethod:    r.specMethod,
		specTree:      r.specTree,
		draft:         r.draft,
		hasDraft:      r.draft.Name != "",
		pricer:        r.roof,
		pool:          newBlockPool(r.numBlocks),
		lora:          newLoRASlots(r.lora),
	}
}
