package perf

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// Speculative decoding methods: who proposes the draft tokens, and so what drafting costs
// (see the package documentation, "Speculative methods").
const (
	// SpecFree drafts at no cost with one acceptance probability per position: the model
	// llmbench had before methods were named, kept as the default of a plain k.
	SpecFree = "free"
	// SpecDraft drafts with a separate, smaller model (Config.Draft): k passes of it per step.
	SpecDraft = "draft"
	// SpecEAGLE drafts with an EAGLE head (EAGLEHead): about one decoder layer of the target,
	// run k times per step, reading the target's LM head each time.
	SpecEAGLE = "eagle"
	// SpecMedusa drafts with Medusa heads (MedusaHeadParams): one residual block and LM head
	// per drafted position, all run once per step, and verifies a tree of candidates.
	SpecMedusa = "medusa"
	// SpecNgram drafts by prompt lookup: no model, no GPU work; a draft exists only when the
	// recent tokens match earlier text of the request.
	SpecNgram = "ngram"
)

// SpecMethods lists the methods in the order the CLI documents them.
var SpecMethods = []string{SpecFree, SpecDraft, SpecEAGLE, SpecMedusa, SpecNgram}

// ParseSpecMethod lower-cases and checks a method name; "" is SpecFree.
func ParseSpecMethod(s string) (string, error) {
	m := strings.ToLower(strings.TrimSpace(s))
	if m == "" {
		return SpecFree, nil
	}
	for _, k := range SpecMethods {
		if m == k {
			return m, nil
		}
	}
	if len(s) > 40 {
		s = s[:40] + "…"
	}
	return "", fmt.Errorf("unknown speculative method %q: use one of %s", s, strings.Join(SpecMethods, ", "))
}

// ExpectedTokensPerPassPositional is the expected number of tokens a verification pass emits
// when the draft at position i (1-based) is accepted with probability alphas[i−1], given that
// every earlier one was, and the last entry repeats for positions past the list:
// 1 + Σ_{i=1..k} Π_{j≤i} α_j. With one α it is ExpectedTokensPerPass(α, k), the seed's
// (1 − α^(k+1)) / (1 − α). Each α is clamped to [0, 1]; k <= 0 or no alphas gives 1.
func ExpectedTokensPerPassPositional(alphas []float64, k int) float64 {
	if k <= 0 || len(alphas) == 0 {
		return 1
	}
	if len(alphas) == 1 {
		return ExpectedTokensPerPass(alphas[0], k)
	}
	total, p := 1.0, 1.0
	for i := 0; i < k; i++ {
		a := alphas[min(i, len(alphas)-1)]
		if math.IsNaN(a) || a < 0 {
			a = 0
		}
		p *= math.Min(a, 1)
		total += p
	}
	return total
}

// ExpectedNgramTokensPerStep is the expected number of tokens one decode step of a request
// emits under prompt-lookup (n-gram) drafting when its text repeats with probability rho: a
// step finds a match with probability ρ and then verifies k drafts, each accepted with
// probability ρ given the earlier ones; without a match it is a plain one-token step. So
// 1 + ρ·(ExpectedTokensPerPass(ρ, k) − 1) = 1 + ρ² + ρ³ + … + ρ^(k+1).
func ExpectedNgramTokensPerStep(rho float64, k int) float64 {
	if k <= 0 || math.IsNaN(rho) || rho <= 0 {
		return 1
	}
	rho = math.Min(rho, 1)
	return 1 + rho*(ExpectedTokensPerPass(rho, k)-1)
}

// EAGLEHead is the EAGLE draft head of target, as a model the roofline can price: one decoder
// layer of the target (attention with its own one-layer KV cache, and the MLP) plus the fc
// layer that fuses the feature with the token embedding (2 × hidden² parameters), which is
// the 0.24B parameters EAGLE publishes for Llama 2 7B. Every draft pass also reads the
// target's LM head (vocab × hidden) to turn the predicted feature into a token; that head is
// shared, not stored twice, and New prices it from the target (see Config.DraftSharesLMHead).
// A mixture-of-experts target's layer counts its active experts only.
func EAGLEHead(target Model) Model {
	embed := 2 * float64(target.Vocab) * float64(target.Hidden) // input embeddings and LM head
	perLayer := math.Max(target.ActiveParams-embed, target.ActiveParams/2) / float64(max(target.Layers, 1))
	p := perLayer + 2*float64(target.Hidden)*float64(target.Hidden)
	return Model{Name: target.Name + "-eagle-head", Layers: 1, Hidden: target.Hidden, Heads: target.Heads,
		KVHeads: target.KVHeads, HeadDim: target.HeadDim, FFN: target.FFN, Vocab: target.Vocab,
		Params: p, ActiveParams: p, MaxContext: target.MaxContext}
}

// MedusaHeadParams is the size of heads Medusa heads on target: each head is one residual
// block (hidden × hidden weights and a bias) and its own LM head (hidden × vocab), as the
// Medusa paper defines them. The heads have no attention and no KV cache.
func MedusaHeadParams(target Model, heads int) float64 {
	h := float64(target.Hidden)
	return float64(max(heads, 0)) * (h*h + h + h*float64(target.Vocab))
}

// HeadsStepTime prices one pass of draft heads without attention (Config.DraftHeadParams,
// Medusa) over seqs sequences, one token each: the heads' weights read once plus
// 2 × params FLOPs per token, combined like a step, without the step overhead (the heads run
// inside the target's step). It is 0 without heads or sequences.
func (r *Roofline) HeadsStepTime(seqs int) time.Duration {
	if seqs <= 0 || r.headParams <= 0 {
		return 0
	}
	tMem := r.headBytes * r.secPerByte
	tComp := 2 * r.headParams * float64(seqs) * r.secPerLinFLOP
	return seconds(r.combine(tMem, tComp))
}

// AddTree accounts one sequence that verifies a tree of nodes tokens (the last emitted token
// and its candidate continuations, Medusa and EAGLE style) of depth levels on top of
// contextBefore cached tokens. Every node reads the whole context and attends to its
// ancestors only, so the attention pairs are nodes × (contextBefore + (depth+1)/2), which is
// Add's n × (c + (n+1)/2) for a chain (nodes == depth). depth is clamped to [1, nodes].
func (w *Work) AddTree(nodes, depth, contextBefore int) {
	if nodes <= 0 {
		return
	}
	depth = max(1, min(depth, nodes))
	if contextBefore < 0 {
		contextBefore = 0
	}
	w.Seqs++
	w.NewTokens += nodes
	w.KVTokensRead += contextBefore + nodes
	w.AttnPairs += float64(nodes) * (float64(contextBefore) + float64(depth+1)/2)
}
