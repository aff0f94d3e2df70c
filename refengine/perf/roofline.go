package perf

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// ErrWeightsDoNotFit is wrapped by New's error when the weights do not fit in the GPUs' usable
// memory.
var ErrWeightsDoNotFit = errors.New("model weights do not fit in GPU memory")

// ErrNoKVCache is wrapped by New's error when the weights fit but leave no room for even one KV
// cache block.
var ErrNoKVCache = errors.New("no GPU memory left for the KV cache")

// Roofline prices engine steps for one Config. It is immutable after New and safe for
// concurrent use.
type Roofline struct {
	cfg Config

	weightBytes       float64 // all weights, all ranks
	sharedWeightBytes float64 // MoE: weights every token uses (attention, embeddings, router)
	expertBytes       float64 // MoE: one expert's weights summed over all layers
	experts           float64 // MoE expert count (0 for dense)
	logMiss           float64 // MoE: ln of the probability one token does not pick a given expert
	kvBytesPerToken   float64
	linFLOPsPerToken  float64
	attnFLOPsPerPair  float64
	encFLOPsPerToken  float64 // vision encoder FLOPs per image token
	linPeakName       string

	secPerByte     float64 // per byte of weights read (TP ranks in parallel)
	secPerKVByte   float64 // per byte of KV cache read by attention
	secPerLinFLOP  float64
	secPerAttnFLOP float64

	allReduces       float64 // all-reduces per step (0 when TP == 1)
	arBytesPerToken  float64
	arSecPerByte     float64
	arLatencySeconds float64
	overheadSeconds  float64
	smooth           bool
	// overheadPerSeq is Config.StepOverheadPerSeq in seconds: host time per scheduled sequence.
	overheadPerSeq float64

	draftWeightBytes     float64
	draftKVBytesPerToken float64
	draft                *Roofline // priced like the target, without step overhead
	bytesPerWeight       float64
	headParams           float64 // Medusa-style draft heads (Config.DraftHeadParams)
	headBytes            float64

	kvBudget  float64
	numBlocks int
}

// New validates cfg (after WithDefaults) and precomputes everything Step needs. Errors name the
// offending field and say how to fix it; weights that do not fit wrap ErrWeightsDoNotFit and
// suggest a tensor-parallel degree.
func New(cfg Config) (*Roofline, error) {
	cfg = cfg.WithDefaults()
	r, err := derive(cfg)
	if err != nil {
		return nil, err
	}
	if cfg.Draft.Name != "" {
		if err := cfg.Draft.Validate(); err != nil {
			return nil, fmt.Errorf("perf: draft model: %w", err)
		}
		dcfg := cfg
		dcfg.Model = cfg.Draft
		dcfg.Draft = Model{}
		dcfg.StepOverhead = -1
		dcfg.StepOverheadPerSeq = 0
		if cfg.DraftTP != 0 {
			if cfg.DraftTP < 0 {
				return nil, fmt.Errorf("perf: draft tensor-parallel degree must be >= 1, or 0 for the target's, got %d", cfg.DraftTP)
			}
			dcfg.TP = cfg.DraftTP
		}
		d, err := derive(dcfg)
		if err != nil {
			return nil, fmt.Errorf("perf: draft model %s: %w", cfg.Draft.Name, err)
		}
		r.draft = d
		r.draftWeightBytes = d.weightBytes
		r.draftKVBytesPerToken = d.kvBytesPerToken
		if cfg.DraftSharesLMHead {
			// Read every pass, stored once (with the target): priced, not counted in memory.
			lmHead := float64(cfg.Model.Vocab) * float64(cfg.Model.Hidden)
			d.weightBytes += lmHead * d.bytesPerWeight
			d.linFLOPsPerToken += 2 * lmHead
		}
	}
	if p := cfg.DraftHeadParams; p != 0 {
		if !(p > 0) || math.IsInf(p, 0) {
			return nil, fmt.Errorf("perf: DraftHeadParams must be a positive number of parameters, or 0 for none, got %g", p)
		}
		r.headParams = p
		r.headBytes = p * r.bytesPerWeight
	}

	perGPU := cfg.GPU.MemBytes*cfg.GPUMemUtil - math.Max(cfg.ReserveBytes, 0)
	usable := float64(cfg.TP) * perGPU
	need := r.weightBytes + r.draftWeightBytes + r.headBytes
	if need > usable {
		what := fmt.Sprintf("%s %s weights", cfg.Model.Name, cfg.WeightDtype)
		if r.draftWeightBytes > 0 {
			what += fmt.Sprintf(" plus draft %s", cfg.Draft.Name)
		}
		if r.headBytes > 0 {
			what += fmt.Sprintf(" plus %.2fB parameters of draft heads", r.headParams/1e9)
		}
		return nil, fmt.Errorf("perf: %s need %.1f GB but %d × %s provide %.1f GB (%.1f GB × GPU memory utilization %.2f − %.1f GB reserve, per GPU); %s: %w",
			what, need/1e9, cfg.TP, cfg.GPU.Name, usable/1e9, cfg.GPU.MemBytes/1e9, cfg.GPUMemUtil,
			math.Max(cfg.ReserveBytes, 0)/1e9, fitAdvice(cfg, need, perGPU), ErrWeightsDoNotFit)
	}
	r.kvBudget = usable - need
	perBlock := float64(cfg.BlockSize) * (r.kvBytesPerToken + r.draftKVBytesPerToken)
	r.numBlocks = int(math.Floor(r.kvBudget / perBlock))
	if r.numBlocks < 1 {
		return nil, fmt.Errorf("perf: %s on %d × %s: the weights fit but leave %.2f GB, less than one %d-token KV block (%.1f MB); raise the GPU memory utilization (--gpu-memory-utilization), lower the reserve, use fp8 weights or KV cache (--weight-dtype, --kv-dtype), or raise TP (--tp): %w",
			cfg.Model.Name, cfg.TP, cfg.GPU.Name, r.kvBudget/1e9, cfg.BlockSize, perBlock/1e6, ErrNoKVCache)
	}
	return r, nil
}

