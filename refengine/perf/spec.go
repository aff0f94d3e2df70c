package perf

import (
	"math"
	"time"
)

// ExpectedTokensPerPass is the expected number of tokens one speculative verification pass
// emits when each of k drafted tokens is accepted independently with probability alpha and
// acceptance stops at the first rejection: 1 + α + α² + … + α^k = (1 − α^(k+1)) / (1 − α),
// and k+1 when α = 1 (Leviathan et al. 2023). α is clamped to [0, 1]; k <= 0 gives 1.
func ExpectedTokensPerPass(alpha float64, k int) float64 {
	if k <= 0 || math.IsNaN(alpha) || alpha <= 0 {
		return 1
	}
	if alpha >= 1 {
		return float64(k + 1)
	}
	return (1 - math.Pow(alpha, float64(k+1))) / (1 - alpha)
}

// DraftStepTime prices one forward pass of a draft model over w on the same GPUs, tensor-parallel
// degree, dtypes and efficiency factors as the target, without the per-step overhead (the
// draft's passes run inside the target's engine step). Proposing k tokens costs k such passes
// with one new token per sequence each, so a speculative step costs
// StepTime(verify work) + k × DraftStepTime(draft, draft work).
//
// The draft configured in Config.Draft is priced from coefficients computed by New; any other
// model is derived on the fly, and a draft that cannot be priced (an invalid profile, or a
// tensor-parallel degree its heads do not allow) costs 0 — validate it by putting it in
// Config.Draft, which New checks.
func (r *Roofline) DraftStepTime(draft Model, w Work) time.Duration {
	if r.draft != nil && draft == r.cfg.Draft {
		return r.draft.StepTime(w)
	}
	cfg := r.cfg
	cfg.Model = draft
	cfg.Draft = Model{}
	cfg.StepOverhead = -1
	cfg.StepOverheadPerSeq = 0
	if cfg.DraftTP > 0 {
		cfg.TP = cfg.DraftTP
	}
	d, err := derive(cfg)
	if err != nil {
		return 0
	}
	return d.StepTime(w)
}
