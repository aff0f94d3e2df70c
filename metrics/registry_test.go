package metrics

import (
	"fmt"
	"math"
	"strings"
	"testing"
)

// registryFixture is a side on which every registry metric is defined: multi-token chunks, a
// stall, a queue wait and two failures.
func registryFixture(tokensPerChunk int32) SliceSource {
	var out SliceSource
	for i := 0; i < 40; i++ {
		gaps := constGaps(8, 20+float64(i%5))
		if i%7 == 0 {
			gaps[3] = 400 // a stall
		}
		toks := make([]int32, 9)
		for k := range toks {
			toks[k] = 1 + int32(k%2)*(tokensPerChunk-1)
		}
		r := timeline(fmt.Sprintf("r%03d", i), float64(i)*50, 100+float64(i%9)*10, gaps, toks)
		r.Sent += int64(i%3) * msNs // queued behind a concurrency slot
		if i%4 == 1 {               // a reasoning request: its first three chunks were reasoning
			r.ReasoningChunks, r.ReasoningTokens, r.FirstAnswer = 3, 3*int(toks[0]+toks[1]+toks[2])/3, r.Chunks[3].T
		}
		if i%13 == 5 {
			r.Failure, r.Status, r.Chunks, r.FirstToken = FailHTTP5xx, 503, nil, 0
		}
		r.Grade = []string{GradePass, GradePass, GradeCheck}[i%3] // quality (issue 17)
		if i%5 != 4 {                                             // prefix cache (issue 34): later turns reuse more; one in five reports none
			r.CachedInputTokens, r.CacheSource = 30*(i%4), CacheFromPromptDetails
		}
		// Agentic sessions of four turns, each after the previous one plus a tool delay and
		// a think time.
		r.Session, r.Turn = fmt.Sprintf("s%d", i/4), i%4+1
		if i%4 > 0 {
			r.After, r.ToolDelay, r.Think = fmt.Sprintf("r%03d", i-1), int64(10+i%3)*msNs, 5*msNs
		}
		out = append(out, r)
	}
	return out
}

func TestRegistryOrderMatchesHistogramIndices(t *testing.T) {
	want := map[int]string{hTTFT: "ttft", hTPOT: "tpot", hITL: "itl", hITLChunk: "itl_chunk", hITLBurst: "itl_burst", hE2E: "e2e", hQueue: "queue",
		hMaxGap: "max_gap", hNorm: "normalized", hTPC: "tokens_per_chunk", hTPB: "tokens_per_burst", hFluid: "fluidity", hLag: "lag", hTTFAT: "ttfat", hITLReasoning: "itl_reasoning", hITLAnswer: "itl_answer",
		hSessionWall: "session_wall", hSessionModel: "session_model", hSessionTool: "session_tool", hSessionThink: "session_think"}
	if len(want) != nHist {
		t.Fatalf("the test lists %d histograms, the package %d", len(want), nHist)
	}
	for i, name := range want {
		if families[i].Name != name || histNames[i] != name {
			t.Errorf("histogram %d is %q in the registry, want %q", i, families[i].Name, name)
		}
	}
}

// TestRegistryConsumers: adding a metric is one registry entry plus its computation. For
// every entry, each consumer in this package must know it: Summarize writes its histogram,
// ParseFailOn accepts a rule in its regressing direction only (and none on a descriptive
// metric), Compare evaluates it with the registry's unit and direction, and a scalar's value
// in a Summary equals Compare's. The reports package has the same test for its formatting.
func TestRegistryConsumers(t *testing.T) {
	src := registryFixture(3)
	sum, err := Summarize(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Families() {
		// Stored, or derived from what is stored (itl_burst from itl_chunk).
		if d, err := histDist(sum, f.Name); err != nil || d.Count == 0 {
			t.Errorf("family %s: the summary holds no histogram of it (%v)", f.Name, err)
		}
		if f.Scale <= 0 || f.Unit == "" || f.Short == "" || f.Title == "" || f.What == "" {
			t.Errorf("family %s: incomplete entry %+v", f.Name, f)
		}
		if v, err := MetricValue(sum, f.Name+".p50"); f.Storage != StorageSummaryOnly && (err != nil || math.IsNaN(v)) {
			t.Errorf("family %s: MetricValue of its p50 from the summary: %v, %v", f.Name, v, err)
		}
		switch f.Storage {
		case StorageHistogram:
			if _, ok := scalarFamIdx[f.Name]; !ok {
				t.Errorf("family %s: stored per request, but Compare has no slot sf* for it", f.Name)
			}
		case StorageBins:
			if _, ok := binFamIdx[f.Name]; !ok {
				t.Errorf("family %s: stored in bins, but Compare has no slot bf* for it", f.Name)
			}
		case StorageSummaryOnly:
			if _, err := LookupMetric(f.Name + ".p50"); err == nil {
				t.Errorf("family %s is summary-only but LookupMetric accepts it", f.Name)
			}
		default:
			t.Errorf("family %s: storage %q", f.Name, f.Storage)
		}
	}

	all := Metrics()
	var names []string
	for _, m := range all {
		names = append(names, m.Name)
		got, err := LookupMetric(m.Name)
		if err != nil || got != m {
			t.Errorf("LookupMetric(%s) = %+v, %v; want %+v", m.Name, got, err, m)
		}
		checkFailOnKnows(t, m)
	}
	c, err := Compare([]Source{src}, []Source{src}, CompareOptions{Metrics: names, Resamples: 50})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Metrics) != len(all) {
		t.Fatalf("Compare returned %d metrics for %d asked", len(c.Metrics), len(all))
	}
	for i, m := range all {
		md := c.Metrics[i]
		if md.Name != m.Name || md.Unit != m.Unit || md.Better != m.Better {
			t.Errorf("Compare row %d = %s %s %s, want %s %s %s", i, md.Name, md.Unit, md.Better, m.Name, m.Unit, m.Better)
		}
		if md.Verdict == VerdictNA || math.IsNaN(md.Base) {
			t.Errorf("%s: Compare could not evaluate it on the fixture (verdict %s, base %v)", m.Name, md.Verdict, md.Base)
		}
		if m.Storage != StorageScalar {
			continue
		}
		v, err := MetricValue(sum, m.Name)
		if err != nil || !near(v, md.Base, 1e-9*math.Max(1, math.Abs(v))) {
			t.Errorf("%s: Summary value %v (%v), Compare base %v", m.Name, v, err, md.Base)
		}
	}
}

