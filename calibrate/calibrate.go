// Package calibrate fits the reference engine's performance constants to measured runs of a
// real server, so that refengine.Simulate reproduces that deployment: the effective memory
// bandwidth and compute efficiencies of a known GPU and the per-step overhead.
//
// It reads llmbench results directories (their requests.msgpack), replays each run's requests
// through refengine.Simulate at the times they were intended and with the token counts the
// server reported, and searches the constants that minimize the squared log error of every
// request's TTFT, TPOT and E2E (Nelder-Mead over their logarithms). It then reports, per run,
// the measured and simulated P50/P90/P99 of TTFT, TPOT and E2E and their relative error, for
// the runs it fitted and for held-out runs.
//
// What a client cannot observe limits the fit: time a request waited in the server before
// admission is inside TTFT and indistinguishable from a slow prefill; the time before the
// server saw a request (client, network, parsing) is fitted as one front-end delay, reported
// but not part of the profile; prefix-cache hits of the real server are not
// seen (the replay treats every prompt as unique unless prefix caching is on in Engine and the
// prompts' text is not known either); the KV-cache bandwidth efficiency is fitted as one scale
// with the weights' (their ratio stays the engine's default). The fit is only as good as the
// spread of its run: a run at one batch size cannot separate bandwidth from step overhead.
//
// The scheduling limits are learned when Options asks (calibrate/caps.go, calibrate/prefill.go):
// the cap on running sequences from the server's scraped running/waiting gauges when it
// queued, else from the TTFT queueing shape (a request sent with k or more ahead of it in
// flight waits for one of them to end); the token budget per step (chunked prefill) with the
// compute efficiency from TTFT against prompt length of requests that had the server to
// themselves, apart from decode (bandwidth and step overhead from the chunk gaps). The fit
// reports its own residuals (TTFT and TPOT P50/P99, throughput; calibrate/residuals.go) and
// warns when they are beyond what the engine's model family can be trusted for; FormatProfile
// writes the learned limits and the residuals into the profile (calibrate/profile.go).
//
// calibrate does no network I/O and no rendering; the CLI prints what Run returns. It is not a
// supported Go API (the CLI is its client).
package calibrate

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// RecordsFile and ScrapeFile are the records file of a results directory and the server
// metrics `run --scrape-metrics` saves (runner.RecordsFile, runner.ScrapeFile).
const (
	RecordsFile = "requests.msgpack"
	ScrapeFile  = "server-metrics.json"
)

// Options says what to fit and against what.
type Options struct {
	// Engine is the deployment as known: model, GPU, TP, dtypes, profiles, scheduling limits,
	// prefix caching. Its BWEff, FLOPEff and StepOverhead are the starting point of the search
	// (zero: the GPU profile's, else perf's defaults); the fit replaces them.
	Engine refengine.Config
	// Fit and Validate are results directories, requests.msgpack files or vLLM `bench serve
	// --save-detailed` result files: the runs fitted and the runs only checked. Fit must not
	// be empty.
	Fit, Validate []string
	// MaxEvals bounds the simulations of the search (0: 600).
	MaxEvals int
	// FitMaxNumSeqs also fits the cap on running sequences (Engine.MaxNumSeqs is then only
	// the fallback): set it when the server's max-num-seqs is not known.
	FitMaxNumSeqs bool
	// FitMaxNumBatchedTokens also fits the token budget per step (chunked-prefill size) from
	// the TTFT of requests that had the server to themselves (Engine.MaxNumBatchedTokens is
	// then only the fallback): set it when the server's budget is not known.
	FitMaxNumBatchedTokens bool
}

// Constants are the fitted values.
type Constants struct {
	BWEff        float64       `json:"bw_eff"`    // fraction of peak HBM bandwidth for weights
	KVBWEff      float64       `json:"kv_bw_eff"` // for the KV cache: BWEff × the default ratio
	FLOPEff      float64       `json:"flop_eff"`  // fraction of peak tensor FLOP/s
	StepOverhead time.Duration `json:"step_overhead_ns"`
	// StepOverheadPerSeq is the cost of each running sequence in a step that does not hide
	// under the weights' read (perf.Config.StepOverheadPerSeq): host work per request, and on
	// a CPU or compute-bound server each sequence's own decode compute. 0 when the decode
	// steps do not show one (calibrate/decode.go).
	StepOverheadPerSeq time.Duration `json:"step_overhead_per_seq_ns,omitempty"`
}

