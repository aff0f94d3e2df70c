package metrics

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// MergeMode says how the merged results relate in time.
type MergeMode int

const (
	// MergeShards: concurrent shards of one run sharing the run epoch (--shard i/N with a
	// shared start). The steady window is the union of the shards' windows and the time
	// series add bucket by bucket.
	MergeShards MergeMode = iota
	// MergeRuns: separate runs one after another (repeats). The steady window is the sum of
	// the runs' windows, so rates are averages over the time measured; the time series are
	// dropped (their epochs differ).
	MergeRuns
)

// MergeSummaries combines summaries of shards or runs without reading their records. Every
// distribution is rebuilt from the merged histograms (Summary.Histograms), so percentiles,
// means and CDFs are exactly those of one Summarize over all the records; counters add, and
// rates are recomputed over the merged window. Stall counts are exact when every part used
// the same threshold (an absolute --stall-threshold); otherwise a warning says the parts used
// different thresholds. The merged time series (MergeShards) carries exact counts but no
// window percentiles, which histograms of whole runs cannot give; re-summarize the records
// for those. Run and Workload are copied from the first summary for the caller to adjust.
func MergeSummaries(mode MergeMode, sums ...*Summary) (*Summary, error) {
	if err := checkMergeable(sums); err != nil {
		return nil, err
	}
	hists, fluidN, err := mergeHists(sums)
	if err != nil {
		return nil, err
	}
	first := sums[0]
	out := &Summary{
		Schema:     SummarySchema,
		Run:        first.Run,
		Workload:   first.Workload,
		ByClass:    map[string]*ClassSummary{},
		Histograms: map[string]string{},
		Warnings:   []string{},
	}
	for k, h := range hists {
		enc, err := h.encode()
		if err != nil {
			return nil, err
		}
		out.Histograms[k] = enc
	}
	out.Throughput = mergeWindow(mode, sums)
	mergeHeadline(out, sums, hists, fluidN)
	mergeClasses(out, sums, hists, fluidN)
	mergeExcluded(out, sums, hists)
	out.Client = mergeClient(sums, hists)
	out.Cost = mergeCost(sums, out)
	out.Quality = mergeQuality(sums)
	out.Inputs = mergeInputs(sums)
	out.PrefixCache = mergePrefixCache(sums, hists)
	if mode == MergeShards {
		ts, err := mergeTimeSeries(sums)
		if err != nil {
			out.Warnings = append(out.Warnings, err.Error())
		}
		out.TimeSeries = ts
	}
	mergeWarnings(out, sums)
	return out, nil
}

func checkMergeable(sums []*Summary) error {
	if len(sums) == 0 {
		return errors.New("merge: no summaries")
	}
	for i, s := range sums {
		if s == nil {
			return fmt.Errorf("merge: summary %d is nil", i+1)
		}
		if s.Schema != SummarySchema {
			return fmt.Errorf("merge: summary %d has schema %q, want %q", i+1, s.Schema, SummarySchema)
		}
	}
	return nil
}

// mergeHists decodes and adds every part's histograms by key. fluidN[i][prefix] is part i's
// fluidity count under prefix ("", "class/C/"), needed to recover its ">= 0.9" count.
func mergeHists(sums []*Summary) (map[string]*hist, []map[string]int64, error) {
	hists := map[string]*hist{}
	fluidN := make([]map[string]int64, len(sums))
	for i, s := range sums {
		fluidN[i] = map[string]int64{}
		for k, enc := range s.Histograms {
			h, err := decodeHist(enc)
			if err != nil {
				return nil, nil, fmt.Errorf("merge: summary %d histogram %q: %w", i+1, k, err)
			}
			if strings.HasSuffix(k, histNames[hFluid]) {
				fluidN[i][strings.TrimSuffix(k, histNames[hFluid])] = h.count()
			}
			if cur, ok := hists[k]; ok {
				cur.merge(h)
			} else {
				hists[k] = h
			}
		}
	}
	return hists, fluidN, nil
}

// mergeHeadline fills the headline blocks of out (whose window is set) from the parts.
func mergeHeadline(out *Summary, sums []*Summary, hists map[string]*hist, fluidN []map[string]int64) {
	heads := make([]*partBlocks, len(sums))
	for i, s := range sums {
		heads[i] = &partBlocks{req: s.Requests, tp: s.Throughput, st: s.Stalls, fl: s.Fluidity, gp: s.Goodput, fluidN: fluidN[i][""]}
	}
	hb := mergeBlocks(heads, hists, "", out.Throughput.WindowS)
	out.Requests, out.Latency, out.Stalls, out.Fluidity, out.Goodput = hb.req, hb.lat, hb.st, hb.fl, hb.gp
	out.Throughput.RequestsPerS, out.Throughput.InputTokensPerS, out.Throughput.OutputTokensPerS = hb.tp.RequestsPerS, hb.tp.InputTokensPerS, hb.tp.OutputTokensPerS
	out.Goodput.ClassSLO = sums[0].Goodput.ClassSLO
	if h, ok := hists[histNames[hTPC]]; ok {
		out.TokensPerChunk = h.dist(scaleCount)
	}
	if h, ok := hists[histNames[hTPB]]; ok {
		out.TokensPerBurst = h.dist(scaleCount)
	}
}

