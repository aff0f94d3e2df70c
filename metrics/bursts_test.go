package metrics

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// passRecord builds a request decoded in engine passes: pass i delivers tokens[i] tokens at
// gapsMs[i-1] ms after pass i-1 (the first pass at the TTFT). perToken frames each pass as
// one-token events 20 µs apart (llama.cpp, TGI); otherwise a pass is one chunk of its tokens
// (vLLM, SGLang).
func passRecord(id string, intendedMs float64, tokens []int32, gapsMs []float64, perToken bool) Record {
	r := timeline(id, intendedMs, 30, gapsMs, tokens)
	if !perToken {
		return r
	}
	var chunks []Chunk
	for _, c := range r.Chunks {
		for k := int32(0); k < c.Tokens; k++ {
			chunks = append(chunks, Chunk{T: c.T + int64(k)*20_000, Tokens: 1})
		}
	}
	r.Chunks = chunks
	r.End = chunks[len(chunks)-1].T
	return r
}

// specPasses draws the tokens of each speculative pass (k drafts accepted from the left with
// probability alpha each, plus the verified token) until n tokens are out.
func specPasses(rng *rand.Rand, n, k int, alpha float64) []int32 {
	var out []int32
	for total := 0; total < n; {
		acc := 0
		for acc < k && rng.Float64() < alpha {
			acc++
		}
		t := min(1+acc, n-total)
		out = append(out, int32(t))
		total += t
	}
	return out
}

// armRun is one arm of a speculative-decoding comparison: n requests, each decoding 120 tokens
// at stepMs per pass (one token per pass when k is 0), with the same three prefill
// interference gaps of 21-23 ms per request on either arm, and a stallMs gap after the tenth
// pass of every request in stalled (by index).
func armRun(seed uint64, n, k int, stepMs float64, perToken bool, stallMs float64, stalled func(int) bool) SliceSource {
	rng := rand.New(rand.NewPCG(seed, 1))
	var out SliceSource
	for i := 0; i < n; i++ {
		var tokens []int32
		if k > 0 {
			tokens = specPasses(rng, 120, k, 0.8)
		} else {
			for range 120 {
				tokens = append(tokens, 1)
			}
		}
		gaps := constGaps(len(tokens)-1, stepMs)
		for j, at := range []int{len(gaps) / 4, len(gaps) / 2, 3 * len(gaps) / 4} {
			gaps[at] = 21 + float64(j)
		}
		if stalled != nil && stalled(i) {
			gaps[10] = stallMs
		}
		out = append(out, passRecord(fmt.Sprintf("r%03d", i), float64(i)*200, tokens, gaps, perToken))
	}
	return out
}