// Stat is one percentile of one metric: measured, simulated and the relative error
// (simulated − measured) / measured.
type Stat struct {
	Metric    string  `json:"metric"` // "ttft", "tpot", "e2e"
	Quantile  float64 `json:"quantile"`
	Measured  float64 `json:"measured_ms"`
	Simulated float64 `json:"simulated_ms"`
	RelErr    float64 `json:"rel_err"`
}

// RunFit is the fit error on one run.
type RunFit struct {
	Path     string `json:"path"`
	Requests int    `json:"requests"`
	Held     bool   `json:"held_out"`
	Stats    []Stat `json:"stats"`
}

// Result is what Run found.
type Result struct {
	Constants Constants `json:"constants"`
	// GPU is the Engine's GPU profile with the fitted constants in it: write it with
	// perf.FormatProfiles and load it with --profiles.
	GPU   perf.GPU `json:"-"`
	Evals int      `json:"evals"`
	Loss  float64  `json:"loss"` // mean squared log error per measurement at the optimum
	Runs  []RunFit `json:"runs"`
	// MaxNumSeqs is the fitted cap on running sequences when Options.FitMaxNumSeqs asked for
	// it and the runs show one; 0 when not fitted or when no cap within reach explains them
	// better than Engine's.
	MaxNumSeqs int `json:"max_num_seqs,omitempty"`
	// MaxNumBatchedTokens is the fitted token budget per step when
	// Options.FitMaxNumBatchedTokens asked for it and one fits the idle prefills clearly
	// better than Engine's; 0 otherwise.
	MaxNumBatchedTokens int `json:"max_num_batched_tokens,omitempty"`
	// FrontEnd is the fitted time between the client's send and the engine seeing a request
	// (client, network, the server's parsing and tokenizing), added to every replayed
	// request's TTFT and E2E in Runs. It is not part of the profile: simulate's times are
	// the engine's.
	FrontEnd time.Duration `json:"front_end_ns"`

	// What the fit learned of the server's queueing and how well it fits (issue 35, item 4).

	// CapSource says where MaxNumSeqs came from: CapFromDeclared, CapFromScrape,
	// CapFromQueue or CapFromReplay; "" when none was learned. CapDeclaredBy names the
	// declaring field (llama.cpp's total_slots, …) when the server declared it.
	CapSource     string `json:"cap_source,omitempty"`
	CapDeclaredBy string `json:"cap_declared_by,omitempty"`
	// BudgetDeclaredBy names the field that declared MaxNumBatchedTokens when the server did
	// (SGLang's chunked_prefill_size, …); "" when it was fitted.
	BudgetDeclaredBy string `json:"budget_declared_by,omitempty"`
	// MaxModelLen is the longest request (prompt and output) the server declares (a llama.cpp
	// slot's n_ctx, SGLang's context_length, TGI's max_total_tokens, vLLM's max_model_len);
	// 0 when none. It goes into the profile; the replay does not use it (every fitted request
	// fit).
	MaxModelLen int `json:"max_model_len,omitempty"`
	// Notes say what the fit took from the servers' declarations and what it could not:
	// a declared limit absent, malformed or absurd, or one the runs contradict.
	Notes []string `json:"notes,omitempty"`
	// Residuals is the fit's own error on each fitted run (TTFT and TPOT P50/P99, output
	// throughput); Warnings says when some are beyond ResidualBound or ResidualTailBound.
	Residuals []Residual `json:"residuals"`
	Warnings  []string   `json:"warnings,omitempty"`
}

