package main

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/usecase"
)

// engineFlags are the reference-engine flags shared by serve, run, simulate and ab.
type engineFlags struct {
	fs *pflag.FlagSet

	model, gpu          string
	tp                  int
	weightDtype         string
	kvDtype             string
	maxNumSeqs          int
	maxNumBatchedTokens int
	blockSize           int
	gpuMemUtil          float64
	numBlocks           int
	maxModelLen         int
	prefixCaching       bool
	specK               int
	specAlpha           string
	specDraftModel      string
	// speculative methods (issue 22, item 5)
	specMethod      string
	specTree        int
	specRepetition  string
	specDraftTP     int
	faults          string
	noise           string
	servedModelName string
	profiles        string
	seed            string
	resolvedSeed    uint64 // the seed engineSeed chose (once, so "random" is one draw)
	// now is the clock --engine-seed random draws from (time.Now; tests fix it).
	now            func() time.Time
	disaggregated  bool
	kvTransferGBps float64
	wire           string
	reasoning      float64
	quality        string

	// LoRA adapters (issue 38; flags_lora.go).
	lora loraEngineFlags
}

// engineFlagNames lists the flags addEngineFlags defines.
var engineFlagNames = usecase.EngineFlagNames

// addEngineFlags defines the reference-engine flags on fs.
func addEngineFlags(fs *pflag.FlagSet) *engineFlags {
	f := &engineFlags{fs: fs, now: time.Now}
	fs.StringVar(&f.model, "model", "llama-3.1-8b", "the model: with --endpoint, the name sent in every request (default there: the first model /v1/models lists); on the reference engine, its model profile ("+strings.Join(usecase.ModelNames(), ", ")+"; Hugging Face names such as meta-llama/Llama-3.1-8B-Instruct are aliases) and the name it serves")
	fs.StringVar(&f.gpu, "gpu", "h100-sxm", "reference engine: GPU profile ("+strings.Join(usecase.GPUNames(), ", ")+"; aliases a100 and h100 name a100-80gb and h100-sxm)")
	fs.IntVar(&f.tp, "tp", 1, "reference engine: tensor-parallel degree (GPUs per replica)")
	fs.StringVar(&f.weightDtype, "weight-dtype", "bf16", "reference engine: weight dtype (bf16, fp8, int8, int4)")
	fs.StringVar(&f.kvDtype, "kv-dtype", "bf16", "reference engine: KV cache dtype (bf16, fp8)")
	fs.IntVar(&f.maxNumSeqs, "max-num-seqs", 256, "reference engine: most sequences in one batch")
	fs.IntVar(&f.maxNumBatchedTokens, "max-num-batched-tokens", 8192, "reference engine: token budget of one engine step (chunked prefill)")
	fs.IntVar(&f.blockSize, "block-size", 16, "reference engine: KV cache block size in tokens")
	fs.Float64Var(&f.gpuMemUtil, "gpu-memory-utilization", 0.9, "reference engine: fraction of GPU memory for weights and KV cache")
	fs.IntVar(&f.numBlocks, "num-gpu-blocks", 0, "reference engine: override the KV cache size in blocks (0: from memory)")
	fs.IntVar(&f.maxModelLen, "max-model-len", 0, "reference engine: longest prompt+output accepted (0: the model's context)")
	fs.BoolVar(&f.prefixCaching, "enable-prefix-caching", true, "reference engine: automatic prefix caching (--enable-prefix-caching=false to disable)")
	fs.IntVar(&f.specK, "spec-k", 0, "reference engine: speculative decoding draft length k (0: off)")
	fs.StringVar(&f.specAlpha, "spec-alpha", "", "reference engine: draft acceptance probability, one for every position (0.8, the default when --spec-k > 0) or one per draft position, the last repeating (0.9,0.8,0.7)")
	fs.StringVar(&f.specDraftModel, "spec-draft-model", "", "reference engine: draft model profile of --spec-method draft, whose k passes per step are priced (e.g. llama-3.2-1b)")
	fs.StringVar(&f.specMethod, "spec-method", "", "reference engine: who drafts, and so what drafting costs: free (no cost, the default), draft (--spec-draft-model's passes), eagle (k passes of a one-decoder-layer EAGLE head plus the LM head), medusa (one pass of k Medusa heads, verifying a tree of --spec-tree candidates), ngram (prompt lookup: no GPU work, drafts only when the text repeats, see --spec-repetition); default draft when --spec-draft-model is given")
	fs.IntVar(&f.specDraftTP, "spec-draft-tp", 0, "reference engine: tensor-parallel degree of --spec-draft-model (0: --tp), as vLLM's speculative_draft_tensor_parallel_size")
	fs.IntVar(&f.specTree, "spec-tree", 0, "reference engine: candidate tokens an eagle or medusa step verifies, a tree --spec-k levels deep (0: --spec-k for eagle, a chain; 4 × --spec-k for medusa)")
	fs.StringVar(&f.specRepetition, "spec-repetition", "", "reference engine, --spec-method ngram: probability that a request's text repeats earlier text, which sets both how often a draft is found and its per-token acceptance; one number, or per trace class: summarization=0.8,code=0.6,0.3 (a bare number is the default; default 0.5)")
	fs.StringVar(&f.faults, "faults", "", "reference engine: inject faults, e.g. reset-mid=0.1,status-503=0.1,stall=0.1:500ms,malformed=0.05 (keys: reset-before, reset-mid, stall, status-429/500/503, malformed, bad-json, no-done, slow-headers, early-eos, error-mid, overload=N, seed=N, from=D, until=D)")
	fs.StringVar(&f.noise, "engine-noise", "", "reference engine: vary step times as a real server does, seeded by --engine-seed: a preset (realistic = jitter=3%,drift=2%:20s,pause=0.2%:20ms) or jitter=P (per-step lognormal spread), drift=P[:PERIOD] (slow drift, default period 20s), pause=P[:D] (a P share of steps pause D, default 20ms), seed=N; off by default")
	fs.StringVar(&f.servedModelName, "served-model-name", "", "the model name requests carry: on the reference engine, the name it serves (default: --model); with --endpoint, an alias of --model (the name sent)")
	fs.StringVar(&f.profiles, "profiles", "", "reference engine: JSON file of extra or overriding model and GPU profiles")
	fs.StringVar(&f.seed, "engine-seed", strconv.FormatUint(defaultEngineSeed, 10), "reference engine: seed (≥ 1) of unseeded sampling and fault draws, recorded in the results so identical runs produce identical outputs; \"random\" draws one from the clock (still recorded)")
	fs.BoolVar(&f.disaggregated, "disaggregated", false, "reference engine: separate prefill and decode pools (each the full GPU setup) with a KV cache transfer between them")
	fs.StringVar(&f.wire, "wire", "vllm", "reference engine: wire personality, how streams are framed ("+strings.Join(usecase.Wires, ", ")+"; see docs/servers.md)")
	fs.Float64Var(&f.reasoning, "reasoning", 0, "reference engine: fraction of each chat answer sent first as reasoning (reasoning_content deltas; 0: off; e.g. 0.5)")
	fs.StringVar(&f.quality, "quality", "on", "reference engine: the error model of its answers (tool calls, JSON outputs, lookups in long documents; docs/quality.md \"Quality probes and the engine's error model\"): on, off (every answer right), or items such as tool=5%,retry=3%,json=2%,recall=1%,middle=25%,half=16k,temp=1.5,fp8=1.5,int8=2,int4=3,seed=N changing the defaults")
	fs.Float64Var(&f.kvTransferGBps, "kv-transfer-gbps", 0, "reference engine: KV transfer bandwidth between the pools, GB/s (0: the GPUs' NVLink)")
	f.lora.add(fs) // LoRA adapters (issue 38)
	return f
}

// defaultEngineSeed seeds the reference engine when --engine-seed is not given (see
// usecase.DefaultEngineSeed).
const defaultEngineSeed = usecase.DefaultEngineSeed