// TestBurstsSameOnEveryFraming: one engine schedule framed as k-token chunks and as one-token
// events in bursts gives the same bursts: tokens per burst exactly, per-burst ITL within the
// events' spread, and the same stalls and threshold.
func TestBurstsSameOnEveryFraming(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	var chunked, events SliceSource
	for i := 0; i < 30; i++ {
		tokens := specPasses(rng, 60, 4, 0.7)
		gaps := constGaps(len(tokens)-1, 9)
		if i%5 == 0 {
			gaps[len(gaps)/2] = 400
		}
		chunked = append(chunked, passRecord(fmt.Sprint("c", i), float64(i)*300, tokens, gaps, false))
		events = append(events, passRecord(fmt.Sprint("c", i), float64(i)*300, tokens, gaps, true))
	}
	a, err := Summarize(chunked, Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Summarize(events, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if a.TokensPerChunk.Max < 2 || b.TokensPerChunk.Max != 1 || !(b.Latency.ITLChunk.P50 < 0.1) {
		t.Fatalf("fixture: tokens per chunk max %v and %v, event ITL P50 %v ms", a.TokensPerChunk.Max, b.TokensPerChunk.Max, b.Latency.ITLChunk.P50)
	}
	ta, tb := a.TokensPerBurst, b.TokensPerBurst
	if ta.Count != tb.Count || ta.Mean != tb.Mean || ta.P50 != tb.P50 || ta.P99 != tb.P99 || ta.Max != tb.Max || ta.Max != 5 {
		t.Errorf("tokens per burst: chunked %+v, events %+v", ta, tb)
	}
	la, lb := a.Latency.ITLBurst, b.Latency.ITLBurst
	if la.Count != lb.Count || !near(la.P50, lb.P50, 0.1) || !near(la.P99, lb.P99, 0.1) || !near(la.Max, lb.Max, 0.1) || !near(la.P50, 9, 0.1) {
		t.Errorf("ITL per burst: chunked %+v, events %+v", la, lb)
	}
	sa, sb := a.Stalls, b.Stalls
	if sa.Count != 6 || sb.Count != 6 || sa.RequestsWithStall != 6 || sb.RequestsWithStall != 6 || !near(sa.ThresholdMs, sb.ThresholdMs, 0.5) ||
		sa.Source != StallBurstCadence || sb.Source != StallBurstCadence || sa.BurstWindowMs != 1 {
		t.Errorf("stalls: chunked %+v, events %+v", sa, sb)
	}
}

// TestStallThresholdSameWithSpeculation is issue 32's case: a plain arm (7 ms per token) and a
// speculative one (8 ms per pass of 1-5 tokens) with the same 21-23 ms prefill interference.
// Per token the speculative arm is three times as fast, so a TPOT-based threshold fell to the
// 20 ms floor there and called the interference a stall on that arm only; per pass both arms
// derive about the same threshold, neither stalls, and a real 250 ms stall is found on both.
func TestStallThresholdSameWithSpeculation(t *testing.T) {
	for _, perToken := range []bool{false, true} {
		plain := armRun(1, 40, 0, 7, perToken, 0, nil)
		spec := armRun(2, 40, 4, 8, perToken, 0, nil)
		a, _ := Summarize(plain, Options{})
		b, _ := Summarize(spec, Options{})
		if !(5*b.Latency.TPOT.P50 < 21) {
			t.Fatalf("fixture: speculative TPOT p50 %v ms should put 5x TPOT under the interference gaps", b.Latency.TPOT.P50)
		}
		for _, s := range []*Summary{a, b} {
			if s.Stalls.Count != 0 || s.Stalls.Source != StallBurstCadence || !strings.Contains(s.Stalls.ThresholdRule, "median burst ITL") {
				t.Errorf("framing per token %v: %d stalls, threshold %v ms (%s)", perToken, s.Stalls.Count, s.Stalls.ThresholdMs, s.Stalls.ThresholdRule)
			}
		}
		if r := b.Stalls.ThresholdMs / a.Stalls.ThresholdMs; r < 1 || r > 1.25 {
			t.Errorf("thresholds plain %v ms, speculative %v ms: the pass takes 8/7 as long", a.Stalls.ThresholdMs, b.Stalls.ThresholdMs)
		}
		if b.TokensPerBurst.Mean < 3 || a.TokensPerBurst.Max != 1 {
			t.Errorf("tokens per burst: plain %+v, speculative %+v", a.TokensPerBurst, b.TokensPerBurst)
		}

		every3 := func(i int) bool { return i%3 == 0 }
		for _, src := range []SliceSource{armRun(1, 40, 0, 7, perToken, 250, every3), armRun(2, 40, 4, 8, perToken, 250, every3)} {
			s, _ := Summarize(src, Options{})
			if s.Stalls.Count != 14 || s.Stalls.RequestsWithStall != 14 {
				t.Errorf("framing per token %v: %d stalls in %d requests, want the 14 injected (threshold %v ms)", perToken, s.Stalls.Count, s.Stalls.RequestsWithStall, s.Stalls.ThresholdMs)
			}
		}
	}
}

// TestCompareSharesTheBaseCadence: compare derives the threshold once, on the base, applies it
// to both sides and names it on both, and a proportion that does not move has a pp interval.
func TestCompareSharesTheBaseCadence(t *testing.T) {
	plain, spec := armRun(1, 60, 0, 7, true, 0, nil), armRun(2, 60, 4, 8, true, 0, nil)
	c, err := Compare([]Source{plain}, []Source{spec}, CompareOptions{Resamples: 300, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	bs, cs := c.Base.Summary.Stalls, c.Cand.Summary.Stalls
	if bs.ThresholdMs != cs.ThresholdMs || bs.Source != StallBurstCadence || cs.Source != StallBurstCadence ||
		!strings.HasSuffix(cs.ThresholdRule, "of base, applied to both sides") || bs.ThresholdRule != cs.ThresholdRule || cs.BurstCadenceMs != bs.BurstCadenceMs {
		t.Errorf("base %+v\ncand %+v", bs, cs)
	}
	slo, err := Compare([]Source{plain}, []Source{spec}, CompareOptions{Resamples: 50, Seed: 1, Summary: Options{SLO: SLO{TPOT: 50 * time.Millisecond}}})
	if err != nil {
		t.Fatal(err)
	}
	if st := slo.Cand.Summary.Stalls; st.ThresholdMs != 250 || st.Source != StallSLOTBT || st.ThresholdRule != "5x the SLO's per-token deadline 50ms, applied to both sides" {
		t.Errorf("with an SLO: %+v", st)
	}
	m := metricByName(t, c, "stalls.requests_fraction")
	if m.Base != 0 || m.Cand != 0 || m.CILow < -1 || m.CIHigh > 1 || m.Verdict != VerdictUnchanged {
		t.Errorf("stalled requests: %+v", m)
	}
	if b := metricByName(t, c, "itl_burst.p50"); b.Verdict == VerdictNA || !(b.Cand > b.Base) {
		t.Errorf("per-burst ITL p50: %+v (a speculative pass takes 8 ms, a plain one 7)", b)
	}
}

// TestStallThresholdFromSLO: with an SLO the threshold comes from it, the same on any run:
// its max gap, else the multiple of its per-token deadline; --stall-threshold wins over both.
func TestStallThresholdFromSLO(t *testing.T) {
	src := armRun(1, 10, 4, 8, true, 0, nil)
	for _, c := range []struct {
		opts   Options
		thr    float64
		source string
		rule   string
	}{
		{Options{SLO: SLO{MaxGap: 150 * time.Millisecond, TPOT: 50 * time.Millisecond}}, 150, StallSLOMaxGap, "the SLO's max gap 150ms"},
		{Options{SLO: SLO{TPOT: 50 * time.Millisecond}}, 250, StallSLOTBT, "5x the SLO's per-token deadline 50ms"},
		{Options{SLO: SLO{ITLP99: 30 * time.Millisecond}, StallMultiple: 3}, 90, StallSLOTBT, "3x the SLO's per-token deadline 30ms"},
		{Options{SLO: SLO{TPOT: 2 * time.Millisecond}}, 20, StallFloor, "floor 20ms (5x the SLO's per-token deadline 2ms is below it)"},
		{Options{SLO: SLO{TPOT: 50 * time.Millisecond}, StallThreshold: 250 * time.Millisecond}, 250, StallGiven, "absolute"},
	} {
		s, err := Summarize(src, c.opts)
		if err != nil {
			t.Fatal(err)
		}
		if st := s.Stalls; st.ThresholdMs != c.thr || st.Source != c.source || st.ThresholdRule != c.rule {
			t.Errorf("%+v: threshold %v ms from %s (%s), want %v ms from %s (%s)", c.opts.SLO, st.ThresholdMs, st.Source, st.ThresholdRule, c.thr, c.source, c.rule)
		}
	}
}

// TestSummarizeBurstsMatchTheRecords: Summarize's ITL per burst and tokens per burst (settled
// from the chunk histogram and a tally, bursts.go) hold exactly the bursts of the records.
func TestSummarizeBurstsMatchTheRecords(t *testing.T) {
	recs := mixedRun(400, 9)
	for i := range recs {
		if i%3 == 0 { // some llama.cpp-framed requests: one event per token, 20 µs apart
			var cs []Chunk
			for _, c := range recs[i].Chunks {
				for k := int32(0); k < max(1, c.Tokens); k++ {
					cs = append(cs, Chunk{T: c.T + int64(k)*20_000, Tokens: 1})
				}
			}
			recs[i].Chunks = cs
		}
	}
	sum, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var gaps, bursts, tokens int64
	var gapMs float64
	for _, r := range recs {
		if r.Phase != PhaseSteady || !r.OK() {
			continue
		}
		g, k := refBursts(r.Chunks)
		gaps += int64(len(g))
		bursts += int64(len(k))
		for _, x := range g {
			gapMs += float64(nsToMicros(x)) / 1000
		}
		for _, x := range k {
			tokens += x
		}
	}
	lb, tb := sum.Latency.ITLBurst, sum.TokensPerBurst
	if lb.Count != gaps || !near(lb.Mean, gapMs/float64(gaps), 1e-3*lb.Mean) || tb.Count != bursts || !near(tb.Mean, float64(tokens)/float64(bursts), 1e-3) {
		t.Errorf("ITL per burst %d gaps mean %v, want %d mean %v; tokens per burst %d mean %v, want %d mean %v",
			lb.Count, lb.Mean, gaps, gapMs/float64(gaps), tb.Count, tb.Mean, bursts, float64(tokens)/float64(bursts))
	}
	// The summary stores no itl_burst histogram; a reader derives the same distribution.
	if d, err := histDist(sum, "itl_burst"); err != nil || d.Count != lb.Count || d.P50 != lb.P50 || d.P99 != lb.P99 || d.Mean != lb.Mean {
		t.Errorf("itl_burst from the stored histograms %+v (%v), summary %+v", d, err, lb)
	}
	if tb.Max < 2 || lb.Count == sum.Latency.ITLChunk.Count {
		t.Errorf("fixture: tokens per burst max %v, %d burst gaps of %d chunk gaps", tb.Max, lb.Count, sum.Latency.ITLChunk.Count)
	}
}