// run is one loaded results directory.
type run struct {
	path string
	// peak is the most requests streaming at once (between first token and end): a lower
	// bound of the server's cap on running sequences, reached when the cap binds.
	peak int
	// serverPeak is the most running requests the server reported (ScrapeFile), 0 without.
	serverPeak int
	reqs       []refengine.SimRequest
	meas       []measured
	gaps       []gapObs // decode-only steps seen between chunks (see decodeGaps)

	// serverCap is the most running requests the server reported while it also reported
	// requests waiting (ScrapeFile): its cap on running sequences, 0 when it never queued.
	serverCap int
	// tims are the requests' client-side times, in arrival order (queueCap, prefillObs).
	tims []timing
	// promptTokens and cachedTokens are the run's prompt tokens and those the server said
	// it found in its prefix cache (Record.CachedInputTokens).
	promptTokens, cachedTokens int
}

// gapObs is a stretch of consecutive chunk gaps of one request while no request was waiting
// for its first token: decode steps only, one per gap, whose batches are known from the
// records (which requests were between their first token and their end, and how many tokens
// each had). Timing a stretch rather than each gap keeps chunks that arrive together (two
// events in one read) or late from weighing in: only the stretch's two ends are measured.
type gapObs struct {
	works []perf.Work // one per step
	dt    float64     // seconds from the stretch's first chunk to its last
}

// minStretch is the fewest steps a stretch needs to be used.
const minStretch = 8

// timing is what decodeGaps, queueCap and idlePrefills need of one request: its times, its
// prompt (the context its decode steps read) and how much of it the server's prefix cache
// held (not computed by its prefill).
type timing struct {
	intended, first, end int64
	prompt, cached       int
	chunks               []metrics.Chunk
}

// uncached is the prompt tokens the server's prefill computed.
func (t timing) uncached() int { return t.prompt - t.cached }

type measured struct{ ttft, tpot, e2e float64 } // seconds; tpot 0 when < 2 output tokens

// Metrics and quantiles reported for each run.
var (
	reportMetrics   = []string{"ttft", "tpot", "e2e"}
	reportQuantiles = []float64{0.5, 0.9, 0.99}
)

// Run loads the runs, fits the constants on opts.Fit and reports the error on every run:
// newFitter checks the options and loads the runs, fitter.searchConstants fits the engine's
// constants, fitter.fitFrontEnd the delay before the server sees a request, and
// fitter.report replays every run with them (calibrate/fit.go).
func Run(opts Options) (*Result, error) {
	f, err := newFitter(opts)
	if err != nil {
		return nil, err
	}
	best, err := f.searchConstants()
	if err != nil {
		return nil, err
	}
	bestLoss := f.loss(best)
	c := f.toConst(best)
	res := &Result{Constants: c, Evals: f.evals, Loss: bestLoss, MaxNumSeqs: f.seqCap}
	res.GPU = f.gpu
	res.GPU.BWEff, res.GPU.KVBWEff, res.GPU.FLOPEff, res.GPU.StepOverhead = c.BWEff, c.KVBWEff, c.FLOPEff, c.StepOverhead
	res.GPU.StepOverheadPerSeq = c.StepOverheadPerSeq
	cfg, err := f.engineFor(c)
	if err != nil {
		return nil, err
	}
	res.FrontEnd = f.fitFrontEnd(cfg)
	res.Evals = f.evals
	if res.Runs, res.Residuals, err = f.report(cfg, res.FrontEnd, c); err != nil {
		return nil, err
	}
	res.CapSource, res.MaxNumBatchedTokens = f.capSource, f.budget
	res.CapDeclaredBy, res.MaxModelLen = f.capBy, f.decl.maxLen.n
	if f.decl.budget.n > 0 && f.budget == f.decl.budget.n {
		res.BudgetDeclaredBy = f.decl.budget.what
	}
	res.Warnings = append(residualWarnings(res.Residuals), f.boundWarnings(c)...)
	res.Notes = f.notes
	return res, nil
}