// mergeClasses fills out.ByClass with every class any part has, over the merged window.
func mergeClasses(out *Summary, sums []*Summary, hists map[string]*hist, fluidN []map[string]int64) {
	win := out.Throughput.WindowS
	classNames := map[string]bool{}
	for _, s := range sums {
		for c := range s.ByClass {
			classNames[c] = true
		}
	}
	for c := range classNames {
		var parts []*partBlocks
		for i, s := range sums {
			if cs, ok := s.ByClass[c]; ok {
				parts = append(parts, &partBlocks{req: cs.Requests, tp: cs.Throughput, st: cs.Stalls, fl: cs.Fluidity, gp: cs.Goodput, fluidN: fluidN[i]["class/"+c+"/"]})
			}
		}
		b := mergeBlocks(parts, hists, "class/"+c+"/", win)
		out.ByClass[c] = &ClassSummary{Requests: b.req, Latency: b.lat, Stalls: b.st, Fluidity: b.fl, Goodput: b.gp,
			Throughput: Throughput{WindowS: win, WindowStartS: out.Throughput.WindowStartS, WindowEndS: out.Throughput.WindowEndS,
				RequestsPerS: b.tp.RequestsPerS, InputTokensPerS: b.tp.InputTokensPerS, OutputTokensPerS: b.tp.OutputTokensPerS}}
	}
}

// mergeExcluded fills out.Excluded with every phase any part excluded.
func mergeExcluded(out *Summary, sums []*Summary, hists map[string]*hist) {
	for _, s := range sums {
		for p := range s.Excluded {
			if out.Excluded == nil {
				out.Excluded = map[string]*PhaseSummary{}
			}
			out.Excluded[p] = nil
		}
	}
	for p := range out.Excluded {
		var parts []*partBlocks
		for _, s := range sums {
			if ps, ok := s.Excluded[p]; ok && ps != nil {
				parts = append(parts, &partBlocks{req: ps.Requests})
			}
		}
		b := mergeBlocks(parts, hists, p+"/", 0)
		out.Excluded[p] = &PhaseSummary{Requests: b.req, Latency: b.lat}
	}
}

// mergeClient is the client's health over all parts: the merged schedule lag, the highest CPU
// fraction, and limited when any part was.
func mergeClient(sums []*Summary, hists map[string]*hist) Client {
	var c Client
	if h, ok := hists[histNames[hLag]]; ok {
		c.LagMs = h.dist(scaleMicrosToMs)
	}
	var reasons []string
	for _, s := range sums {
		c.CPUFraction = math.Max(c.CPUFraction, s.Client.CPUFraction)
		c.CPUStealFraction = math.Max(c.CPUStealFraction, s.Client.CPUStealFraction)
		if s.Client.Limited {
			c.Limited = true
			reasons = appendUnique(reasons, s.Client.Reason)
		}
	}
	c.Reason = strings.Join(reasons, "; ")
	return c
}

// mergeWarnings adds the warnings of the whole (client limits, failures, token counts) and
// carries the parts' other warnings over with their part's number.
func mergeWarnings(out *Summary, sums []*Summary) {
	if out.Client.Limited {
		out.Warnings = append(out.Warnings, out.Client.Reason)
	}
	out.Warnings = append(out.Warnings, failureWarning(out.Requests)...)
	out.Warnings = append(out.Warnings, survivorWarning(out.Requests, "")...)
	out.Warnings = append(out.Warnings, mismatchWarning(out.Requests)...)
	out.Warnings = append(out.Warnings, inputWarning(out.Inputs)...)
	first := sums[0]
	for i, s := range sums {
		for _, w := range s.Warnings {
			if strings.HasPrefix(w, "failures:") || strings.HasPrefix(w, survivorPrefix) || strings.HasPrefix(w, "token counts:") || strings.HasPrefix(w, "client-limited") {
				continue
			}
			out.Warnings = appendUnique(out.Warnings, fmt.Sprintf("part %d: %s", i+1, w))
		}
		if s.Stalls.ThresholdMs != first.Stalls.ThresholdMs {
			out.Warnings = appendUnique(out.Warnings, fmt.Sprintf("stalls: the parts used different stall thresholds (%.3g ms and %.3g ms); merged stall counts mix them — use an absolute --stall-threshold to merge exactly", first.Stalls.ThresholdMs, s.Stalls.ThresholdMs))
		}
	}
}

