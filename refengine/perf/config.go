package perf

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults used by Config.WithDefaults. Each is documented, with its source or reasoning, in
// the package documentation ("Constants and their sources").
const (
	DefaultBWEff            = 0.78
	DefaultFLOPEff          = 0.75
	DefaultFP8FLOPEff       = 0.56
	DefaultKVBWEff          = 0.78
	DefaultCommEff          = 0.45
	DefaultStepOverhead     = 800 * time.Microsecond
	DefaultAllReduceLatency = 20 * time.Microsecond
	DefaultGPUMemUtil       = 0.90
	DefaultReserveBytes     = 1e9
	DefaultBlockSize        = 16
	// Int4GroupSize is the quantization group of int4 weights: one 16-bit scale per group.
	Int4GroupSize = 128
)

// Combine rules for the memory and compute terms of a step.
const (
	CombineSmooth = "smooth" // sqrt(t_mem² + t_comp²)
	CombineMax    = "max"    // max(t_mem, t_comp), the textbook roofline
)

// Config selects a model on a GPU setup and the model's tuning constants. The zero value of
// every optional field selects the documented default (WithDefaults); for StepOverhead,
// AllReduceLatency and ReserveBytes, where zero is a meaningful choice, a negative value means
// "none".
type Config struct {
	Model Model
	GPU   GPU
	TP    int // tensor-parallel degree (GPUs per replica), >= 1; default 1

	WeightDtype string // "bf16" (default; "fp16" is the same size), "fp8", "int8", "int4"
	// BytesPerWeight, when > 0, replaces the weight dtype's bytes per parameter (for example
	// 0.5625 for int4 with one 16-bit scale per 32 weights); the dtype still picks the
	// tensor-core rate. 0 derives it from WeightDtype (WeightBytesPerParam).
	BytesPerWeight float64
	KVDtype        string // "bf16" (default; "fp16" alias), "fp8"

	// BWEff and FLOPEff are the achievable fractions of peak HBM bandwidth and tensor FLOP/s;
	// 0 takes the GPU profile's value, and failing that the defaults 0.78 and 0.75.
	BWEff   float64
	FLOPEff float64
	CommEff float64 // achievable fraction of link bandwidth in all-reduce, default 0.45
	// FP8FLOPEff is the achievable fraction of the fp8 (and int8) tensor-core peak for the
	// linear layers of fp8 or int8 weights, default 0.50 (see the package documentation,
	// "Constants and their sources"); the bf16 rate keeps FLOPEff.
	FP8FLOPEff float64
	// KVBWEff is the achievable fraction of peak HBM bandwidth for the attention kernels'
	// reads of the KV cache (paged, scattered blocks), default 0.70; weights stream at BWEff.
	KVBWEff float64

	StepOverhead time.Duration // per-step CPU/launch overhead, default 800µs; < 0 = none
	// AllReduceLatency is the fixed cost of one stage of an all-reduce when TP > 1; one
	// all-reduce over TP GPUs pays it log2(TP) times. Default 20µs; < 0 = none.
	AllReduceLatency time.Duration
	Combine          string // "smooth" (default) or "max"

	GPUMemUtil   float64 // fraction of each GPU's HBM the engine may use, default 0.9
	ReserveBytes float64 // activation/workspace reserve per GPU, bytes; default 1e9; < 0 = none
	BlockSize    int     // KV cache block size in tokens, default 16

	// Draft, when it has a name, is a draft model for speculative decoding that shares the
	// GPUs: its weights and its own KV cache (one entry per target token) come out of the KV
	// budget, so NumBlocks shrinks. DraftStepTime prices its passes.
	Draft Model
	// DraftSharesLMHead makes every draft pass also read and compute the target's LM head
	// (vocab × hidden weights), which the draft shares rather than stores: an EAGLE head
	// (EAGLEHead) turns its predicted feature into a token with it.
	DraftSharesLMHead bool
	// DraftTP, when > 0, is the tensor-parallel degree the draft model runs at (vLLM's
	// speculative_draft_tensor_parallel_size), for a draft whose heads do not divide over the
	// target's TP or that is cheaper unsharded; 0 means TP. Its weights and KV cache still come
	// out of the pooled KV budget of all TP GPUs.
	DraftTP int
	// DraftHeadParams, when > 0, is the size of draft heads without attention or KV cache that
	// share the GPUs (Medusa, MedusaHeadParams): their weights come out of the KV budget and
	// HeadsStepTime prices one pass of them. 0 means none.
	DraftHeadParams float64

	// StepOverheadPerSeq is host (CPU) time per scheduled sequence per step, added to
	// StepOverhead: the work an engine does for each request of the batch between two
	// forward passes (scheduling, block-table and input preparation, sampling bookkeeping,
	// output processing) when it is not overlapped with the GPU. 0 (the default) means none,
	// as for an engine whose host work is a fixed cost or runs ahead of the GPU (TensorRT-LLM's
	// C++ executor); vLLM 0.10's synchronous Python engine loop pays it (package documentation,
	// "Host overhead per sequence"). 0 takes the GPU profile's (GPU.StepOverheadPerSeq,
	// "step_overhead_per_seq_us" in a profile file). Negative is an error.
	StepOverheadPerSeq time.Duration
}