// boundWarnings says when a fitted efficiency sits at its bound of 1: the server is faster
// than the deployment the fit was told can be, so the model or GPU named is not the server's
// (a tiny model on a CPU calibrated as the default Llama 3.1 8B on an H100), and the profile
// cannot reproduce it.
func (f *fitter) boundWarnings(c Constants) []string {
	model := f.opts.Engine.Model
	if model == "" {
		model = "llama-3.1-8b"
	}
	var out []string
	if c.BWEff >= 0.999 {
		out = append(out, fmt.Sprintf("bw_eff is at its bound of 1: the server decodes faster than reading %s's weights at %s's peak bandwidth allows; the model or GPU the fit was told is not the server's (give the server's model with --model-config, or its device with --profiles)", model, f.gpu.Name))
	}
	if c.FLOPEff >= 0.999 && !f.computeFixed {
		out = append(out, fmt.Sprintf("flop_eff is at its bound of 1: the server prefills faster than %s's FLOPs at %s's peak allow; the model or GPU the fit was told is not the server's, or the server's prefix cache held prompts its responses do not report as cached", model, f.gpu.Name))
	}
	return out
}

// lossQuantiles are the quantiles of TTFT and E2E the fit matches. Matching distributions
// rather than each request's TTFT and E2E keeps the loss smooth: a slightly different step
// time moves every step boundary, and with it which step each arrival waits for, which
// changes single requests' TTFT by up to a step but their distribution hardly at all.
var lossQuantiles = []float64{0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9}

// mismatch is the sum of squared log ratios between sim and meas, and their count: each
// request's TPOT (alone when tpotOnly) (an average over its decode steps, robust to step alignment) and the
// lossQuantiles of TTFT and of E2E, each quantile weighted as len(meas)/len(lossQuantiles)
// requests. (Chunk gaps are not compared one by one: over HTTP two chunks can arrive in one
// read; decodeGaps times whole stretches instead.)
func mismatch(meas, sim []measured, tpotOnly bool) (float64, int) {
	var sum float64
	var n int
	var mt, st, me, se []float64
	for i, m := range meas {
		s := sim[i]
		if m.tpot > 0 && s.tpot > 0 {
			d := math.Log(s.tpot / m.tpot)
			sum += d * d
			n++
		}
		mt, st = append(mt, m.ttft), append(st, s.ttft)
		me, se = append(me, m.e2e), append(se, s.e2e)
	}
	if tpotOnly {
		return sum, n
	}
	w := float64(len(meas)) / float64(len(lossQuantiles))
	for _, pair := range [][2][]float64{{mt, st}, {me, se}} {
		if len(pair[0]) == 0 || len(pair[1]) == 0 {
			continue
		}
		sort.Float64s(pair[0])
		sort.Float64s(pair[1])
		for _, q := range lossQuantiles {
			a, b := quantile(pair[0], q), quantile(pair[1], q)
			if a > 0 && b > 0 {
				d := math.Log(b / a)
				sum += w * d * d
				n += int(math.Round(w))
			}
		}
	}
	return sum, n
}

// fitSeqCap tries caps on running sequences from the runs' peak streaming count up to 8
// more (requests in prefill also run, so a binding cap is at or a little above the peak),
// and the server's own peak of running requests when it scraped one beyond those,
// setting *slot for each and scoring it with loss; it returns the best cap when its loss is
// under 0.9 of the loss with no fitted cap (Engine's), else 0.
func fitSeqCap(fit []run, loss func() float64, slot *int) int {
	peak, server := 0, 0
	for _, r := range fit {
		peak = max(peak, r.peak)
		server = max(server, r.serverPeak)
	}
	try := []int{}
	for c := max(peak, 1); c <= peak+8; c++ {
		try = append(try, c)
	}
	if server > peak+8 {
		try = append(try, server)
	}
	*slot = 0
	base := loss()
	best, bestLoss := 0, base
	for _, c := range try {
		*slot = c
		if v := loss(); v < bestLoss {
			best, bestLoss = c, v
		}
	}
	*slot = 0
	if best > 0 && bestLoss < 0.9*base {
		return best
	}
	return 0
}

// stretchScale is the log error at which a stretch's weight in stepLoss starts to fall off.
const stretchScale = 0.05

