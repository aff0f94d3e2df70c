package perf

import (
	"errors"
	"math"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"
)

func mustModel(t testing.TB, name string) Model {
	t.Helper()
	m, err := LookupModel(name)
	if err != nil {
		t.Fatal(err)
	}
	return m
}

func mustGPU(t testing.TB, name string) GPU {
	t.Helper()
	g, err := LookupGPU(name)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

func mustNew(t testing.TB, cfg Config) *Roofline {
	t.Helper()
	r, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// decodeWork is n sequences each decoding one token after ctx tokens of context.
func decodeWork(n, ctx int) Work {
	var w Work
	for range n {
		w.Add(1, ctx)
	}
	return w
}

func TestKVBytesPerToken(t *testing.T) {
	tests := []struct {
		model, kv string
		tp        int
		want      float64
	}{
		{"llama-3.1-8b", "bf16", 1, 131072}, // 2·32·8·128·2 = 128 KiB (docs/ARCHITECTURE.md)
		{"llama-3.1-8b", "fp8", 1, 65536},
		{"llama-3.1-70b", "bf16", 1, 327680}, // 2·80·8·128·2 = 320 KiB
		{"llama-3.1-70b", "bf16", 8, 327680}, // 8 KV heads split over 8 ranks: no replication
		{"mixtral-8x7b", "bf16", 1, 131072},
		{"llama-3.2-1b", "bf16", 1, 32768}, // 2·16·8·64·2
	}
	for _, tc := range tests {
		g := mustGPU(t, "h200")
		g.MemBytes = 1e12 // room for every model at any TP
		r := mustNew(t, Config{Model: mustModel(t, tc.model), GPU: g, TP: tc.tp, KVDtype: tc.kv})
		if got := r.KVBytesPerToken(); got != tc.want {
			t.Errorf("%s kv=%s tp=%d: KVBytesPerToken = %g, want %g", tc.model, tc.kv, tc.tp, got, tc.want)
		}
	}
}

func TestKVHeadsReplicatedBeyondTP(t *testing.T) {
	m := mustModel(t, "llama-3.1-70b")
	m.Name, m.Heads = "wide", 128 // allow TP=16 > 8 KV heads
	g := mustGPU(t, "h100")
	r := mustNew(t, Config{Model: m, GPU: g, TP: 16})
	// Each of 16 ranks keeps one KV head: twice the 8-head cache.
	if got, want := r.KVBytesPerToken(), 2*80*16*128*2.0; got != want {
		t.Fatalf("KVBytesPerToken at TP=16 = %g, want %g", got, want)
	}
}

// The seed's worked example: 80 GB GPU, 16 GB of bf16 weights, 128 KiB per token, all memory
// usable and no reserve: 119 sequences of 4,096 tokens.
func TestSequencesOf4096Fit119(t *testing.T) {
	g := mustGPU(t, "h100")
	if g.MemBytes != 80e9 {
		t.Fatalf("h100 MemBytes = %g, want 80e9", g.MemBytes)
	}
	m := mustModel(t, "llama-3.1-8b")
	exact := m
	exact.Params, exact.ActiveParams = 8e9, 8e9 // exactly 16 GB as in the seed
	for _, tc := range []struct {
		name  string
		model Model
		block int
	}{
		{"16GB weights, block 16", exact, 16},
		{"16GB weights, block 4096", exact, 4096},
		{"8.03e9 params, block 16", m, 16},
	} {
		r := mustNew(t, Config{Model: tc.model, GPU: g, GPUMemUtil: 1.0, ReserveBytes: -1, BlockSize: tc.block})
		if got := r.SequencesThatFit(4096); got != 119 {
			t.Errorf("%s: SequencesThatFit(4096) = %d, want 119", tc.name, got)
		}
		if tc.block == 4096 && r.NumBlocks() != 119 {
			t.Errorf("%s: NumBlocks = %d, want 119", tc.name, r.NumBlocks())
		}
		// Cross-check against the seed's byte arithmetic.
		want := int(math.Floor((80e9 - r.WeightBytes()) / (4096 * r.KVBytesPerToken())))
		if got := r.SequencesThatFit(4096); got != want {
			t.Errorf("%s: SequencesThatFit = %d, bytes arithmetic gives %d", tc.name, got, want)
		}
	}
}

func TestNumBlocksFormula(t *testing.T) {
	g := mustGPU(t, "h100")
	m := mustModel(t, "llama-3.1-8b")
	r := mustNew(t, Config{Model: m, GPU: g})
	c := r.Config()
	want := int((80e9*c.GPUMemUtil - c.ReserveBytes - 8.03e9*2) / (16 * 131072))
	if r.NumBlocks() != want {
		t.Fatalf("NumBlocks = %d, want %d", r.NumBlocks(), want)
	}
	if r.MaxKVTokens() != want*16 {
		t.Fatalf("MaxKVTokens = %d, want %d", r.MaxKVTokens(), want*16)
	}
	if r.SequencesThatFit(0) != 0 || r.SequencesThatFit(17) != want/2 {
		t.Fatalf("SequencesThatFit(0)=%d, (17)=%d, want 0, %d", r.SequencesThatFit(0), r.SequencesThatFit(17), want/2)
	}
}

func TestSingleSequenceDecode(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	for _, tc := range []struct {
		gpu    string
		lo, hi time.Duration // bandwidth ceiling at 100% of peak, and the published-measurement side
	}{
		{"h100", 4790 * time.Microsecond, 8 * time.Millisecond},
		{"h200", 3340 * time.Microsecond, 6 * time.Millisecond},
		{"a100", 7870 * time.Microsecond, 13 * time.Millisecond},
	} {
		g := mustGPU(t, tc.gpu)
		r := mustNew(t, Config{Model: m, GPU: g})
		ceiling := time.Duration(r.WeightBytes() / g.MemBW * 1e9)
		if ceiling < tc.lo-10*time.Microsecond || ceiling > tc.lo+10*time.Microsecond {
			t.Errorf("%s: bandwidth ceiling %v, want ≈%v", tc.gpu, ceiling, tc.lo)
		}
		b := r.Step(decodeWork(1, 128))
		if b.Total <= ceiling || b.Total >= tc.hi {
			t.Errorf("%s: single-sequence decode step %v, want in (%v, %v)", tc.gpu, b.Total, ceiling, tc.hi)
		}
		if !b.MemoryBound {
			t.Errorf("%s: single-sequence decode should be memory-bound: %+v", tc.gpu, b)
		}
		if tc.gpu == "h100" {
			if tps := 1 / b.Total.Seconds(); tps >= 210 {
				t.Errorf("h100: %0.f tok/s exceeds the ≈200 tok/s bandwidth ceiling", tps)
			}
			// Published vLLM/TensorRT-LLM measurements are ≈7 ms; the defaults aim there.
			if b.Total < 6500*time.Microsecond || b.Total > 7500*time.Microsecond {
				t.Errorf("h100: decode step %v, want ≈7 ms with default constants", b.Total)
			}
		}
	}
}

func TestBatchedDecodeIsMemoryBoundAndPrefillComputeBound(t *testing.T) {
	g := mustGPU(t, "h100")
	r := mustNew(t, Config{Model: mustModel(t, "llama-3.1-8b"), GPU: g})
	ridge := g.BF16FLOPS / g.MemBW // FLOPs per byte where the roofline bends (≈295)

	one := r.Step(decodeWork(1, 1024))
	batch := r.Step(decodeWork(64, 1024))
	single := 1 / one.Total.Seconds()
	batched := 64 / batch.Total.Seconds()
	if batched < 20*single {
		t.Errorf("64-sequence decode %0.f tok/s is not >= 20× single-sequence %0.f tok/s", batched, single)
	}
	if !batch.MemoryBound {
		t.Errorf("64-sequence decode should be memory-bound: %+v", batch)
	}
	if ai := batch.FLOPs / batch.Bytes; ai >= ridge {
		t.Errorf("64-sequence decode arithmetic intensity %.1f FLOP/B should be below the ridge %.0f", ai, ridge)
	}
	// Hand arithmetic: 64 × 2 × 8.03e9 linear FLOPs plus attention over 1025 keys.
	wantFLOPs := 64*2*8.03e9 + 4*32*32*128*64*1025.0
	if math.Abs(batch.FLOPs-wantFLOPs)/wantFLOPs > 1e-12 {
		t.Errorf("64-sequence FLOPs = %g, want %g", batch.FLOPs, wantFLOPs)
	}
	wantBytes := 8.03e9*2 + 64*1025*131072.0
	if math.Abs(batch.Bytes-wantBytes)/wantBytes > 1e-12 {
		t.Errorf("64-sequence bytes = %g, want %g", batch.Bytes, wantBytes)
	}

	var p Work
	p.Add(4096, 0)
	prefill := r.Step(p)
	if prefill.MemoryBound {
		t.Errorf("4k-token prefill should be compute-bound: %+v", prefill)
	}
	if ai := prefill.FLOPs / prefill.Bytes; ai <= ridge {
		t.Errorf("4k prefill arithmetic intensity %.0f FLOP/B should exceed the ridge %.0f", ai, ridge)
	}
	wantPrefill := 4096*2*8.03e9 + 4*32*32*128*(4096*4097/2.0)
	if math.Abs(prefill.FLOPs-wantPrefill)/wantPrefill > 1e-12 {
		t.Errorf("prefill FLOPs = %g, want %g", prefill.FLOPs, wantPrefill)
	}
}

func TestExpectedTokensPerPass(t *testing.T) {
	for _, tc := range []struct {
		alpha float64
		k     int
		want  float64
	}{
		{0.6, 4, 2.31}, {0.8, 4, 3.36}, {0.9, 4, 4.10},
		{1, 4, 5}, {0, 4, 1}, {0.5, 0, 1}, {-1, 3, 1}, {2, 3, 4}, {math.NaN(), 3, 1},
	} {
		got := ExpectedTokensPerPass(tc.alpha, tc.k)
		if math.Abs(got-tc.want) > 0.005 {
			t.Errorf("ExpectedTokensPerPass(%g, %d) = %.4f, want %.2f", tc.alpha, tc.k, got, tc.want)
		}
	}
	// The formula against left-to-right acceptance, seeded: within 2% over 10,000 passes.
	rng := rand.New(rand.NewPCG(1, 2))
	for _, alpha := range []float64{0.6, 0.8, 0.9} {
		total := 0
		const passes = 10000
		for range passes {
			acc := 0
			for acc < 4 && rng.Float64() < alpha {
				acc++
			}
			total += acc + 1
		}
		got, want := float64(total)/passes, ExpectedTokensPerPass(alpha, 4)
		if math.Abs(got-want)/want > 0.02 {
			t.Errorf("alpha=%g: simulated %.3f tokens/pass, formula %.3f", alpha, got, want)
		}
	}
}

func TestQuantization(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	h100 := mustGPU(t, "h100")
	step := func(g GPU, wd, kv string) (*Roofline, time.Duration) {
		r := mustNew(t, Config{Model: m, GPU: g, WeightDtype: wd, KVDtype: kv})
		return r, r.StepTime(decodeWork(1, 128))
	}
	rb, bf16 := step(h100, "bf16", "bf16")
	rf, fp8 := step(h100, "fp8", "bf16")
	_, int4 := step(h100, "int4", "bf16")
	if ratio := float64(fp8) / float64(bf16); ratio < 0.45 || ratio > 0.65 {
		t.Errorf("fp8/bf16 decode step = %.2f (%v/%v), want roughly half", ratio, fp8, bf16)
	}
	if int4 >= fp8 {
		t.Errorf("int4 decode step %v should be below fp8 %v", int4, fp8)
	}
	if rf.WeightBytes() != rb.WeightBytes()/2 {
		t.Errorf("fp8 weights %g, want half of %g", rf.WeightBytes(), rb.WeightBytes())
	}
	if rf.LinearPeakFormat() != "fp8" || rb.LinearPeakFormat() != "bf16" {
		t.Errorf("H100 peak formats: fp8 weights -> %s, bf16 -> %s", rf.LinearPeakFormat(), rb.LinearPeakFormat())
	}
	// A100 has no fp8 tensor cores: fp8 weights still halve the bytes but compute at bf16.
	ra, _ := step(mustGPU(t, "a100"), "fp8", "bf16")
	if ra.LinearPeakFormat() != "bf16" {
		t.Errorf("A100 fp8 weights should compute at the bf16 rate, got %s", ra.LinearPeakFormat())
	}
	var p Work
	p.Add(4096, 0)
	if ra.Step(p).Compute != mustNew(t, Config{Model: m, GPU: mustGPU(t, "a100")}).Step(p).Compute {
		t.Errorf("A100 fp8 prefill compute time should equal bf16's")
	}
	if rf.Step(p).Compute >= rb.Step(p).Compute {
		t.Errorf("H100 fp8 prefill compute %v should be below bf16 %v", rf.Step(p).Compute, rb.Step(p).Compute)
	}
	// fp8 KV halves bytes per token and doubles the blocks.
	rk, _ := step(h100, "bf16", "fp8")
	if rk.KVBytesPerToken() != rb.KVBytesPerToken()/2 {
		t.Errorf("fp8 KV %g B/token, want half of %g", rk.KVBytesPerToken(), rb.KVBytesPerToken())
	}
	if d := rk.NumBlocks() - 2*rb.NumBlocks(); d < 0 || d > 1 {
		t.Errorf("fp8 KV NumBlocks %d, want 2×%d (+1)", rk.NumBlocks(), rb.NumBlocks())
	}
	// fp8 weights free memory for KV as well.
	if rf.NumBlocks() <= rb.NumBlocks() {
		t.Errorf("fp8 weights NumBlocks %d should exceed bf16's %d", rf.NumBlocks(), rb.NumBlocks())
	}
}

func TestTensorParallel(t *testing.T) {
	m70 := mustModel(t, "llama-3.1-70b")
	h100 := mustGPU(t, "h100")
	_, err := New(Config{Model: m70, GPU: h100})
	if err == nil {
		t.Fatal("70B bf16 on one H100 should be rejected")
	}
	if !errors.Is(err, ErrWeightsDoNotFit) || !strings.Contains(err.Error(), "do not fit") || !strings.Contains(err.Error(), "TP=2") {
		t.Fatalf("error should say the weights do not fit and suggest TP=2: %v", err)
	}
	r2 := mustNew(t, Config{Model: m70, GPU: h100, TP: 2})
	if r2.NumBlocks() < 1 {
		t.Fatalf("70B on 2×H100 should leave KV blocks, got %d", r2.NumBlocks())
	}
	b := r2.Step(decodeWork(1, 128))
	if b.Comm <= 0 {
		t.Errorf("TP=2 should add all-reduce time: %+v", b)
	}
	// 2·80 all-reduces of latency plus a ring transfer of one token's activations.
	c := r2.Config()
	wantComm := 160 * (c.AllReduceLatency.Seconds() + 2*8192*(2*1.0/2)/(450e9*c.CommEff))
	if got := b.Comm.Seconds(); math.Abs(got-wantComm) > 1e-9 {
		t.Errorf("TP=2 comm = %g s, want %g s", got, wantComm)
	}
	if b.Total < 20*time.Millisecond || b.Total > 40*time.Millisecond {
		t.Errorf("70B TP=2 decode step %v, want 20-40 ms", b.Total)
	}

	// TP splits weights: the 8B model decodes faster at TP=2, but not twice as fast.
	m8 := mustModel(t, "llama-3.1-8b")
	t1 := mustNew(t, Config{Model: m8, GPU: h100}).StepTime(decodeWork(1, 128))
	t2 := mustNew(t, Config{Model: m8, GPU: h100, TP: 2}).StepTime(decodeWork(1, 128))
	if !(t2 < t1 && t2 > t1/2) {
		t.Errorf("8B TP=2 step %v should lie in (%v/2, %v)", t2, t1, t1)
	}
	// TP must divide the heads.
	if _, err := New(Config{Model: m8, GPU: h100, TP: 3}); err == nil || !strings.Contains(err.Error(), "heads") {
		t.Errorf("TP=3 on 32 heads: want a heads error, got %v", err)
	}
}

func TestMoEReadsOnlyTouchedExperts(t *testing.T) {
	m := mustModel(t, "mixtral-8x7b")
	g := mustGPU(t, "h200")
	r := mustNew(t, Config{Model: m, GPU: g})
	one := r.Step(decodeWork(1, 0))
	kv := r.KVBytesPerToken()
	// One token touches its 2 experts: the active parameters.
	if got, want := one.Bytes-kv, m.ActiveParams*2; math.Abs(got-want)/want > 1e-9 {
		t.Errorf("1-token MoE weight bytes = %g, want %g", got, want)
	}
	big := r.Step(decodeWork(256, 0))
	if got, want := big.Bytes-256*kv, m.Params*2; math.Abs(got-want)/want > 1e-6 {
		t.Errorf("256-token MoE weight bytes = %g, want all experts %g", got, want)
	}
	// Two tokens: E·(1−(3/4)²) = 3.5 experts expected.
	two := r.Step(decodeWork(2, 0))
	perExpert := (m.Params - m.ActiveParams) / 6 * 2
	shared := m.Params*2 - 8*perExpert
	if got, want := two.Bytes-2*kv, shared+3.5*perExpert; math.Abs(got-want)/want > 1e-9 {
		t.Errorf("2-token MoE weight bytes = %g, want %g", got, want)
	}
	if one.FLOPs != 2*m.ActiveParams+4*32*32*128*1.0 {
		t.Errorf("MoE FLOPs per token = %g, want 2×active params + attention", one.FLOPs)
	}
}

func TestCombineRules(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	smooth := mustNew(t, Config{Model: m, GPU: g, StepOverhead: -1})
	maxr := mustNew(t, Config{Model: m, GPU: g, StepOverhead: -1, Combine: "max"})
	var w Work
	w.Add(512, 0) // near the ridge: both terms matter
	bs, bm := smooth.Step(w), maxr.Step(w)
	if bs.Overhead != 0 || bm.Overhead != 0 {
		t.Fatalf("StepOverhead -1 should mean none, got %v", bs.Overhead)
	}
	// Each phase (linear layers, attention) combines its own memory and compute terms.
	lin := func(r *Roofline) (float64, float64) {
		return r.weightBytes * r.secPerByte, r.linFLOPsPerToken * 512 * r.secPerLinFLOP
	}
	attn := func(r *Roofline) (float64, float64) {
		return float64(w.KVTokensRead) * r.kvBytesPerToken * r.secPerKVByte, r.attnFLOPsPerPair * w.AttnPairs * r.secPerAttnFLOP
	}
	lm, lc := lin(maxr)
	am, ac := attn(maxr)
	if want := seconds(max(lm, lc) + max(am, ac)); bm.Total != want {
		t.Errorf("max: total %v, want max(linear) + max(attention) = %v", bm.Total, want)
	}
	lm, lc = lin(smooth)
	am, ac = attn(smooth)
	want := seconds(math.Hypot(lm, lc) + math.Hypot(am, ac))
	if d := bs.Total - want; d < -2 || d > 2 {
		t.Errorf("smooth: total %v, want hypot(linear) + hypot(attention) = %v", bs.Total, want)
	}
	if bs.Total <= bm.Total {
		t.Errorf("smooth %v should exceed max %v", bs.Total, bm.Total)
	}
}

func TestWorkAdd(t *testing.T) {
	var w Work
	w.Add(1, 100)  // decode
	w.Add(10, 50)  // prefill chunk after 50 cached tokens
	w.Add(5, 20)   // k=4 verify
	w.Add(0, 1000) // nothing
	w.Add(3, -5)   // negative context treated as 0
	want := Work{Seqs: 4, NewTokens: 19, KVTokensRead: 101 + 60 + 25 + 3,
		AttnPairs: 1*(100+1) + 10*(50+5.5) + 5*(20+3) + 3*(0+2)}
	if w != want {
		t.Fatalf("Work = %+v, want %+v", w, want)
	}
	r := mustNew(t, Config{Model: mustModel(t, "llama-3.1-8b"), GPU: mustGPU(t, "h100")})
	if b := r.Step(Work{}); b != (Breakdown{}) {
		t.Fatalf("empty step should cost nothing, got %+v", b)
	}
	if r.StepTime(w) != r.Step(w).Total {
		t.Fatal("StepTime != Step().Total")
	}
}

func TestDraftModel(t *testing.T) {
	target := mustModel(t, "llama-3.1-8b")
	draft := mustModel(t, "llama-3.2-1b")
	g := mustGPU(t, "h100")
	plain := mustNew(t, Config{Model: target, GPU: g})
	withDraft := mustNew(t, Config{Model: target, GPU: g, Draft: draft})
	w := decodeWork(1, 128)
	d1 := plain.DraftStepTime(draft, w)
	d2 := withDraft.DraftStepTime(draft, w)
	if d1 != d2 {
		t.Errorf("configured and ad-hoc draft prices differ: %v vs %v", d2, d1)
	}
	// 1.24e9 bf16 params over 78% of 3.35 TB/s ≈ 0.95 ms, no step overhead.
	if d1 < 900*time.Microsecond || d1 > 1100*time.Microsecond {
		t.Errorf("1B draft pass %v, want ≈0.95 ms", d1)
	}
	if withDraft.NumBlocks() >= plain.NumBlocks() {
		t.Errorf("a draft model should shrink the KV cache: %d vs %d blocks", withDraft.NumBlocks(), plain.NumBlocks())
	}
	if got, want := withDraft.BlockBytes(), 16*(131072+32768.0); got != want {
		t.Errorf("BlockBytes with draft = %g, want %g", got, want)
	}
	// k=4 speculative step at α=0.8 beats plain decode per token.
	var verify Work
	verify.Add(5, 128)
	spec := withDraft.StepTime(verify) + 4*d2
	perToken := spec.Seconds() / ExpectedTokensPerPass(0.8, 4)
	if perToken >= plain.StepTime(w).Seconds() {
		t.Errorf("speculative %.2f ms/token should beat plain %v", perToken*1e3, plain.StepTime(w))
	}
	if got := plain.DraftStepTime(Model{Name: "bad"}, w); got != 0 {
		t.Errorf("invalid draft should price 0, got %v", got)
	}
}

func TestNewValidation(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	noLink := g
	noLink.LinkBW = 0
	tiny := g
	tiny.MemBytes = 8.03e9*2 + 1e6 // 1 MB left: less than one 2 MB block
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"weight dtype", Config{Model: m, GPU: g, WeightDtype: "int3"}, "weight dtype"},
		{"kv dtype", Config{Model: m, GPU: g, KVDtype: "int4"}, "KV cache dtype"},
		{"bw eff", Config{Model: m, GPU: g, BWEff: 1.5}, "BWEff"},
		{"flop eff", Config{Model: m, GPU: g, FLOPEff: -0.1}, "FLOPEff"},
		{"mem util", Config{Model: m, GPU: g, GPUMemUtil: 2}, "GPU memory utilization"},
		{"combine", Config{Model: m, GPU: g, Combine: "sum"}, "combine"},
		{"tp", Config{Model: m, GPU: g, TP: -1}, "tensor-parallel"},
		{"block", Config{Model: m, GPU: g, BlockSize: -16}, "block size"},
		{"no link", Config{Model: m, GPU: noLink, TP: 2}, "link bandwidth"},
		{"model", Config{Model: Model{Name: "x"}, GPU: g}, "layers"},
		{"gpu", Config{Model: m, GPU: GPU{Name: "y"}}, "memory"},
		{"no kv room", Config{Model: m, GPU: tiny, GPUMemUtil: 1, ReserveBytes: -1}, "KV block"},
		{"reserve", Config{Model: m, GPU: g, ReserveBytes: 80e9}, "reserve"},
		{"draft", Config{Model: m, GPU: g, Draft: Model{Name: "d"}}, "draft"},
	} {
		_, err := New(tc.cfg)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: want error mentioning %q, got %v", tc.name, tc.want, err)
		}
	}
	_, err := New(Config{Model: m, GPU: tiny, GPUMemUtil: 1, ReserveBytes: -1})
	if !errors.Is(err, ErrNoKVCache) {
		t.Errorf("no KV room should wrap ErrNoKVCache: %v", err)
	}
}