// fitAdvice suggests the smallest tensor-parallel degree (a power of two that divides the
// head counts) at which the weights fit, or other remedies when none does.
func fitAdvice(cfg Config, need, perGPU float64) string {
	if perGPU <= 0 {
		return "the reserve exceeds the usable memory of one GPU; lower the reserve (ReserveBytes) or raise the GPU memory utilization (--gpu-memory-utilization)"
	}
	for tp := cfg.TP * 2; tp <= 64; tp *= 2 {
		if tpCompatible(cfg.Model, tp) == nil && float64(tp)*perGPU >= need {
			return fmt.Sprintf("the weights do not fit; use tensor parallelism TP=%d or more (--tp %d), fp8 or int4 weights (--weight-dtype), or a GPU with more memory", tp, tp)
		}
	}
	return "the weights do not fit at any tensor-parallel degree the model allows; use fp8 or int4 weights (--weight-dtype) or a GPU with more memory"
}

func tpCompatible(m Model, tp int) error {
	if m.Heads%tp != 0 {
		return fmt.Errorf("tensor-parallel degree %d must divide the %d attention heads of %s", tp, m.Heads, m.Name)
	}
	if m.KVHeads%tp != 0 && tp%m.KVHeads != 0 {
		return fmt.Errorf("tensor-parallel degree %d must divide, or be a multiple of, the %d KV heads of %s", tp, m.KVHeads, m.Name)
	}
	return nil
}