// stepLoss returns the Cauchy loss of the modelled decode stretches' times against the
// observed ones, ln(1 + (log error / stretchScale)²), weighted by each stretch's steps: a long
// stretch is timed more precisely, and a stretch that a stall on the client's machine made
// longer (a delivery hiccup, not a slow step) counts little instead of pulling the fit.
func stepLoss(e refengine.Config, reg *perf.Registry, gpu perf.GPU, gaps []gapObs) (func(Constants) float64, error) {
	roof, err := rooflineFor(e, reg, gpu)
	if err != nil {
		return nil, err
	}
	return func(c Constants) float64 {
		r, err := roof(c)
		if err != nil || len(gaps) == 0 {
			return math.Inf(1)
		}
		var sum, weight float64
		for _, o := range gaps {
			var model float64
			for _, w := range o.works {
				model += r.StepTime(w).Seconds()
			}
			d := math.Log(model/o.dt) / stretchScale
			n := float64(len(o.works))
			sum += n * math.Log1p(d*d)
			weight += n
		}
		return sum / weight
	}, nil
}

// rooflineFor returns a function building the step-time model of deployment e on gpu with
// constants c (the model named by e, from reg).
func rooflineFor(e refengine.Config, reg *perf.Registry, gpu perf.GPU) (func(Constants) (*perf.Roofline, error), error) {
	name := e.Model
	if name == "" {
		name = "llama-3.1-8b"
	}
	m, err := reg.Model(name)
	if err != nil {
		return nil, fmt.Errorf("calibrate: %w", err)
	}
	return func(c Constants) (*perf.Roofline, error) {
		g := gpu
		g.BWEff, g.KVBWEff, g.FLOPEff, g.StepOverhead = c.BWEff, c.KVBWEff, c.FLOPEff, c.StepOverhead
		g.StepOverheadPerSeq = c.StepOverheadPerSeq
		return perf.New(perf.Config{Model: m, GPU: g, TP: e.TP, WeightDtype: e.WeightDtype, KVDtype: e.KVDtype,
			Combine: e.Combine, GPUMemUtil: e.GPUMemUtil, ReserveBytes: e.ReserveBytes, BlockSize: e.BlockSize})
	}, nil
}

// load reads the successful requests of one results directory, records file or vLLM
// `bench serve --save-detailed` result file (ParseVLLMBench).
func load(path string) (run, error) {
	file := path
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		file = filepath.Join(path, RecordsFile)
	}
	var serverPeak, serverCap int
	if file != path { // a results directory: its server metrics, when scraped
		p, c, err := scrapedGauges(filepath.Join(path, ScrapeFile))
		if err != nil {
			return run{}, err
		}
		serverPeak, serverCap = p, c
	}
	var recs []metrics.Record
	if data, err := os.ReadFile(file); err == nil && isJSON(data) {
		all, err := ParseVLLMBench(data, path)
		if err != nil {
			return run{}, fmt.Errorf("calibrate: %w", err)
		}
		for _, r := range all {
			if r.OK() {
				recs = append(recs, r)
			}
		}
	} else {
		err := metrics.EachRecord(file, func(r *metrics.Record) error {
			if r.OK() {
				c := *r
				c.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
				recs = append(recs, c)
			}
			return nil
		})
		if err != nil && !errors.Is(err, io.EOF) {
			return run{}, fmt.Errorf("calibrate: %s: %w", path, err)
		}
	}
	if len(recs) == 0 {
		return run{}, fmt.Errorf("calibrate: %s: no successful requests to fit", path)
	}
	sort.SliceStable(recs, func(a, b int) bool { return recs[a].Intended < recs[b].Intended })
	t0 := recs[0].Intended
	r := run{path: path}
	var tims []timing
	for i := range recs {
		rec := &recs[i]
		in := rec.InputTokens
		if rec.ServerInputTokens > 0 {
			in = rec.ServerInputTokens
		}
		out := rec.OutputTokens
		if rec.ServerOutputTokens > 0 {
			out = rec.ServerOutputTokens
		}
		if in < 1 || out < 1 || rec.FirstToken < rec.Intended || rec.End < rec.FirstToken {
			continue
		}
		// Prefill is priced on the tokens the server computed: those its prefix cache did not
		// hold (at least one, as an engine always computes the last prompt token).
		cached := min(max(rec.CachedInputTokens, 0), in-1)
		r.cachedTokens += cached
		r.promptTokens += in
		r.reqs = append(r.reqs, refengine.SimRequest{ID: fmt.Sprintf("%d:%s", rec.Repeat, rec.ID),
			Arrival: time.Duration(rec.Intended - t0), PromptTokens: in - cached, MaxTokens: out, IgnoreEOS: true})
		m := measured{ttft: float64(rec.FirstToken-rec.Intended) / 1e9, e2e: float64(rec.End-rec.Intended) / 1e9}
		if out > 1 {
			m.tpot = float64(rec.End-rec.FirstToken) / 1e9 / float64(out-1)
		}
		r.meas = append(r.meas, m)
		tims = append(tims, timing{intended: rec.Intended, first: rec.FirstToken, end: rec.End, prompt: in, cached: cached, chunks: rec.Chunks})
	}
	r.gaps = decodeGaps(tims)
	r.peak = peakStreaming(tims)
	r.serverPeak, r.serverCap = serverPeak, serverCap
	r.tims = tims
	if len(r.reqs) == 0 {
		return run{}, fmt.Errorf("calibrate: %s: no request with token counts and times to fit", path)
	}
	return r, nil
}

