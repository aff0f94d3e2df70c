package calibrate

import (
	"math"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// prefillObs is a request that reached an idle server: nothing was in flight when it was
// sent and nothing else was sent before its first token, so its TTFT is the front end plus
// its prompt's prefill alone, and TTFT against prompt length is the prefill's throughput.
type prefillObs struct {
	prompt int     // tokens the prefill computed (the prompt less what the prefix cache held)
	cached int     // tokens the prefix cache held, before them
	ttft   float64 // seconds
}

// minPrefills is the fewest idle prefills the prefill fit needs; with fewer, compute is
// fitted from the whole replay's TPOT instead.
const minPrefills = 5

// budgetCandidates are the token budgets per step (chunked-prefill sizes) the prefill fit
// tries besides the deployment's: llama.cpp's batch sizes and vLLM's and SGLang's defaults.
var budgetCandidates = []int{256, 512, 1024, 2048, 4096, 8192, 16384}

// idlePrefills returns the requests of runs that reached an idle server.
func idlePrefills(runs []run) []prefillObs {
	var out []prefillObs
	for _, r := range runs {
		var busyUntil int64 = math.MinInt64 // the latest end of the requests sent before
		for i, t := range r.tims {
			idle := busyUntil < t.intended && (i+1 == len(r.tims) || r.tims[i+1].intended > t.first)
			if idle && t.first > t.intended {
				out = append(out, prefillObs{prompt: t.uncached(), ttft: float64(t.first-t.intended) / 1e9})
			}
			busyUntil = max(busyUntil, t.end)
		}
	}
	return out
}

// prefillTime is the time the engine takes to prefill prompt tokens alone, in chunks of at
// most budget tokens, one step each, the first token at the end of the last (the engine's
// chunked prefill on an idle server).
//
// A prompt the server's prefix cache partly held is priced on its uncached tokens alone, as
// the replay prices it (its SimRequest has the uncached tokens for a prompt): the attention
// of those tokens to the cached ones is left out in both, so that the fitted constants
// reproduce the measured TTFTs in the replay.
func prefillTime(r *perf.Roofline, prompt, budget int) time.Duration {
	var t time.Duration
	for done := 0; done < prompt; {
		n := min(budget, prompt-done)
		var w perf.Work
		w.Add(n, done)
		t += r.StepTime(w)
		done += n
	}
	return t
}

// prefillLoss is the mean squared log error of the idle prefills' TTFT modelled as a front
// end of fe seconds plus each one's prefill time pt[i] (seconds).
func prefillLoss(obs []prefillObs, pt []float64, fe float64) float64 {
	var sum float64
	for i, o := range obs {
		d := math.Log((fe + pt[i]) / o.ttft)
		sum += d * d
	}
	return sum / float64(len(obs))
}

// fitPrefill fits the compute efficiency (x[1]) to the idle prefills with bandwidth and step
// overhead as at x, the front end each TTFT also holds fitted alongside, for the deployment's
// token budget and, when Options.FitMaxNumBatchedTokens asks, each of budgetCandidates: a
// candidate replaces the deployment's budget (in f.budget) when it fits with under
// prefillBudgetGain of the deployment's loss. It returns x with the fitted compute efficiency.
func (f *fitter) fitPrefill(x []float64, obs []prefillObs) []float64 {
	roof, err := rooflineFor(f.opts.Engine, f.reg, f.gpu)
	if err != nil {
		return x
	}
	lo := math.Inf(1)
	for _, o := range obs {
		lo = math.Min(lo, o.ttft)
	}
	// loss is the prefill loss at a log compute efficiency and budget, the front end fitted.
	pt := make([]float64, len(obs))
	loss := func(logFlop float64, budget int) float64 {
		y := append([]float64(nil), x...)
		y[1] = logFlop
		f.evals++
		r, err := roof(f.toConst(y))
		if err != nil {
			return math.Inf(1)
		}
		for i, o := range obs {
			pt[i] = prefillTime(r, o.prompt, budget).Seconds()
		}
		fe := goldenMin(func(fe float64) float64 { return prefillLoss(obs, pt, fe) }, 0, lo, 24)
		return prefillLoss(obs, pt, fe)
	}
	// fitAt returns the best log compute efficiency and its loss for one budget; the range
	// reaches a CPU server described with a GPU profile (1e-6).
	fitAt := func(budget int) (float64, float64) {
		lf := goldenMin(func(lf float64) float64 { return loss(lf, budget) }, math.Log(1e-6), 0, 40)
		return lf, loss(lf, budget)
	}
	base := f.opts.Engine.MaxNumBatchedTokens
	if base <= 0 {
		base = 8192 // refengine's default
	}
	if f.budget > 0 {
		base = f.budget
	}
	baseFlop, baseLoss := fitAt(base)
	out := append([]float64(nil), x...)
	out[1] = baseFlop
	if !f.fitBudget {
		return out
	}
	bestFlop, bestLoss, bestBudget := baseFlop, baseLoss, 0
	for _, b := range budgetCandidates {
		if b == base {
			continue
		}
		if lf, l := fitAt(b); l < bestLoss {
			bestFlop, bestLoss, bestBudget = lf, l, b
		}
	}
	if bestBudget > 0 && bestLoss < prefillBudgetGain*baseLoss { // else not clearly better: the deployment's
		f.budget = bestBudget
		out[1] = bestFlop
	}
	return out
}

// replayBudget fits the token budget per step by replay when too few requests had the
// server alone for fitPrefill: for the deployment's budget and each of budgetCandidates the
// compute efficiency is refitted on the whole replay (TTFT carries the chunks' staircase)
// with at most per simulations, and a candidate replaces the deployment's budget (in
// f.budget) when its loss is under replayBudgetGain of the deployment's. It returns x with
// the compute efficiency fitted for the budget kept.
func (f *fitter) replayBudget(x []float64, per int) []float64 {
	f.budget = 0
	base := f.search(f.loss, x, []int{1}, per)
	baseLoss := f.loss(base)
	best, bestLoss, bestBudget := base, baseLoss, 0
	for _, b := range budgetCandidates {
		f.budget = b
		y := f.search(f.loss, x, []int{1}, per)
		if l := f.loss(y); l < bestLoss {
			best, bestLoss, bestBudget = y, l, b
		}
	}
	f.budget = 0
	if bestBudget > 0 && bestLoss < replayBudgetGain*baseLoss {
		f.budget = bestBudget
		return best
	}
	return base
}

// prefillBudgetGain is the most of the deployment's idle-prefill loss a fitted budget may
// leave. Measured with 512-token chunks: 1e-4 of it in a bubble, 0.24 time-scaled at load 24
// on 2 cores.
const prefillBudgetGain = 0.5

// replayBudgetGain is the most of the deployment's replay loss a fitted budget may leave.
// Measured: the true budget left 0.05 to 0.06 of it (512-token chunks, 60 requests at
// 0.6/s, over HTTP in a bubble and time-scaled); a wrong one on a noisy time-scaled run of a
// server at the default (cmd/llmbench's TestCalibrateRecoversHiddenProfile) left 0.65.
const replayBudgetGain = 0.25