func TestWithDefaultsIdempotent(t *testing.T) {
	c := Config{WeightDtype: "FP8", StepOverhead: -1, ReserveBytes: -1}.WithDefaults()
	if c != c.WithDefaults() {
		t.Fatalf("WithDefaults not idempotent: %+v vs %+v", c, c.WithDefaults())
	}
	if c.TP != 1 || c.WeightDtype != "fp8" || c.KVDtype != "bf16" || c.BWEff != 0.78 || c.FLOPEff != 0.75 ||
		c.Combine != "smooth" || c.GPUMemUtil != 0.9 || c.BlockSize != 16 || c.StepOverhead != -1 || c.ReserveBytes != -1 {
		t.Fatalf("unexpected defaults: %+v", c)
	}
	d := Config{}.WithDefaults()
	if d.StepOverhead != DefaultStepOverhead || d.ReserveBytes != DefaultReserveBytes || d.AllReduceLatency != DefaultAllReduceLatency {
		t.Fatalf("unexpected defaults: %+v", d)
	}
}

func TestKVTransferTime(t *testing.T) {
	r := mustNew(t, Config{Model: mustModel(t, "llama-3.1-8b"), GPU: mustGPU(t, "h100")})
	if got, want := r.KVTransferTime(1000, 50e9), time.Duration(math.Round(1000*131072/50e9*1e9)); got != want {
		t.Errorf("KVTransferTime(1000, 50 GB/s) = %v, want %v", got, want)
	}
	if r.KVTransferTime(1000, 0) >= r.KVTransferTime(1000, 50e9) || r.KVTransferTime(0, 0) != 0 {
		t.Errorf("default NVLink transfer should beat 50 GB/s and 0 tokens cost 0")
	}
}