// scrapedGauges reads a server-metrics.json (vLLM's vllm:num_requests_running and
// num_requests_waiting, SGLang's and TGI's equivalents, as run --scrape-metrics saves them):
// peak is the largest running count, capped the largest running count of a sample that also
// had requests waiting (the server queued them, so it ran as many as it may), 0 when no
// sample had any waiting. Both are 0 when the file does not exist.
func scrapedGauges(path string) (peak, capped int, err error) {
	data, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("calibrate: %w", err)
	}
	return parseGauges(data, path)
}

// parseGauges is scrapedGauges on the file's contents; path names it in errors.
func parseGauges(data []byte, path string) (peak, capped int, err error) {
	var f struct {
		Samples []struct {
			Running float64 `json:"running"`
			Waiting float64 `json:"waiting"`
		} `json:"samples"`
	}
	if err := json.Unmarshal(data, &f); err != nil {
		return 0, 0, fmt.Errorf("calibrate: %s: not a server-metrics file: %w", path, err)
	}
	for _, s := range f.Samples {
		if !(s.Running > 0 && s.Running < 1e7) { // NaN, negative or absurd: not a count
			continue
		}
		peak = max(peak, int(s.Running))
		if s.Waiting >= 1 && s.Waiting < 1e9 {
			capped = max(capped, int(s.Running))
		}
	}
	return peak, capped, nil
}

// minTTFT is the smallest measured TTFT of the runs, in seconds.
func minTTFT(runs []run) float64 {
	lo := math.Inf(1)
	for _, r := range runs {
		for _, m := range r.meas {
			lo = math.Min(lo, m.ttft)
		}
	}
	if math.IsInf(lo, 1) {
		return 0
	}
	return lo
}

// goldenMin minimizes f over [a, b] by golden-section search in n steps.
func goldenMin(f func(float64) float64, a, b float64, n int) float64 {
	const g = 0.6180339887498949
	c, d := b-g*(b-a), a+g*(b-a)
	fc, fd := f(c), f(d)
	for range n {
		if fc < fd {
			b, d, fd = d, c, fc
			c = b - g*(b-a)
			fc = f(c)
		} else {
			a, c, fc = c, d, fd
			d = a + g*(b-a)
			fd = f(d)
		}
	}
	return (a + b) / 2
}

// peakStreaming is the most requests between their first token and their end at once.
func peakStreaming(ts []timing) int {
	type ev struct {
		t int64
		d int
	}
	evs := make([]ev, 0, 2*len(ts))
	for _, t := range ts {
		evs = append(evs, ev{t.first, 1}, ev{t.end, -1})
	}
	sort.Slice(evs, func(a, b int) bool { return evs[a].t < evs[b].t || (evs[a].t == evs[b].t && evs[a].d < evs[b].d) })
	n, peak := 0, 0
	for _, e := range evs {
		n += e.d
		peak = max(peak, n)
	}
	return peak
}