// derive validates cfg (already defaulted) and computes the per-step coefficients; memory
// capacity is checked by New.
func derive(cfg Config) (*Roofline, error) {
	m, g := cfg.Model, cfg.GPU
	if err := m.Validate(); err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	if err := g.Validate(); err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	if cfg.TP < 1 {
		return nil, fmt.Errorf("perf: tensor-parallel degree must be >= 1, got %d", cfg.TP)
	}
	if err := tpCompatible(m, cfg.TP); err != nil {
		return nil, fmt.Errorf("perf: %w", err)
	}
	if cfg.TP > 1 && !(g.LinkBW > 0) {
		return nil, fmt.Errorf("perf: tensor parallelism (TP=%d) needs the GPU's link bandwidth; gpu %s has none", cfg.TP, g.Name)
	}
	bpw, err := WeightBytesPerParam(cfg.WeightDtype)
	if err != nil {
		return nil, fmt.Errorf("perf: weight dtype: %w", err)
	}
	if cfg.BytesPerWeight != 0 {
		if !(cfg.BytesPerWeight > 0) || cfg.BytesPerWeight > 8 {
			return nil, fmt.Errorf("perf: BytesPerWeight must be in (0, 8] bytes per parameter, or 0 to derive it from the weight dtype, got %g", cfg.BytesPerWeight)
		}
		bpw = cfg.BytesPerWeight
	}
	bkv, err := KVBytesPerValue(cfg.KVDtype)
	if err != nil {
		return nil, fmt.Errorf("perf: kv dtype: %w", err)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"bandwidth efficiency (BWEff)", cfg.BWEff}, {"FLOP efficiency (FLOPEff)", cfg.FLOPEff},
		{"link efficiency (CommEff)", cfg.CommEff}, {"fp8 FLOP efficiency (FP8FLOPEff)", cfg.FP8FLOPEff}, {"KV-cache bandwidth efficiency (KVBWEff)", cfg.KVBWEff}, {"GPU memory utilization (GPUMemUtil)", cfg.GPUMemUtil}} {
		if err := validFraction(f.name, f.v, false); err != nil {
			return nil, fmt.Errorf("perf: %w", err)
		}
	}
	if cfg.Combine != CombineSmooth && cfg.Combine != CombineMax {
		return nil, fmt.Errorf("perf: unknown combine rule %q: use %q or %q", cfg.Combine, CombineSmooth, CombineMax)
	}
	if cfg.BlockSize < 1 {
		return nil, fmt.Errorf("perf: KV block size must be >= 1 token, got %d", cfg.BlockSize)
	}
	if math.IsNaN(cfg.ReserveBytes) || math.IsInf(cfg.ReserveBytes, 0) {
		return nil, fmt.Errorf("perf: reserve bytes must be a finite number, got %g", cfg.ReserveBytes)
	}

	tp := float64(cfg.TP)
	r := &Roofline{cfg: cfg, bytesPerWeight: bpw}
	r.weightBytes = m.Params * bpw
	if m.IsMoE() && m.ActiveExperts < m.Experts {
		e, a := float64(m.Experts), float64(m.ActiveExperts)
		perExpertParams := (m.Params - m.ActiveParams) / (e - a)
		r.expertBytes = perExpertParams * bpw
		r.sharedWeightBytes = (m.Params - e*perExpertParams) * bpw
		r.experts = e
		r.logMiss = math.Log1p(-a / e)
	}
	kvHeads := m.KVHeads
	if cfg.TP > kvHeads {
		kvHeads = cfg.TP // each rank keeps one (replicated) KV head
	}
	r.kvBytesPerToken = 2 * float64(m.Layers*kvHeads*m.HeadDim) * bkv
	peak, name := linearPeak(g, cfg.WeightDtype)
	r.linPeakName = name
	r.linFLOPsPerToken = 2 * m.ActiveParams
	r.attnFLOPsPerPair = 4 * float64(m.Layers*m.Heads*m.HeadDim)
	r.encFLOPsPerToken = 2 * VisionOf(m).EncoderParams
	r.secPerByte = 1 / (g.MemBW * cfg.BWEff * tp)
	r.secPerKVByte = 1 / (g.MemBW * cfg.KVBWEff * tp)
	linEff := cfg.FLOPEff
	if name != "bf16" {
		linEff = cfg.FP8FLOPEff
	}
	r.secPerLinFLOP = 1 / (peak * linEff * tp)
	r.secPerAttnFLOP = 1 / (g.BF16FLOPS * cfg.FLOPEff * tp)
	if cfg.TP > 1 {
		r.allReduces = 2 * float64(m.Layers)
		r.arBytesPerToken = 2 * float64(m.Hidden)
		r.arSecPerByte = 2 * (tp - 1) / tp / (g.LinkBW * cfg.CommEff)
		r.arLatencySeconds = math.Max(cfg.AllReduceLatency.Seconds(), 0) * math.Log2(tp)
	}
	r.overheadSeconds = math.Max(cfg.StepOverhead.Seconds(), 0)
	if cfg.StepOverheadPerSeq < 0 {
		return nil, fmt.Errorf("perf: host overhead per sequence (StepOverheadPerSeq) must be >= 0, got %v", cfg.StepOverheadPerSeq)
	}
	r.overheadPerSeq = cfg.StepOverheadPerSeq.Seconds()
	r.smooth = cfg.Combine == CombineSmooth
	return r, nil
}

// Config returns the configuration with defaults applied.
func (r *Roofline) Config() Config { return r.cfg }

// KVBytesPerToken is the KV cache size of one token over the whole model and all TP ranks:
// 2 (key and value) × layers × KV heads × head dim × bytes per value. When TP exceeds the KV
// head count each rank holds one replicated head, so TP replaces the KV head count.
// The draft model's cache, if any, is not included (see BlockBytes).
func (r *Roofline) KVBytesPerToken() float64 { return r.kvBytesPerToken }