func appendUnique(list []string, s string) []string {
	for _, x := range list {
		if x == s {
			return list
		}
	}
	return append(list, s)
}

func mergeWindow(mode MergeMode, sums []*Summary) Throughput {
	var t Throughput
	for i, s := range sums {
		w := s.Throughput
		if i == 0 {
			t.WindowStartS, t.WindowEndS = w.WindowStartS, w.WindowEndS
			t.WindowS = w.WindowS
			continue
		}
		t.WindowStartS = math.Min(t.WindowStartS, w.WindowStartS)
		switch mode {
		case MergeShards:
			t.WindowEndS = math.Max(t.WindowEndS, w.WindowEndS)
			t.WindowS = t.WindowEndS - t.WindowStartS
		case MergeRuns:
			t.WindowS += w.WindowS
			t.WindowEndS = t.WindowStartS + t.WindowS
		}
	}
	return t
}

// partBlocks are the counter blocks of one part (headline, class or phase).
type partBlocks struct {
	req Requests
	tp  Throughput
	st  Stalls
	fl  Fluidity
	gp  Goodput
	lat Latency
	// fluidN is how many requests the part's fluidity block covers.
	fluidN int64
}

func mergeBlocks(parts []*partBlocks, hists map[string]*hist, prefix string, win float64) *partBlocks {
	out := &partBlocks{req: Requests{Failures: map[string]int{}, FailStatus: map[string]int{}, TokenSource: map[string]int{}}}
	var mismatch, fluidGE90 int64
	var okIn, okOut float64
	for i, p := range parts {
		r := p.req
		out.req.Total += r.Total
		out.req.Succeeded += r.Succeeded
		out.req.Failed += r.Failed
		out.req.Dropped += r.Dropped
		out.req.Cancelled += r.Cancelled
		out.req.InputTokens += r.InputTokens
		out.req.OutputTokens += r.OutputTokens
		out.req.TokenCompared += r.TokenCompared
		out.req.TokenMismatchTokens += r.TokenMismatchTokens
		out.req.TokenComparedTokens += r.TokenComparedTokens
		mismatch += int64(math.Round(r.TokenMismatch * float64(r.TokenCompared)))
		addCounts(out.req.Failures, r.Failures)
		addCounts(out.req.FailStatus, r.FailStatus)
		addCounts(out.req.TokenSource, r.TokenSource)
		if len(r.InputSource) > 0 {
			if out.req.InputSource == nil {
				out.req.InputSource = map[string]int{}
			}
			addCounts(out.req.InputSource, r.InputSource)
		}
		mergeProvenance(&out.req, r)
		okIn += p.tp.InputTokensPerS * p.tp.WindowS
		okOut += p.tp.OutputTokensPerS * p.tp.WindowS

		if i == 0 {
			out.st.ThresholdMs, out.st.ThresholdRule, out.st.Source = p.st.ThresholdMs, p.st.ThresholdRule, p.st.Source
			out.st.BurstCadenceMs, out.st.BurstWindowMs = p.st.BurstCadenceMs, p.st.BurstWindowMs
			out.fl.TTFTDeadlineMs, out.fl.TBTDeadlineMs = p.fl.TTFTDeadlineMs, p.fl.TBTDeadlineMs
			out.fl.DeadlineRule = p.fl.DeadlineRule
			out.gp.SLO = p.gp.SLO
		}
		out.st.Count += p.st.Count
		out.st.RequestsWithStall += p.st.RequestsWithStall
		out.st.StalledTimeMs += p.st.StalledTimeMs
		out.st.DecodeTimeMs += p.st.DecodeTimeMs
		out.gp.Met += p.gp.Met
		fluidGE90 += int64(math.Round(p.fl.FractionAbove90 * float64(p.fluidN)))
	}
	fh := hists[prefix+histNames[hFluid]]
	if out.req.TokenCompared > 0 {
		out.req.TokenMismatch = float64(mismatch) / float64(out.req.TokenCompared)
	}
	if out.req.Succeeded > 0 {
		out.st.RequestFraction = float64(out.st.RequestsWithStall) / float64(out.req.Succeeded)
	}
	if out.st.DecodeTimeMs > 0 {
		out.st.StalledTimeFraction = out.st.StalledTimeMs / out.st.DecodeTimeMs
	}
	if n := out.req.Total - out.req.Cancelled; n > 0 {
		out.gp.Fraction = float64(out.gp.Met) / float64(n)
	}
	if win > 0 {
		out.gp.RequestsPerS = float64(out.gp.Met) / win
		out.tp.RequestsPerS = float64(out.req.Succeeded) / win
		out.tp.InputTokensPerS = math.Round(okIn) / win
		out.tp.OutputTokensPerS = math.Round(okOut) / win
	}
	g := &group{}
	for i := range g.h {
		if h, ok := hists[prefix+histNames[i]]; ok {
			g.h[i] = h
		} else {
			g.h[i] = newHist()
		}
	}
	if g.h[hITLBurst].count() == 0 {
		// Summaries do not store ITL per burst (encodeGroup): it is the chunk gaps above the
		// window, exactly.
		splitBursts(g.h[hITLChunk], g.h[hITLBurst])
	}
	out.lat = g.latency()
	if fh != nil {
		rule := out.fl.DeadlineRule
		out.fl = fluidityBlock(fh, fluidGE90, out.fl.TTFTDeadlineMs, out.fl.TBTDeadlineMs)
		out.fl.DeadlineRule = rule
	}
	return out
}