// decodeGaps returns every gap between consecutive chunks of a request during which no
// request had arrived and not yet received its first token (so no prefill can have run), with
// the decode batch at the gap's midpoint: each request between its first token and its end,
// at its prompt plus the tokens it had received. A chunk carrying several tokens (speculative
// decoding, server-side coalescing) makes the gap's work uncertain, so such gaps are skipped.
func decodeGaps(ts []timing) []gapObs {
	var out []gapObs
	for _, t := range ts {
		var cur gapObs
		var from int64
		flush := func(to int64) {
			if len(cur.works) >= minStretch {
				cur.dt = float64(to-from) / 1e9
				out = append(out, cur)
			}
			cur = gapObs{}
		}
		for j := 1; j < len(t.chunks); j++ {
			a, b := t.chunks[j-1].T, t.chunks[j].T
			w, ok := decodeStep(ts, a, b)
			if !ok || t.chunks[j].Tokens != 1 {
				flush(a)
				continue
			}
			if len(cur.works) == 0 {
				from = a
			}
			cur.works = append(cur.works, w)
		}
		if n := len(t.chunks); n > 0 {
			flush(t.chunks[n-1].T)
		}
	}
	return out
}

// decodeStep returns the decode batch running between a and b (at the midpoint), and false
// when some request arrived and had no first token during (a, b], so a prefill may have run.
func decodeStep(ts []timing, a, b int64) (perf.Work, bool) {
	mid := a + (b-a)/2
	var w perf.Work
	for _, o := range ts {
		if o.intended <= b && o.first > a {
			return w, false
		}
		if o.first <= mid && mid < o.end {
			tokens := sort.Search(len(o.chunks), func(k int) bool { return o.chunks[k].T > mid })
			ctx := o.prompt
			for _, c := range o.chunks[:tokens] {
				ctx += int(c.Tokens)
			}
			w.Add(1, ctx)
		}
	}
	return w, w.Seqs > 0
}

// simulate replays r on cfg. frontEnd delays every request's arrival at the engine and is
// counted in its TTFT and E2E, which the records measure from the client's send.
func simulate(r run, cfg refengine.Config, frontEnd time.Duration) ([]measured, error) {
	reqs := r.reqs
	if frontEnd > 0 {
		reqs = make([]refengine.SimRequest, len(r.reqs))
		for i, q := range r.reqs {
			q.Arrival += frontEnd
			reqs[i] = q
		}
	}
	res, err := refengine.Simulate(reqs, cfg)
	if err != nil {
		return nil, err
	}
	out := make([]measured, len(res.Timelines))
	for i := range res.Timelines {
		tl := &res.Timelines[i]
		m := measured{ttft: (tl.TTFT() + frontEnd).Seconds(), e2e: (tl.E2E() + frontEnd).Seconds()}
		if tl.OutputTokens > 1 {
			m.tpot = (tl.E2E() - tl.TTFT()).Seconds() / float64(tl.OutputTokens-1)
		}
		out[i] = m
	}
	return out, nil
}

// ttftLoss is the squared log error of the lossQuantiles of TTFT.
func ttftLoss(meas, sim []measured) float64 {
	a, b := make([]float64, len(meas)), make([]float64, len(sim))
	for i := range meas {
		a[i], b[i] = meas[i].ttft, sim[i].ttft
	}
	sort.Float64s(a)
	sort.Float64s(b)
	var sum float64
	for _, q := range lossQuantiles {
		if x, y := quantile(a, q), quantile(b, q); x > 0 && y > 0 {
			d := math.Log(y / x)
			sum += d * d
		}
	}
	return sum
}

// stats compares the measured and simulated percentiles of each metric.
func stats(meas, sim []measured) []Stat {
	var out []Stat
	for _, name := range reportMetrics {
		pick := func(m measured) float64 {
			switch name {
			case "ttft":
				return m.ttft
			case "tpot":
				return m.tpot
			}
			return m.e2e
		}
		var a, b []float64
		for i := range meas {
			if x, y := pick(meas[i]), pick(sim[i]); x > 0 && y > 0 {
				a, b = append(a, x), append(b, y)
			}
		}
		if len(a) == 0 {
			continue
		}
		sort.Float64s(a)
		sort.Float64s(b)
		for _, q := range reportQuantiles {
			m, s := quantile(a, q)*1e3, quantile(b, q)*1e3
			out = append(out, Stat{Metric: name, Quantile: q, Measured: m, Simulated: s, RelErr: (s - m) / m})
		}
	}
	return out
}