func TestConcurrentStep(t *testing.T) {
	r := mustNew(t, Config{Model: mustModel(t, "mixtral-8x7b"), GPU: mustGPU(t, "h100"), TP: 2})
	want := r.StepTime(decodeWork(8, 500))
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				if got := r.StepTime(decodeWork(8, 500)); got != want {
					t.Errorf("concurrent StepTime %v != %v", got, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func BenchmarkStepTime(b *testing.B) {
	r := mustNew(b, Config{Model: mustModel(b, "llama-3.1-8b"), GPU: mustGPU(b, "h100")})
	w := decodeWork(64, 1024)
	w.Add(512, 0)
	b.ReportAllocs()
	var sink time.Duration
	for b.Loop() {
		sink += r.StepTime(w)
	}
	_ = sink
}

func BenchmarkStepTimeMoETP(b *testing.B) {
	r := mustNew(b, Config{Model: mustModel(b, "mixtral-8x7b"), GPU: mustGPU(b, "h100"), TP: 2})
	w := decodeWork(64, 1024)
	b.ReportAllocs()
	var sink time.Duration
	for b.Loop() {
		sink += r.StepTime(w)
	}
	_ = sink
}

func TestString(t *testing.T) {
	r := mustNew(t, Config{Model: mustModel(t, "llama-3.1-8b"), GPU: mustGPU(t, "h100"), Draft: mustModel(t, "llama-3.2-1b")})
	s := r.String()
	for _, want := range []string{"llama-3.1-8b bf16 on 1 × h100-sxm", "weights 16.06 GB", "128 KiB/token",
		"blocks of 16 tokens", "bf16 rate", "draft llama-3.2-1b (2.48 GB)"} {
		if !strings.Contains(s, want) {
			t.Errorf("String() = %q, missing %q", s, want)
		}
	}
}

func TestOverrides(t *testing.T) {
	m := mustModel(t, "llama-3.1-8b")
	g := mustGPU(t, "h100")
	// BytesPerWeight replaces the dtype's size but keeps its compute rate.
	r := mustNew(t, Config{Model: m, GPU: g, WeightDtype: "int4", BytesPerWeight: 0.5625})
	if r.WeightBytes() != 8.03e9*0.5625 || r.LinearPeakFormat() != "bf16" {
		t.Errorf("BytesPerWeight: weights %g, rate %s", r.WeightBytes(), r.LinearPeakFormat())
	}
	if _, err := New(Config{Model: m, GPU: g, BytesPerWeight: -1}); err == nil || !strings.Contains(err.Error(), "BytesPerWeight") {
		t.Errorf("negative BytesPerWeight: %v", err)
	}
	// A GPU profile's efficiencies apply unless Config sets its own.
	slow := g
	slow.BWEff, slow.FLOPEff = 0.5, 0.4
	c := mustNew(t, Config{Model: m, GPU: slow}).Config()
	if c.BWEff != 0.5 || c.FLOPEff != 0.4 {
		t.Errorf("GPU efficiencies not used: %g %g", c.BWEff, c.FLOPEff)
	}
	c = mustNew(t, Config{Model: m, GPU: slow, BWEff: 0.9}).Config()
	if c.BWEff != 0.9 || c.FLOPEff != 0.4 {
		t.Errorf("Config efficiency should win: %g %g", c.BWEff, c.FLOPEff)
	}
	base := mustNew(t, Config{Model: m, GPU: g, StepOverhead: -1}).Step(decodeWork(1, 0))
	half := mustNew(t, Config{Model: m, GPU: g, StepOverhead: -1, BWEff: 0.39, KVBWEff: 0.39}).Step(decodeWork(1, 0))
	if d := half.Memory - 2*base.Memory; d < -2 || d > 2 {
		t.Errorf("halving BWEff and KVBWEff should double the memory term: %v vs %v", half.Memory, base.Memory)
	}
}

// A step whose linear layers are compute-bound (a long prefill chunk) and whose attention is
// memory-bound (many decodes over long contexts) costs the two phases added: more than one
// roofline over the summed terms, which would hide the KV reads under the GEMMs' compute.
func TestPhasesAdd(t *testing.T) {
	r := mustNew(t, Config{Model: mustModel(t, "llama-3.1-8b"), GPU: mustGPU(t, "h100"), WeightDtype: "fp8",
		KVDtype: "fp8", StepOverhead: -1})
	var prefill, decodes, mixed Work
	prefill.Add(3000, 0)
	mixed.Add(3000, 0)
	for range 400 {
		decodes.Add(1, 1000)
		mixed.Add(1, 1000)
	}
	b := r.Step(mixed)
	if one := seconds(math.Hypot(b.Memory.Seconds(), b.Compute.Seconds())); b.Total < one+one/10 {
		t.Errorf("mixed step %v, want well above one roofline over the summed terms (%v)", b.Total, one)
	}
	if sum := r.StepTime(prefill) + r.StepTime(decodes); b.Total > sum {
		t.Errorf("mixed step %v should cost no more than its prefill and its decodes apart (%v)", b.Total, sum)
	}
}

// StepOverheadPerSeq adds host time linearly in the sequences a step schedules, is refused
// when negative, and is not paid by a draft model's passes.
func TestStepOverheadPerSeq(t *testing.T) {
	m, g := mustModel(t, "llama-3.1-8b"), mustGPU(t, "h100")
	plain := mustNew(t, Config{Model: m, GPU: g})
	host := mustNew(t, Config{Model: m, GPU: g, StepOverheadPerSeq: 20 * time.Microsecond})
	for _, seqs := range []int{1, 64, 1024} {
		w := decodeWork(seqs, 500)
		got := host.Step(w)
		if d := got.Total - plain.Step(w).Total - time.Duration(seqs)*20*time.Microsecond; d < -2 || d > 2 {
			t.Errorf("%d sequences: host overhead adds %v, want %v", seqs, got.Total-plain.Step(w).Total, time.Duration(seqs)*20*time.Microsecond)
		}
		if want := DefaultStepOverhead + time.Duration(seqs)*20*time.Microsecond; got.Overhead != want {
			t.Errorf("%d sequences: Overhead %v, want %v", seqs, got.Overhead, want)
		}
	}
	if _, err := New(Config{Model: m, GPU: g, StepOverheadPerSeq: -time.Microsecond}); err == nil || !strings.Contains(err.Error(), "StepOverheadPerSeq") {
		t.Errorf("negative StepOverheadPerSeq: %v", err)
	}
	draft := mustModel(t, "llama-3.2-1b")
	a := mustNew(t, Config{Model: m, GPU: g, Draft: draft})
	b := mustNew(t, Config{Model: m, GPU: g, Draft: draft, StepOverheadPerSeq: 20 * time.Microsecond})
	w := decodeWork(64, 500)
	if a.DraftStepTime(draft, w) != b.DraftStepTime(draft, w) {
		t.Errorf("draft passes pay the host overhead per sequence: %v vs %v", a.DraftStepTime(draft, w), b.DraftStepTime(draft, w))
	}
}