// BlockBytes is the memory one KV block takes: BlockSize tokens of the target's cache plus,
// with a draft model, the draft's cache for the same tokens.
func (r *Roofline) BlockBytes() float64 {
	return float64(r.cfg.BlockSize) * (r.kvBytesPerToken + r.draftKVBytesPerToken)
}

// WeightBytes is the size of all of the target model's weights (all experts, all ranks) in the
// configured weight dtype.
func (r *Roofline) WeightBytes() float64 { return r.weightBytes }

// KVCacheBytes is the memory left for the KV cache over all ranks:
// TP × (HBM × GPUMemUtil − reserve) − weights (− draft weights).
func (r *Roofline) KVCacheBytes() float64 { return r.kvBudget }

// NumBlocks is the number of KV blocks the engine can allocate:
// floor(KVCacheBytes / BlockBytes), at least 1 (New rejects configurations with none).
func (r *Roofline) NumBlocks() int { return r.numBlocks }

// MaxKVTokens is the number of tokens the KV cache holds when every block is full.
func (r *Roofline) MaxKVTokens() int { return r.numBlocks * r.cfg.BlockSize }

// SequencesThatFit is how many sequences of tokens tokens each fit in the KV cache at once,
// counting whole blocks per sequence as PagedAttention allocates them. It returns 0 for
// tokens <= 0.
func (r *Roofline) SequencesThatFit(tokens int) int {
	if tokens <= 0 {
		return 0
	}
	per := (tokens + r.cfg.BlockSize - 1) / r.cfg.BlockSize
	return r.numBlocks / per
}

// LinearPeakFormat names the tensor-core rate used for the linear layers: "bf16", "fp8" or
// "int8" (the GPU's rate for the weight dtype, falling back to bf16 where unsupported).
func (r *Roofline) LinearPeakFormat() string { return r.linPeakName }

// Work aggregates one engine step. Build it with Add, one call per scheduled sequence, so that
// Step is O(1) whatever the batch size.
type Work struct {
	Seqs         int // sequences in the batch
	NewTokens    int // tokens computed this step: prefill chunk + decode + speculative verify tokens
	KVTokensRead int // Σ over sequences of (context before + new tokens): KV entries read or written
	// AttnPairs is Σ over sequences of new × (context before + (new+1)/2): the causal
	// query-key pairs attention computes.
	AttnPairs float64
	// EncoderTokens is the image tokens whose vision encoder runs in this step (vision.go):
	// 2·EncoderParams FLOPs each, at the linear layers' rate.
	EncoderTokens int
}

// Add accounts one sequence that computes newTokens tokens on top of contextBefore tokens
// already in its KV cache (a prefill chunk after a prefix-cache hit, one decode token, or k+1
// speculative verify tokens). Non-positive newTokens adds nothing.
func (w *Work) Add(newTokens, contextBefore int) {
	if newTokens <= 0 {
		return
	}
	if contextBefore < 0 {
		contextBefore = 0
	}
	w.Seqs++
	w.NewTokens += newTokens
	w.KVTokensRead += contextBefore + newTokens
	n := float64(newTokens)
	w.AttnPairs += n * (float64(contextBefore) + (n+1)/2)
}

// Breakdown is the priced step. Compute and Memory are per-rank times (all ranks work in
// parallel), each summed over the step's two phases; Total = combine(linear layers' memory,
// their compute) + combine(attention's KV reads, its compute) + Comm + Overhead, at least
// combine(Memory, Compute) ("Phases of a step"). Overhead is the host time, StepOverhead plus
// StepOverheadPerSeq per sequence. FLOPs and Bytes are the whole step's totals over all ranks.
type Breakdown struct {
	Compute, Memory, Comm, Overhead, Total time.Duration
	MemoryBound                            bool // Memory >= Compute
	FLOPs, Bytes                           float64
}

// Step prices one engine iteration. An empty Work (no new tokens) costs nothing.
func (r *Roofline) Step(w Work) Breakdown {
	if w.NewTokens <= 0 {
		return Breakdown{}
	}
	tMem, tComp, tComm, tGPU, flops, bytes := r.terms(w)
	host := r.hostSeconds(w)
	return Breakdown{
		Compute:     seconds(tComp),
		Memory:      seconds(tMem),
		Comm:        seconds(tComm),
		Overhead:    seconds(host),
		Total:       seconds(tGPU + tComm + host),
		MemoryBound: tMem >= tComp,
		FLOPs:       flops,
		Bytes:       bytes,
	}
}

