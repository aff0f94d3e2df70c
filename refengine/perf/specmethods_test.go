package perf_test

import (
	"math"
	"testing"

	"github.com/llmbench/llmbench/refengine/perf"
)

// TestSpecMethodPricing pins the speculative methods' arithmetic (issue 22, item 5).
func TestSpecMethodPricing(t *testing.T) {
	// Per-position acceptance reduces to the seed's closed form for one α and is
	// 1 + a1 + a1·a2 + … otherwise, the last α repeating.
	for _, a := range []float64{0.6, 0.8, 0.9} {
		if got, want := perf.ExpectedTokensPerPassPositional([]float64{a}, 4), perf.ExpectedTokensPerPass(a, 4); got != want {
			t.Fatalf("α=%g: %g, want %g", a, got, want)
		}
	}
	if got, want := perf.ExpectedTokensPerPassPositional([]float64{0.9, 0.5}, 3), 1+0.9+0.45+0.225; math.Abs(got-want) > 1e-12 {
		t.Fatalf("positional: %g, want %g", got, want)
	}
	if got, want := perf.ExpectedNgramTokensPerStep(0.5, 2), 1+0.25+0.125; math.Abs(got-want) > 1e-12 {
		t.Fatalf("ngram: %g, want %g", got, want)
	}
	// EAGLE's published head size for Llama 2 7B is 0.24B parameters (one decoder layer and
	// the fc layer; the LM head is shared).
	l2 := perf.Model{Name: "llama-2-7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 32, HeadDim: 128, FFN: 11008,
		Vocab: 32000, Params: 6.74e9, ActiveParams: 6.74e9, MaxContext: 4096}
	if p := perf.EAGLEHead(l2).Params; math.Abs(p-0.24e9) > 0.01e9 {
		t.Fatalf("EAGLE head of Llama 2 7B: %.3g parameters, want 0.24B", p)
	}
	if p, want := perf.MedusaHeadParams(l2, 5), 5*(4096.0*4096+4096+4096*32000); p != want {
		t.Fatalf("Medusa heads: %g, want %g", p, want)
	}
	// A chain is a tree of depth = nodes.
	var a, b perf.Work
	a.Add(5, 100)
	b.AddTree(5, 5, 100)
	if a != b {
		t.Fatalf("chain %+v vs tree %+v", a, b)
	}
	m, _ := perf.LookupModel("llama-3.1-8b")
	g, _ := perf.LookupGPU("h100")
	plain, err := perf.New(perf.Config{Model: m, GPU: g})
	if err != nil {
		t.Fatal(err)
	}
	heads, err := perf.New(perf.Config{Model: m, GPU: g, DraftHeadParams: perf.MedusaHeadParams(m, 4)})
	if err != nil {
		t.Fatal(err)
	}
	eagle, err := perf.New(perf.Config{Model: m, GPU: g, Draft: perf.EAGLEHead(m), DraftSharesLMHead: true})
	if err != nil {
		t.Fatal(err)
	}
	if plain.HeadsStepTime(1) != 0 || !(heads.HeadsStepTime(1) > 0) || heads.NumBlocks() >= plain.NumBlocks() {
		t.Fatalf("medusa heads: %v per pass, %d blocks vs %d", heads.HeadsStepTime(1), heads.NumBlocks(), plain.NumBlocks())
	}
	// The shared LM head is read every EAGLE pass but not stored twice.
	var one perf.Work
	one.Add(1, 100)
	shared := eagle.DraftStepTime(perf.EAGLEHead(m), one)
	own, _ := perf.New(perf.Config{Model: m, GPU: g, Draft: perf.EAGLEHead(m)})
	if !(shared > own.DraftStepTime(perf.EAGLEHead(m), one)) || eagle.NumBlocks() != own.NumBlocks() {
		t.Fatalf("EAGLE pass %v (with LM head) vs %v; blocks %d vs %d", shared, own.DraftStepTime(perf.EAGLEHead(m), one), eagle.NumBlocks(), own.NumBlocks())
	}
	if _, err := perf.New(perf.Config{Model: m, GPU: g, DraftHeadParams: -1}); err == nil {
		t.Fatal("negative DraftHeadParams accepted")
	}
	if _, err := perf.ParseSpecMethod("Lookahead"); err == nil {
		t.Fatal("unknown method accepted")
	}
}

// TestDraftTP: a draft that cannot be sharded over the target's TP runs at its own degree.
func TestDraftTP(t *testing.T) {
	m, _ := perf.LookupModel("llama-3.1-70b")
	g, _ := perf.LookupGPU("h100")
	d := perf.Model{Name: "d14", Layers: 24, Hidden: 896, Heads: 14, KVHeads: 2, HeadDim: 64, FFN: 4864,
		Vocab: 128256, Params: 0.47e9, ActiveParams: 0.47e9, MaxContext: 32768}
	if _, err := perf.New(perf.Config{Model: m, GPU: g, TP: 4, Draft: d}); err == nil {
		t.Fatal("a 14-head draft sharded over 4 GPUs was accepted")
	}
	r, err := perf.New(perf.Config{Model: m, GPU: g, TP: 4, Draft: d, DraftTP: 1})
	if err != nil {
		t.Fatal(err)
	}
	var w perf.Work
	w.Add(1, 256)
	one := r.DraftStepTime(d, w)
	r2, _ := perf.New(perf.Config{Model: m, GPU: g, TP: 4, Draft: d, DraftTP: 2})
	// Sharding a 0.5B draft saves little bandwidth and adds 2 × 24 all-reduces per pass: the
	// reason vLLM lets a draft run unsharded.
	if !(one < r2.DraftStepTime(d, w)) {
		t.Fatalf("draft pass at TP 1 %v, at TP 2 %v: want faster unsharded", one, r2.DraftStepTime(d, w))
	}
	if _, err := perf.New(perf.Config{Model: m, GPU: g, TP: 4, Draft: d, DraftTP: -1}); err == nil {
		t.Fatal("negative DraftTP accepted")
	}
}