func addCounts(dst, src map[string]int) {
	for k, v := range src {
		dst[k] += v
	}
}

func mergeCost(sums []*Summary, out *Summary) *Cost {
	var c *Cost
	for _, s := range sums {
		if s.Cost == nil {
			return nil
		}
		if c == nil {
			c = &Cost{Basis: s.Cost.Basis, Currency: s.Cost.Currency}
		}
		if s.Cost.Basis != c.Basis || s.Cost.Currency != c.Currency {
			return nil
		}
		c.Total += s.Cost.Total
	}
	if c.Basis == "gpu_hour" && out.Requests.InputTokens > 0 {
		c.PerMillionInput = c.Total / float64(out.Requests.InputTokens) * 1e6
	}
	fillCostRates(c, out)
	return c
}

func mergeTimeSeries(sums []*Summary) (*TimeSeries, error) {
	var ts *TimeSeries
	for _, s := range sums {
		p := s.TimeSeries
		if p == nil {
			continue
		}
		if ts == nil {
			ts = &TimeSeries{BucketS: p.BucketS, WarmupEndS: p.WarmupEndS, CooldownStartS: p.CooldownStartS}
		}
		if p.BucketS != ts.BucketS {
			return nil, fmt.Errorf("time series: the parts use different buckets (%gs and %gs); the merged summary has none", ts.BucketS, p.BucketS)
		}
		for len(ts.T) < len(p.T) {
			i := len(ts.T)
			ts.T = append(ts.T, float64(i)*ts.BucketS)
			ts.InFlight = append(ts.InFlight, 0)
			ts.Queued = append(ts.Queued, 0)
			ts.Sent = append(ts.Sent, 0)
			ts.Completed = append(ts.Completed, 0)
			ts.Failed = append(ts.Failed, 0)
			ts.OutputTokPerS = append(ts.OutputTokPerS, 0)
			if len(p.Graded) > 0 || len(ts.Graded) > 0 {
				ts.Graded, ts.Passed = grow(ts.Graded, len(ts.T)), grow(ts.Passed, len(ts.T))
			}
		}
		if len(p.Graded) > 0 && len(ts.Graded) < len(ts.T) {
			ts.Graded, ts.Passed = grow(ts.Graded, len(ts.T)), grow(ts.Passed, len(ts.T))
		}
		for i := range p.T {
			ts.InFlight[i] += at(p.InFlight, i)
			ts.Queued[i] += at(p.Queued, i)
			ts.Sent[i] += at(p.Sent, i)
			ts.Completed[i] += at(p.Completed, i)
			ts.Failed[i] += at(p.Failed, i)
			if len(ts.Graded) > 0 {
				ts.Graded[i] += at(p.Graded, i)
				ts.Passed[i] += at(p.Passed, i)
			}
			if i < len(p.OutputTokPerS) {
				ts.OutputTokPerS[i] += p.OutputTokPerS[i]
			}
		}
		ts.PassRate = passRates(ts.Graded, ts.Passed)
		if p.WarmupEndS > ts.WarmupEndS {
			ts.WarmupEndS = p.WarmupEndS
		}
		if p.CooldownStartS > 0 && (ts.CooldownStartS == 0 || p.CooldownStartS < ts.CooldownStartS) {
			ts.CooldownStartS = p.CooldownStartS
		}
	}
	return ts, nil
}

func at(xs []int, i int) int {
	if i < len(xs) {
		return xs[i]
	}
	return 0
}
