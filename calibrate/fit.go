package calibrate

import (
	"errors"
	"fmt"
	"math"
	"time"

	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// fitter is one calibration in progress: the deployment as known, the loaded runs, and what
// the search has fitted so far. Its methods are the seams of Run.
type fitter struct {
	opts Options
	reg  *perf.Registry
	gpu  perf.GPU
	// start is the search's starting point: Engine's constants, else the GPU profile's or
	// perf's defaults.
	start perf.Config
	// kvRatio is the KV cache's bandwidth efficiency over the weights': the GPU profile's
	// when it gives both, else perf's defaults'.
	kvRatio   float64
	fit, held []run
	// seqCap is the fitted MaxNumSeqs, 0 while Engine's applies; capSource says how it was
	// learned (Result.CapSource).
	seqCap    int
	capSource string
	// budget is the fitted MaxNumBatchedTokens (fitPrefill), 0 while Engine's applies.
	budget int
	// fitBudget says whether the token budget is fitted: asked by Options and not declared.
	fitBudget bool
	// decl is what the fitted runs' servers declared (declared.go); capBy names the field a
	// declared cap came from; notes are said with the result (Result.Notes).
	decl  declared
	capBy string
	notes []string
	// evals counts the simulations (and step-model evaluations) the fit has run.
	evals int
	// computeFixed keeps the compute efficiency at its starting point: too few requests
	// computed enough prompt tokens to price prefill (a warm prefix cache; cachedNotes).
	computeFixed bool
	// perSeq says whether the search's fourth coordinate, the per-sequence cost of a step,
	// is in the model (fitDecode); off, the cost is 0 whatever the coordinate.
	perSeq bool
}

// newFitter checks opts, resolves the GPU profile and the search's starting point, and loads
// the runs to fit and the held-out runs.
func newFitter(opts Options) (*fitter, error) {
	if len(opts.Fit) == 0 {
		return nil, errors.New("calibrate: no runs to fit: give at least one results directory")
	}
	f := &fitter{opts: opts, reg: opts.Engine.Profiles}
	if f.reg == nil {
		f.reg = perf.NewRegistry()
	}
	gpuName := opts.Engine.GPU
	if gpuName == "" {
		gpuName = "h100"
	}
	gpu, err := f.reg.GPU(gpuName)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	f.gpu = gpu
	f.start = perf.Config{GPU: gpu, BWEff: opts.Engine.BWEff, FLOPEff: opts.Engine.FLOPEff,
		StepOverhead: opts.Engine.StepOverhead}.WithDefaults()
	if f.start.StepOverhead <= 0 { // "none" is no place to start a search in logarithms
		f.start.StepOverhead = perf.DefaultStepOverhead
	}
	// The KV cache's bandwidth efficiency moves with the weights'.
	f.kvRatio = perf.DefaultKVBWEff / perf.DefaultBWEff
	if gpu.BWEff > 0 && gpu.KVBWEff > 0 {
		f.kvRatio = gpu.KVBWEff / gpu.BWEff
	}
	if f.fit, err = loadAll(opts.Fit); err != nil {
		return nil, err
	}
	if f.held, err = loadAll(opts.Validate); err != nil {
		return nil, err
	}
	f.cachedNotes()
	facts, notes := loadFacts(opts.Fit)
	f.decl = declaredOf(facts, opts.Fit)
	f.notes = append(append(f.notes, notes...), f.decl.notes...)
	f.fitBudget = opts.FitMaxNumBatchedTokens
	switch b, given := f.decl.budget, opts.Engine.MaxNumBatchedTokens; {
	case f.fitBudget && b.n > 0:
		f.budget, f.fitBudget = b.n, false
	case !opts.FitMaxNumBatchedTokens && b.n > 0 && given > 0 && given != b.n:
		f.notes = append(f.notes, fmt.Sprintf("--max-num-batched-tokens %d is used; the server declares %d (%s)", given, b.n, b.what))
	}
	if opts.FitMaxNumSeqs && f.decl.seqs.n == 0 {
		if hasFacts(facts) {
			f.notes = append(f.notes, "the server declares no cap on running sequences (none of "+capKeyList()+" in the run facts): it is inferred from the runs")
		} else {
			f.notes = append(f.notes, "the runs record no server configuration (run.json's run.engine): the cap on running sequences is inferred from the runs")
		}
	}
	return f, nil
}

// loadAll loads each of paths in order; the first that fails is the error.
func loadAll(paths []string) ([]run, error) {
	var runs []run
	for _, p := range paths {
		r, err := load(p)
		if err != nil {
			return nil, err
		}
		runs = append(runs, r)
	}
	return runs, nil
}

// engineFor is the deployment with constants c in its GPU profile and the fitted cap on
// running sequences, if any (a copy of the caller's registry carries the profile; the
// caller's is never changed).
func (f *fitter) engineFor(c Constants) (refengine.Config, error) {
	e := f.opts.Engine
	if f.seqCap > 0 {
		e.MaxNumSeqs = f.seqCap
	}
	if f.budget > 0 {
		e.MaxNumBatchedTokens = f.budget
	}
	g := f.gpu
	g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead = c.BWEff, c.KVBWEff, c.FLOPEff, c.StepOverhead
	g.StepOverheadPerSeq = c.StepOverheadPerSeq
	e.GPU = g.Name
	e.BWEff, e.FLOPEff, e.StepOverhead, e.StepOverheadPerSeq = 0, 0, 0, 0
	r := f.reg.Clone()
	if err := r.Add(nil, []perf.GPU{g}); err != nil {
		return e, fmt.Errorf("calibrate: %w", err)
	}
	e.Profiles = r
	return e, nil
}

// toConst maps the search's coordinates (the logarithms of the bandwidth efficiency, the
// compute efficiency, the step overhead in µs and the per-sequence cost in µs) to constants,
// efficiencies capped at 1, the per-sequence cost 0 unless f.perSeq.
func (f *fitter) toConst(x []float64) Constants {
	bw := math.Min(math.Exp(x[0]), 1)
	c := Constants{BWEff: bw, KVBWEff: math.Min(bw*f.kvRatio, 1), FLOPEff: math.Min(math.Exp(x[1]), 1),
		StepOverhead: time.Duration(math.Exp(x[2]) * 1e3)}
	if f.perSeq && len(x) > 3 {
		c.StepOverheadPerSeq = time.Duration(math.Exp(x[3]) * 1e3)
	}
	return c
}

// replayLoss replays the fitted runs with the constants at x and returns their mismatch per
// measurement (TPOT alone when tpotOnly), plus a penalty for efficiencies above 1.
func (f *fitter) replayLoss(x []float64, tpotOnly bool) float64 {
	f.evals++
	var sum float64
	var n int
	penalty := 0.0
	for _, v := range x[:2] {
		if v > 0 { // efficiency above 1
			penalty += v * v * 100
		}
	}
	cfg, err := f.engineFor(f.toConst(x))
	if err != nil {
		return math.Inf(1)
	}
	for _, r := range f.fit {
		sim, err := simulate(r, cfg, 0)
		if err != nil {
			return math.Inf(1)
		}
		s, k := mismatch(r.meas, sim, tpotOnly)
		sum += s
		n += k
	}
	if n == 0 {
		return math.Inf(1)
	}
	return sum/float64(n) + penalty
}

// loss is the whole replay's loss at x: TPOT and the quantiles of TTFT and E2E.
func (f *fitter) loss(x []float64) float64 { return f.replayLoss(x, false) }

// tpotLoss leaves out TTFT and E2E, which count from the intended send time and so include
// the client's and the network's time before the server saw the request; TPOT is measured
// between chunks and carries the prefills interleaved with each decode.
func (f *fitter) tpotLoss(x []float64) float64 { return f.replayLoss(x, true) }

// search minimizes fn over the coordinates idx of x (the others fixed), restarting the
// simplex from the best point with a smaller one until its share of evaluations runs out:
// the simulated times are piecewise in the constants (a batch changes when a step ends
// earlier), so a simplex can stall on a plateau.
func (f *fitter) search(fn func([]float64) float64, x []float64, idx []int, budget int) []float64 {
	sub := func(y []float64) float64 {
		z := append([]float64(nil), x...)
		for i, k := range idx {
			z[k] = y[i]
		}
		return fn(z)
	}
	y := make([]float64, len(idx))
	for i, k := range idx {
		y[i] = x[k]
	}
	best, bestV := y, math.Inf(1)
	limit := f.evals + budget
	for step := 0.4; f.evals < limit && step > 1e-4; step /= 2 {
		got, v := nelderMead(sub, best, step, limit-f.evals)
		if v < bestV {
			best, bestV = got, v
		}
	}
	out := append([]float64(nil), x...)
	for i, k := range idx {
		out[k] = best[i]
	}
	return out
}

// searchConstants fits the constants (and, when asked, the cap on running sequences, left
// in f.seqCap) and returns the best point in the search's coordinates.
func (f *fitter) searchConstants() ([]float64, error) {
	maxEvals := f.opts.MaxEvals
	if maxEvals <= 0 {
		maxEvals = 600
	}
	start := f.start
	// The fourth coordinate, the per-sequence cost, stays out of the model until fitDecode
	// finds the decode steps need it.
	best := []float64{math.Log(start.BWEff), math.Log(start.FLOPEff), math.Log(float64(start.StepOverhead) / 1e3), 0}
	var gaps []gapObs
	for _, r := range f.fit {
		gaps = append(gaps, r.gaps...)
	}
	gapLoss, err := stepLoss(f.opts.Engine, f.reg, f.gpu, gaps)
	if err != nil {
		return nil, err
	}
	// A cap the server declares, else one the runs show directly (the server's gauges, the
	// TTFT queueing shape), holds for the whole search; else caps are tried by replay once
	// bandwidth and overhead are fitted.
	f.chooseCap()
	fitCap := func() {
		if f.opts.FitMaxNumSeqs && f.capSource == "" {
			if f.seqCap = fitSeqCap(f.fit, func() float64 { return f.loss(best) }, &f.seqCap); f.seqCap > 0 {
				f.capSource = CapFromReplay
			}
		}
	}
	if len(gaps) < 10 {
		best = f.search(f.loss, best, []int{0, 1, 2}, maxEvals)
		fitCap()
		return best, nil
	}
	// Decode steps seen between chunks separate bandwidth (the slope of step time in the
	// batch's KV cache) from the step overhead (what is left at no KV); the whole replay
	// then fixes compute from TTFT, and the decode fit is redone with it.
	g := func(x []float64) float64 { f.evals++; return gapLoss(f.toConst(x)) }
	best = f.fitDecode(g, best, gaps, maxEvals/6)
	decode := f.decodeCoords()
	fitCap()
	if f.computeFixed {
		// Prefill cannot be priced: compute and the token budget stay as given.
		return f.search(g, best, decode, maxEvals/6), nil
	}
	if obs := idlePrefills(f.fit); len(obs) >= minPrefills {
		// Prefill and decode apart: compute (and the token budget) from TTFT against prompt
		// length where a request had the server to itself, then decode again with it.
		best = f.fitPrefill(best, obs)
		best = f.search(g, best, decode, maxEvals/6)
		best = f.fitPrefill(best, obs)
		return best, nil
	}
	best = f.search(f.tpotLoss, best, []int{1}, maxEvals/3)
	if f.fitBudget {
		best = f.replayBudget(best, max(maxEvals/24, 8))
	}
	best = f.search(g, best, decode, maxEvals/6)
	best = f.search(f.tpotLoss, best, []int{1}, maxEvals/6)
	return best, nil
}

// Prefill is priced on the prompt tokens a request computed; compute is fitted only when at
// least minPrefills requests computed minComputed tokens or more (with fewer, TTFT says
// nothing of compute, and a search would settle anywhere: at the efficiency's bound, as the
// fit before issue 45 did on a warm cache).
const minComputed = 64

// cachedNotes notes how much of the fitted runs' prompts the servers' prefix caches held
// (the records' cached tokens), and fixes the compute efficiency when too little was computed.
func (f *fitter) cachedNotes() {
	var prompt, cached, computing int
	for _, r := range f.fit {
		prompt += r.promptTokens
		cached += r.cachedTokens
		for _, t := range r.tims {
			if t.uncached() >= minComputed {
				computing++
			}
		}
	}
	if prompt > 0 && cached*100 >= prompt {
		f.notes = append(f.notes, fmt.Sprintf("%.1f%% of the prompt tokens (%d of %d) came from the server's prefix cache (the records' cached tokens): prefill is priced on the uncached ones",
			100*float64(cached)/float64(prompt), cached, prompt))
	}
	if computing < minPrefills {
		f.computeFixed = true
		f.notes = append(f.notes, fmt.Sprintf("only %d requests computed %d or more prompt tokens (the rest were cached): the compute efficiency cannot be fitted and keeps its starting value %.4g, nor the token budget; flush the server's prefix cache or salt the prompts and run again",
			computing, minComputed, f.start.FLOPEff))
	}
}

// chooseCap sets the cap on running sequences when Options asks it fitted: the declared one
// beats the one the runs show (learnedCap), and a disagreement between them is noted; a
// declared bound (TGI's max_concurrent_requests) is the cap only where the runs show none
// under it. When the cap is given (--max-num-seqs), a declaration that differs is noted.
func (f *fitter) chooseCap() {
	d := f.decl.seqs
	if !f.opts.FitMaxNumSeqs {
		if given := f.opts.Engine.MaxNumSeqs; d.n > 0 && !d.bound && given > 0 && given != d.n {
			f.notes = append(f.notes, fmt.Sprintf("--max-num-seqs %d is used; the server declares %d (%s)", given, d.n, d.what))
		}
		return
	}
	inferred, how := learnedCap(f.fit)
	switch {
	case d.n == 0:
		f.seqCap, f.capSource = inferred, how
	case d.bound && inferred > 0 && inferred <= d.n:
		f.seqCap, f.capSource = inferred, how
		f.notes = append(f.notes, fmt.Sprintf("the runs show a cap of %d running sequences (%s) under the %d %s allows", inferred, how, d.n, d.what))
	default:
		f.seqCap, f.capSource, f.capBy = d.n, CapFromDeclared, d.what
		if inferred > 0 && inferred != d.n {
			f.notes = append(f.notes, fmt.Sprintf("the server declares %d running sequences (%s) but the runs show %d (%s): the declared %d is used",
				d.n, d.what, inferred, how, d.n))
		}
	}
}

// fitFrontEnd fits the time before the server saw a request (the client's, the network's,
// the server's own parsing and tokenizing), which is in every measured TTFT and E2E but in
// no engine step, as one delay: golden-section search over [0, the smallest measured TTFT].
// It returns 0 when no delay fits better than none.
func (f *fitter) fitFrontEnd(cfg refengine.Config) time.Duration {
	lim := minTTFT(f.fit)
	if lim <= 0 {
		return 0
	}
	fn := func(d float64) float64 {
		f.evals++
		var sum float64
		for _, r := range f.fit {
			sim, err := simulate(r, cfg, time.Duration(d*1e9))
			if err != nil {
				return math.Inf(1)
			}
			sum += ttftLoss(r.meas, sim)
		}
		return sum
	}
	zero := fn(0)
	d := goldenMin(fn, 0, lim, 24)
	if fn(d) < zero {
		return time.Duration(d * 1e9).Round(time.Microsecond)
	}
	return 0
}

// report replays every run, fitted then held out, with cfg and the front-end delay and
// returns each run's measured and simulated percentiles, and the fitted runs' residuals
// (with their decode steps by batch size priced with constants c).
func (f *fitter) report(cfg refengine.Config, frontEnd time.Duration, c Constants) ([]RunFit, []Residual, error) {
	var out []RunFit
	var res []Residual
	roof, err := rooflineFor(f.opts.Engine, f.reg, f.gpu)
	if err != nil {
		return nil, nil, err
	}
	rl, err := roof(c)
	if err != nil {
		return nil, nil, fmt.Errorf("calibrate: %w", err)
	}
	step := func(o gapObs) float64 {
		var t float64
		for _, w := range o.works {
			t += rl.StepTime(w).Seconds()
		}
		return t
	}
	for _, group := range []struct {
		runs []run
		held bool
	}{{f.fit, false}, {f.held, true}} {
		for _, r := range group.runs {
			sim, err := simulate(r, cfg, frontEnd)
			if err != nil {
				return nil, nil, fmt.Errorf("calibrate: %s: %w", r.path, err)
			}
			out = append(out, RunFit{Path: r.path, Requests: len(r.reqs), Held: group.held, Stats: stats(r.meas, sim)})
			if !group.held {
				res = append(res, residuals(r, sim)...)
				res = append(res, decodeResiduals(r.path, r.gaps, step)...)
			}
		}
	}
	return out, res, nil
}