// StepTime is Step(w).Total, computed without the rest of the breakdown.
func (r *Roofline) StepTime(w Work) time.Duration {
	if w.NewTokens <= 0 {
		return 0
	}
	_, _, tComm, tGPU, _, _ := r.terms(w)
	return seconds(tGPU + tComm + r.hostSeconds(w))
}

// hostSeconds is the step's host (CPU) time: the fixed StepOverhead plus StepOverheadPerSeq
// for each sequence the step schedules.
func (r *Roofline) hostSeconds(w Work) float64 {
	return r.overheadSeconds + r.overheadPerSeq*float64(w.Seqs)
}

// terms returns the per-rank memory, compute and communication seconds of w and the step's
// total FLOPs and bytes, with the GPU time of the step: the linear layers' roofline (weights
// against their FLOPs) plus attention's (KV cache against its FLOPs), two kernel phases that
// run one after the other, not overlapped (package documentation, "Phases of a step").
func (r *Roofline) terms(w Work) (tMem, tComp, tComm, tGPU, flops, bytes float64) {
	t := float64(w.NewTokens)
	wb := r.weightBytes
	if r.experts > 0 {
		// Expected distinct experts touched by t tokens routed uniformly and independently:
		// E·(1 − (1 − A/E)^t), with the power as an exponential of a precomputed logarithm.
		touched := r.experts * (1 - math.Exp(t*r.logMiss))
		wb = r.sharedWeightBytes + touched*r.expertBytes
	}
	kvBytes := float64(w.KVTokensRead) * r.kvBytesPerToken
	bytes = wb + kvBytes
	linFLOPs := r.linFLOPsPerToken*t + float64(w.EncoderTokens)*r.encFLOPsPerToken
	attnFLOPs := r.attnFLOPsPerPair * w.AttnPairs
	linMem, kvMem := wb*r.secPerByte, kvBytes*r.secPerKVByte
	linComp, attnComp := linFLOPs*r.secPerLinFLOP, attnFLOPs*r.secPerAttnFLOP
	tMem, tComp = linMem+kvMem, linComp+attnComp
	tGPU = r.combine(linMem, linComp) + r.combine(kvMem, attnComp)
	if r.allReduces > 0 {
		tComm = r.allReduces * (r.arLatencySeconds + t*r.arBytesPerToken*r.arSecPerByte)
	}
	return tMem, tComp, tComm, tGPU, linFLOPs + attnFLOPs, bytes
}

func (r *Roofline) combine(tMem, tComp float64) float64 {
	if r.smooth {
		return math.Sqrt(tMem*tMem + tComp*tComp)
	}
	return math.Max(tMem, tComp)
}

// KVTransferTime prices moving tokens tokens of KV cache between a prefill and a decode pool
// (disaggregated serving) at bandwidth bw bytes/s; bw <= 0 selects the GPUs' links in
// parallel, TP × LinkBW × CommEff (both pools on one NVLink domain).
func (r *Roofline) KVTransferTime(tokens int, bw float64) time.Duration {
	if tokens <= 0 {
		return 0
	}
	if !(bw > 0) {
		bw = float64(r.cfg.TP) * r.cfg.GPU.LinkBW * r.cfg.CommEff
		if !(bw > 0) {
			bw = r.cfg.GPU.MemBW * r.cfg.BWEff // no link: a copy through HBM
		}
	}
	return seconds(float64(tokens) * r.kvBytesPerToken / bw)
}

func seconds(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// String summarizes the configuration and its capacity in one line, for logs and banners:
// "llama-3.1-8b bf16 on 1 × h100-sxm: weights 16.06 GB, KV cache bf16 128 KiB/token,
// 26197 blocks of 16 tokens (419152 tokens), linear layers at the bf16 rate".
func (r *Roofline) String() string {
	c := r.cfg
	s := fmt.Sprintf("%s %s on %d × %s: weights %.2f GB, KV cache %s %.0f KiB/token, %d blocks of %d tokens (%d tokens), linear layers at the %s rate",
		c.Model.Name, c.WeightDtype, c.TP, c.GPU.Name, r.weightBytes/1e9, c.KVDtype, r.kvBytesPerToken/1024,
		r.numBlocks, c.BlockSize, r.MaxKVTokens(), r.linPeakName)
	if r.draft != nil {
		s += fmt.Sprintf(", draft %s (%.2f GB)", c.Draft.Name, r.draftWeightBytes/1e9)
	}
	return s
}