// WithDefaults returns c with every unset optional field set to its default and dtype and
// combine names lower-cased. It is idempotent.
func (c Config) WithDefaults() Config {
	if c.TP == 0 {
		c.TP = 1
	}
	c.WeightDtype = strings.ToLower(strings.TrimSpace(c.WeightDtype))
	if c.WeightDtype == "" {
		c.WeightDtype = "bf16"
	}
	c.KVDtype = strings.ToLower(strings.TrimSpace(c.KVDtype))
	if c.KVDtype == "" || c.KVDtype == "auto" {
		c.KVDtype = "bf16"
	}
	if c.BWEff == 0 {
		c.BWEff = c.GPU.BWEff
	}
	if c.BWEff == 0 {
		c.BWEff = DefaultBWEff
	}
	if c.FLOPEff == 0 {
		c.FLOPEff = c.GPU.FLOPEff
	}
	if c.FLOPEff == 0 {
		c.FLOPEff = DefaultFLOPEff
	}
	if c.CommEff == 0 {
		c.CommEff = DefaultCommEff
	}
	if c.FP8FLOPEff == 0 {
		c.FP8FLOPEff = DefaultFP8FLOPEff
	}
	if c.KVBWEff == 0 {
		c.KVBWEff = c.GPU.KVBWEff
	}
	if c.KVBWEff == 0 {
		c.KVBWEff = DefaultKVBWEff
	}
	if c.StepOverhead == 0 {
		c.StepOverhead = c.GPU.StepOverhead
	}
	if c.StepOverhead == 0 {
		c.StepOverhead = DefaultStepOverhead
	}
	if c.StepOverheadPerSeq == 0 {
		c.StepOverheadPerSeq = c.GPU.StepOverheadPerSeq
	}
	if c.AllReduceLatency == 0 {
		c.AllReduceLatency = DefaultAllReduceLatency
	}
	c.Combine = strings.ToLower(strings.TrimSpace(c.Combine))
	if c.Combine == "" {
		c.Combine = CombineSmooth
	}
	if c.GPUMemUtil == 0 {
		c.GPUMemUtil = DefaultGPUMemUtil
	}
	if c.ReserveBytes == 0 {
		c.ReserveBytes = DefaultReserveBytes
	}
	if c.BlockSize == 0 {
		c.BlockSize = DefaultBlockSize
	}
	return c
}

// WeightBytesPerParam returns the bytes one weight occupies in dtype: 2 for bf16/fp16, 1 for
// fp8/int8, and 0.5 + 2/Int4GroupSize for int4 (4-bit values plus one 16-bit scale per group
// of 128, as in GPTQ/AWQ checkpoints).
func WeightBytesPerParam(dtype string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(dtype)) {
	case "", "bf16", "fp16":
		return 2, nil
	case "fp8", "int8":
		return 1, nil
	case "int4":
		return 0.5 + 2.0/Int4GroupSize, nil
	}
	return 0, fmt.Errorf("unknown weight dtype %q: use bf16, fp16, fp8, int8 or int4", dtype)
}

// KVBytesPerValue returns the bytes of one cached key or value element in dtype: 2 for
// bf16/fp16, 1 for fp8.
func KVBytesPerValue(dtype string) (float64, error) {
	switch strings.ToLower(strings.TrimSpace(dtype)) {
	case "", "auto", "bf16", "fp16":
		return 2, nil
	case "fp8", "fp8_e4m3", "fp8_e5m2", "fp8-e4m3", "fp8-e5m2":
		return 1, nil
	}
	return 0, fmt.Errorf("unknown KV cache dtype %q: use bf16, fp16 or fp8", dtype)
}

// linearPeak returns the tensor-core peak used for the linear layers with weights in dtype,
// and the name of the rate chosen. fp8 uses the fp8 rate (W8A8) and int8 the int8 rate where
// the GPU has them; bf16, fp16 and int4 (weight-only W4A16: dequantized to bf16 in the kernel)
// use the bf16 rate, as does any format the GPU lacks.
func linearPeak(g GPU, dtype string) (float64, string) {
	switch dtype {
	case "fp8":
		if g.FP8FLOPS > 0 {
			return g.FP8FLOPS, "fp8"
		}
	case "int8":
		if g.INT8OPS > 0 {
			return g.INT8OPS, "int8"
		}
	}
	return g.BF16FLOPS, "bf16"
}

func validFraction(field string, v float64, allowAboveOne bool) error {
	if math.IsNaN(v) || v <= 0 || (!allowAboveOne && v > 1) {
		return fmt.Errorf("%s must be in (0, 1], got %g", field, v)
	}
	return nil
}