// quantile is the nearest-rank quantile of sorted xs: the smallest value with at least q of
// the values at or below it.
func quantile(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[min(max(i, 0), len(xs)-1)]
}

// Table renders the per-run errors as aligned text, one line per run and metric.
func (r *Result) Table() string {
	var b strings.Builder
	perSeq := ""
	if c := r.Constants.StepOverheadPerSeq; c > 0 {
		perSeq = fmt.Sprintf(" · per running sequence %s", c.Round(time.Microsecond/10))
	}
	fmt.Fprintf(&b, "fitted: bw_eff %.4f (kv %.4f) · flop_eff %.4f · step overhead %s%s · %d simulations · loss %.3g\n",
		r.Constants.BWEff, r.Constants.KVBWEff, r.Constants.FLOPEff, r.Constants.StepOverhead.Round(time.Microsecond), perSeq, r.Evals, r.Loss)
	if r.FrontEnd > 0 {
		fmt.Fprintf(&b, "fitted: front end %s before the engine sees a request (client, network, parsing; in TTFT and E2E below, not in the profile)\n", r.FrontEnd)
	}
	switch {
	case r.MaxNumSeqs > 0 && r.CapDeclaredBy != "":
		fmt.Fprintf(&b, "declared: max-num-seqs %d by the server: %s (written into the profile; --profiles applies it unless --max-num-seqs is given)\n", r.MaxNumSeqs, r.CapDeclaredBy)
	case r.MaxNumSeqs > 0:
		fmt.Fprintf(&b, "fitted: max-num-seqs %d from the %s (written into the profile; --profiles applies it unless --max-num-seqs is given)\n", r.MaxNumSeqs, r.CapSource)
	}
	switch {
	case r.MaxNumBatchedTokens > 0 && r.BudgetDeclaredBy != "":
		fmt.Fprintf(&b, "declared: max-num-batched-tokens %d by the server: %s (written into the profile)\n", r.MaxNumBatchedTokens, r.BudgetDeclaredBy)
	case r.MaxNumBatchedTokens > 0:
		fmt.Fprintf(&b, "fitted: max-num-batched-tokens %d from the TTFT staircase in prompt length (chunked prefill; written into the profile)\n", r.MaxNumBatchedTokens)
	}
	if r.MaxModelLen > 0 {
		fmt.Fprintf(&b, "declared: max-model-len %d by the server (written into the profile; --profiles applies it unless --max-model-len is given)\n", r.MaxModelLen)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "note: %s\n", n)
	}
	fmt.Fprintf(&b, "%-8s %-5s %9s %9s %9s %9s %9s %9s  %s\n", "run", "metric", "P50 ms", "err", "P90 ms", "err", "P99 ms", "err", "path")
	for _, rf := range r.Runs {
		kind := "fit"
		if rf.Held {
			kind = "held-out"
		}
		for _, name := range reportMetrics {
			line := fmt.Sprintf("%-8s %-5s", kind, name)
			found := false
			for _, s := range rf.Stats {
				if s.Metric == name {
					line += fmt.Sprintf(" %9.2f %+8.1f%%", s.Measured, s.RelErr*100)
					found = true
				}
			}
			if found {
				fmt.Fprintf(&b, "%s  %s\n", line, rf.Path)
			}
		}
	}
	if len(r.Residuals) > 0 {
		fmt.Fprintf(&b, "residuals (fit vs data on the fitted runs):\n")
		for _, x := range r.Residuals {
			fmt.Fprintf(&b, "  %-10s %10.2f %-5s measured %10.2f  %+7.1f%%  %s\n", x.Quantity, x.Simulated, x.Unit, x.Measured, x.RelErr*100, x.Run)
		}
	}
	for _, w := range r.Warnings {
		fmt.Fprintf(&b, "warning: %s\n", w)
	}
	return b.String()
}