func checkFailOnKnows(t *testing.T, m MetricInfo) {
	t.Helper()
	up, down := m.Name+">+5%", m.Name+"<-5%"
	_, errUp := ParseFailOn(up)
	_, errDown := ParseFailOn(down)
	switch m.Better {
	case BetterNone:
		for _, err := range []error{errUp, errDown} {
			if err == nil || !strings.Contains(err.Error(), "descriptive") {
				t.Errorf("%s is descriptive; a rule on it gave %v", m.Name, err)
			}
		}
	case BetterLower:
		if errUp != nil || errDown == nil {
			t.Errorf("%s: %q gave %v, %q gave %v", m.Name, up, errUp, down, errDown)
		}
	case BetterHigher:
		if errDown != nil || errUp == nil {
			t.Errorf("%s: %q gave %v, %q gave %v", m.Name, down, errDown, up, errUp)
		}
	default:
		t.Errorf("%s: direction %q", m.Name, m.Better)
	}
}

// TestCompareNeverJudgesDescriptiveMetrics is the defect of the comparison that called
// itl.p50 -100% and tokens_per_chunk +224% "better": with the same gaps, a candidate that
// delivers three tokens per chunk moves both, and neither is better or worse.
func TestCompareNeverJudgesDescriptiveMetrics(t *testing.T) {
	base, cand := registryFixture(1), registryFixture(3)
	names := []string{"itl.p50", "itl.p95", "tokens_per_chunk.mean", "tokens_per_chunk.p50", "itl.mean"}
	c, err := Compare([]Source{base}, []Source{cand}, CompareOptions{Metrics: names, Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range names[:4] {
		m := metricByName(t, c, name)
		if m.Better != BetterNone || m.Verdict == VerdictBetter || m.Verdict == VerdictWorse {
			t.Errorf("%s: better %q verdict %q (delta %v), want descriptive and never judged", name, m.Better, m.Verdict, m.Delta)
		}
	}
	// A move is "changed", or, when every resample moved it by exactly the same amount (a
	// zero-width interval, issue 20), "not assessable".
	for _, name := range []string{"itl.p50", "tokens_per_chunk.mean"} {
		m := metricByName(t, c, name)
		zeroWidth := m.CILow == m.CIHigh
		if m.Verdict != VerdictChanged && !(zeroWidth && m.Verdict == VerdictNotAssessable) {
			t.Errorf("%s moved by %v: verdict %q, want changed", name, m.Delta, m.Verdict)
		}
	}
	// The per-token mean is a real latency (decode time per token): it stays judged.
	if m := metricByName(t, c, "itl.mean"); m.Better != BetterLower || m.Verdict != VerdictBetter {
		t.Errorf("itl.mean: better %q verdict %q", m.Better, m.Verdict)
	}
	if _, err := Compare([]Source{base}, []Source{cand}, CompareOptions{Thresholds: []Threshold{{Metric: "itl.p50", Op: ">", Value: 5, Relative: true}}}); err == nil || !strings.Contains(err.Error(), "descriptive") {
		t.Errorf("a threshold on a descriptive metric built by hand: %v", err)
	}
	if _, err := Compare([]Source{base}, []Source{cand}, CompareOptions{Thresholds: []Threshold{{Metric: "ttft.p95", Op: "<", Value: 5, Relative: true}}}); err == nil || !strings.Contains(err.Error(), "write ttft.p95>+5%") {
		t.Errorf("a threshold built by hand in the direction that cannot regress: %v", err)
	}
}

// TestQuantileRule pins the one quantile rule: nearest rank, halves rounded up, within [1, n].
func TestQuantileRule(t *testing.T) {
	for _, c := range []struct{ q, n, want float64 }{
		{0.5, 4, 2}, {0.5, 5, 3}, {0.99, 60, 59}, {0.99, 10, 10}, {0, 10, 1}, {1, 10, 10}, {0.999, 3, 3}, {0.25, 2, 1},
	} {
		if got := quantileRank(c.q, c.n); got != c.want {
			t.Errorf("quantileRank(%v, %v) = %v, want %v", c.q, c.n, got, c.want)
		}
	}
	// HdrHistogram follows the same rule: exact small values, so its answer is the sample.
	h := newHist()
	var sh sparseHist
	for v := int64(1); v <= 60; v++ {
		h.recordValue(v)
		sh = sh.add(v*1000, 1) // µs bins; 1..60 ms
	}
	for _, q := range []float64{0.5, 0.9, 0.95, 0.99} {
		want := quantileRank(q, 60)
		if got := float64(h.quantile(q * 100)); got != want {
			t.Errorf("HdrHistogram q=%v: %v, want rank %v", q, got, want)
		}
		got, _ := sh.quantiles(q, q)
		if math.Abs(got-want) > want*0.008 {
			t.Errorf("sparseHist q=%v: %v ms, want rank %v (within a bin)", q, got, want)
		}
	}
}
