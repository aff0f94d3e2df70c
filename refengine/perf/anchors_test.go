package perf_test

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// anchorFile is testdata/anchors.json: published measurements the engine is held to.
type anchorFile struct {
	About   string            `json:"about"`
	Metrics map[string]string `json:"metrics"`
	Anchors []anchor          `json:"anchors"`
	// Excluded lists published figures looked at and not held, each with the reason.
	Excluded []struct {
		ID        string          `json:"id"`
		Source    json.RawMessage `json:"source"`
		Published string          `json:"published"`
		Why       string          `json:"why"`
	} `json:"excluded"`
}

type anchor struct {
	ID         string   `json:"id"`
	Categories []string `json:"categories"`
	Source     struct {
		Kind   string `json:"kind"`
		Engine string `json:"engine"`
		URL    string `json:"url"`
		Table  string `json:"table"`
		Row    string `json:"row"`
	} `json:"source"`
	Model       string `json:"model"`
	GPU         string `json:"gpu"`
	TP          int    `json:"tp"`
	WeightDtype string `json:"weight_dtype"`
	KVDtype     string `json:"kv_dtype"`
	Workload    struct {
		InputTokens  int     `json:"input_tokens"`
		OutputTokens int     `json:"output_tokens"`
		Requests     int     `json:"requests"`
		Arrival      string  `json:"arrival"` // "offline": all at 0; "rate": evenly spaced at rate_per_s; "poisson": seeded exponential gaps
		RatePerS     float64 `json:"rate_per_s"`
		// MinDurationS, for "rate" and "poisson" arrivals, raises the request count to what
		// arrives in that many seconds at the rate (MLPerf's server runs last at least 600 s).
		MinDurationS float64 `json:"min_duration_s"`
	} `json:"workload"`
	Engine struct {
		MaxNumSeqs          int     `json:"max_num_seqs"`
		MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
		GPUMemUtil          float64 `json:"gpu_memory_utilization"`
		// Scheduler "guaranteed_no_evict" (TensorRT-LLM's policy) admits a request only when
		// the KV blocks of its whole prompt and output are free, so nothing is preempted:
		// the running batch is capped at the sequences of input + output tokens that fit.
		Scheduler string `json:"scheduler"`
		// StepOverheadPerSeqUS is the engine's host time per scheduled sequence per step in
		// microseconds (perf.Config.StepOverheadPerSeq), with its source in the anchor's note.
		StepOverheadPerSeqUS float64 `json:"step_overhead_per_seq_us"`
	} `json:"engine"`
	// SLO bounds the latencies of a "slo_output_tokens_per_s" anchor (MLPerf's server scenario).
	SLO *struct {
		TTFTP99Ms float64 `json:"ttft_p99_ms"`
		TPOTP99Ms float64 `json:"tpot_p99_ms"`
	} `json:"slo"`
	// Spec, for a speculative-decoding anchor, is the method the run used; the metric
	// "speedup_<metric>" is then <metric> with it over <metric> without it.
	Spec *struct {
		Method    string    `json:"method"`
		K         int       `json:"k"`
		Alpha     []float64 `json:"alpha"`
		Tree      int       `json:"tree"`
		Draft     string    `json:"draft_model"`
		DraftTP   int       `json:"draft_tp"`
		Repeat    float64   `json:"repetition"`
		Rationale string    `json:"acceptance_source"`
	} `json:"spec"`
	Metric    string  `json:"metric"`
	Published float64 `json:"published"`
	Tolerance float64 `json:"tolerance"` // relative: |simulated − published| / published
	Note      string  `json:"note"`
}

func loadAnchors(t *testing.T) (anchorFile, *perf.Registry) {
	t.Helper()
	data, err := os.ReadFile("testdata/anchors.json")
	if err != nil {
		t.Fatal(err)
	}
	var f anchorFile
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&f); err != nil {
		t.Fatalf("testdata/anchors.json: %v", err)
	}
	reg := perf.NewRegistry()
	prof, err := os.ReadFile("testdata/anchor-profiles.json")
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.LoadJSON(prof, "testdata/anchor-profiles.json"); err != nil {
		t.Fatal(err)
	}
	return f, reg
}

// simulateAnchor runs the anchor's workload through refengine.Simulate on the virtual clock
// and returns its metric; a "speedup_" metric runs it with and without speculation.
func simulateAnchor(a anchor, reg *perf.Registry) (float64, error) {
	base, ok := strings.CutPrefix(a.Metric, "speedup_")
	if !ok {
		return simulateMetric(a, reg, a.Metric, false)
	}
	if a.Spec == nil {
		return 0, fmt.Errorf("metric %s needs a spec block", a.Metric)
	}
	plain, err := simulateMetric(a, reg, base, false)
	if err != nil {
		return 0, err
	}
	spec, err := simulateMetric(a, reg, base, true)
	if err != nil {
		return 0, err
	}
	if strings.HasSuffix(base, "_ms") {
		return plain / spec, nil // a latency: the speedup is old over new
	}
	return spec / plain, nil
}

func simulateMetric(a anchor, reg *perf.Registry, metric string, withSpec bool) (float64, error) {
	if metric == "slo_output_tokens_per_s" {
		if withSpec {
			return 0, fmt.Errorf("metric %s has no speculative form", metric)
		}
		return sloThroughput(a, reg)
	}
	switch w := a.Workload; w.Arrival {
	case "offline":
	case "rate", "poisson":
		if !(w.RatePerS > 0) {
			return 0, fmt.Errorf("arrival %q needs rate_per_s > 0", w.Arrival)
		}
	default:
		return 0, fmt.Errorf("unknown arrival %q", w.Arrival)
	}
	cfg, err := anchorConfig(a, reg, withSpec)
	if err != nil {
		return 0, err
	}
	res, err := refengine.Simulate(anchorRequests(a, a.Workload.RatePerS), cfg)
	if err != nil {
		return 0, err
	}
	m := measure(res)
	switch metric {
	case "output_tokens_per_s":
		return m.outputPerS, nil
	case "request_output_tokens_per_s":
		return float64(res.Timelines[0].OutputTokens) / res.Timelines[0].E2E().Seconds(), nil
	case "ttft_ms":
		return m.meanTTFT * 1e3, nil
	case "tpot_ms":
		return m.meanTPOT * 1e3, nil
	}
	return 0, fmt.Errorf("unknown metric %q", metric)
}

// anchorRequests is the anchor's workload with arrivals at rate requests/s: "offline" all at
// 0, "rate" evenly spaced, "poisson" exponential gaps from a fixed seed (MLPerf's server
// scenario issues queries as a Poisson process).
func anchorRequests(a anchor, rate float64) []refengine.SimRequest {
	w := a.Workload
	n := w.Requests
	if w.Arrival != "offline" && w.MinDurationS > 0 {
		n = max(n, int(math.Ceil(rate*w.MinDurationS)))
	}
	reqs := make([]refengine.SimRequest, n)
	rng := rand.New(rand.NewPCG(1, 2))
	var at time.Duration
	for i := range reqs {
		switch w.Arrival {
		case "rate":
			at = time.Duration(float64(i) / rate * float64(time.Second))
		case "poisson":
			if i > 0 {
				at += time.Duration(rng.ExpFloat64() / rate * float64(time.Second))
			}
		}
		reqs[i] = refengine.SimRequest{ID: fmt.Sprintf("%s-%d", a.ID, i), Arrival: at,
			PromptTokens: w.InputTokens, MaxTokens: w.OutputTokens, IgnoreEOS: true}
	}
	return reqs
}

// anchorConfig is the engine the anchor ran: its model, GPUs, dtypes and scheduling limits,
// its host overhead per sequence, and with withSpec its speculative method.
func anchorConfig(a anchor, reg *perf.Registry, withSpec bool) (refengine.Config, error) {
	cfg := refengine.Config{Model: a.Model, GPU: a.GPU, TP: a.TP, WeightDtype: a.WeightDtype, KVDtype: a.KVDtype,
		Profiles: reg, MaxNumSeqs: a.Engine.MaxNumSeqs, MaxNumBatchedTokens: a.Engine.MaxNumBatchedTokens,
		GPUMemUtil: a.Engine.GPUMemUtil, DisablePrefixCaching: true, Seed: 1,
		StepOverheadPerSeq: time.Duration(math.Round(a.Engine.StepOverheadPerSeqUS * 1e3))}
	if sp := a.Spec; withSpec && sp != nil {
		cfg.SpecK, cfg.SpecMethod, cfg.SpecTree, cfg.SpecDraftModel, cfg.SpecDraftTP = sp.K, sp.Method, sp.Tree, sp.Draft, sp.DraftTP
		if len(sp.Alpha) > 0 {
			cfg.SpecAlphas = sp.Alpha
		}
		if sp.Repeat > 0 {
			cfg.SpecRepetition = map[string]float64{"": sp.Repeat}
		}
	}
	if a.Engine.Scheduler == "guaranteed_no_evict" {
		w := a.Workload
		fit, err := sequencesThatFit(a, reg, w.InputTokens+w.OutputTokens)
		if err != nil {
			return cfg, err
		}
		cfg.MaxNumSeqs = min(cfg.MaxNumSeqs, fit)
	} else if a.Engine.Scheduler != "" {
		return cfg, fmt.Errorf("unknown scheduler %q", a.Engine.Scheduler)
	}
	return cfg, nil
}

// measured is what the anchors read from one simulated run.
type measured struct {
	outputPerS         float64 // output tokens / (last finish − first arrival)
	meanTTFT, meanTPOT float64 // seconds
	p99TTFT, p99TPOT   float64 // seconds, nearest rank
}

func measure(res *refengine.SimResult) measured {
	var out int
	var m measured
	first, last := time.Duration(math.MaxInt64), time.Duration(0)
	ttfts := make([]float64, 0, len(res.Timelines))
	tpots := make([]float64, 0, len(res.Timelines))
	for i := range res.Timelines {
		tl := &res.Timelines[i]
		out += tl.OutputTokens
		first = min(first, tl.Arrival)
		last = max(last, tl.Finish)
		ttfts = append(ttfts, tl.TTFT().Seconds())
		if tl.OutputTokens > 1 {
			tpots = append(tpots, (tl.E2E()-tl.TTFT()).Seconds()/float64(tl.OutputTokens-1))
		}
	}
	n := float64(len(res.Timelines))
	for _, v := range ttfts {
		m.meanTTFT += v / n
	}
	for _, v := range tpots {
		m.meanTPOT += v / n
	}
	m.outputPerS = float64(out) / (last - first).Seconds()
	m.p99TTFT, m.p99TPOT = p99(ttfts), p99(tpots)
	return m
}

// p99 is the nearest-rank 99th percentile of xs (0 for none); it sorts xs.
func p99(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	slices.Sort(xs)
	return xs[int(math.Ceil(0.99*float64(len(xs))))-1]
}

// sloThroughput is MLPerf's server-scenario figure: the output tokens per second at the
// highest arrival rate whose p99 TTFT and p99 TPOT stay within the anchor's latency bounds.
// The rate is bisected between a quarter of the offline capacity and the offline capacity
// (the same engine with every request at 0), to 0.5% of that capacity.
func sloThroughput(a anchor, reg *perf.Registry) (float64, error) {
	if a.SLO == nil || !(a.SLO.TTFTP99Ms > 0) || !(a.SLO.TPOTP99Ms > 0) {
		return 0, fmt.Errorf("metric slo_output_tokens_per_s needs an slo block with ttft_p99_ms and tpot_p99_ms")
	}
	cfg, err := anchorConfig(a, reg, false)
	if err != nil {
		return 0, err
	}
	offline := a
	offline.Workload.Arrival = "offline"
	res, err := refengine.Simulate(anchorRequests(offline, 0), cfg)
	if err != nil {
		return 0, err
	}
	capacity := measure(res).outputPerS / float64(a.Workload.OutputTokens) // requests/s
	lo, hi, best := capacity/4, capacity, 0.0
	for hi-lo > 0.005*capacity {
		rate := (lo + hi) / 2
		res, err := refengine.Simulate(anchorRequests(a, rate), cfg)
		if err != nil {
			return 0, err
		}
		m := measure(res)
		if m.p99TTFT*1e3 <= a.SLO.TTFTP99Ms && m.p99TPOT*1e3 <= a.SLO.TPOTP99Ms {
			lo, best = rate, m.outputPerS
		} else {
			hi = rate
		}
	}
	if best == 0 {
		return 0, fmt.Errorf("no rate down to a quarter of the offline capacity (%.2f requests/s) meets the latency bounds", capacity)
	}
	return best, nil
}

// sequencesThatFit is how many sequences of tokens tokens the anchor's KV cache holds.
func sequencesThatFit(a anchor, reg *perf.Registry, tokens int) (int, error) {
	m, err := reg.Model(a.Model)
	if err != nil {
		return 0, err
	}
	g, err := reg.GPU(a.GPU)
	if err != nil {
		return 0, err
	}
	r, err := perf.New(perf.Config{Model: m, GPU: g, TP: a.TP, WeightDtype: a.WeightDtype, KVDtype: a.KVDtype,
		GPUMemUtil: a.Engine.GPUMemUtil})
	if err != nil {
		return 0, err
	}
	return r.SequencesThatFit(tokens), nil
}

// TestAnchors simulates every published measurement in testdata/anchors.json and holds the
// result within the anchor's stated tolerance. It prints one Markdown table row per anchor
// with -v, and docs/engine.md's table must be that output: -update-anchors-doc rewrites it.
func TestAnchors(t *testing.T) {
	racebuild.Heavy(t)
	f, reg := loadAnchors(t)
	if len(f.Anchors) < 12 {
		t.Fatalf("%d anchors, want at least 12", len(f.Anchors))
	}
	seen := map[string]bool{}
	rows := []string{"| anchor | source | published | simulated | error | tolerance |", "|---|---|---:|---:|---:|---:|"}
	for _, a := range f.Anchors {
		if seen[a.ID] {
			t.Errorf("anchor %s: duplicate id", a.ID)
		}
		seen[a.ID] = true
		if a.Source.URL == "" || a.Source.Table == "" || a.Source.Row == "" || !(a.Published > 0) ||
			!(a.Tolerance > 0 && a.Tolerance <= 0.25) || a.Workload.Requests < 1 {
			t.Errorf("anchor %s: needs a source url, table and row, a published value, a tolerance in (0, 0.25] and requests", a.ID)
			continue
		}
		got, err := simulateAnchor(a, reg)
		if err != nil {
			t.Errorf("anchor %s: %v", a.ID, err)
			continue
		}
		rel := (got - a.Published) / a.Published
		rows = append(rows, fmt.Sprintf("| %s | %s, %s | %s | %s | %+.1f%% | ±%.0f%% |", a.ID, a.Source.Engine, a.Source.Table,
			fmtMetric(a.Metric, a.Published), fmtMetric(a.Metric, got), rel*100, a.Tolerance*100))
		if math.Abs(rel) > a.Tolerance {
			t.Errorf("anchor %s: simulated %s, published %s (%s): error %+.1f%% exceeds ±%.0f%%",
				a.ID, fmtMetric(a.Metric, got), fmtMetric(a.Metric, a.Published), a.Source.Row, rel*100, a.Tolerance*100)
		}
	}
	for _, r := range rows {
		t.Log(r)
	}
	checkCoverage(t, f.Anchors)
	if !t.Failed() {
		checkAnchorsDoc(t, rows)
	}
}

// checkCoverage fails unless the anchors cover every kind of measurement the engine is held to.
func checkCoverage(t *testing.T, anchors []anchor) {
	t.Helper()
	for _, want := range []string{"batch-1 decode", "high-batch throughput", "prefill throughput", "ttft vs prompt length",
		"fp8", "int4 weight-only", "tensor parallel", "moe", "h100", "h200", "a100",
		"speculative batch 1", "speculative high load", "slo capacity"} {
		found := false
		for _, a := range anchors {
			for _, c := range a.Categories {
				found = found || c == want
			}
		}
		if !found {
			t.Errorf("no anchor covers %q", want)
		}
	}
	for _, tp := range []int{2, 4, 8} {
		found := false
		for _, a := range anchors {
			found = found || (a.TP == tp && strings.Contains(a.Model, "70b"))
		}
		if !found {
			t.Errorf("no 70B anchor at TP=%d", tp)
		}
	}
}

var updateAnchorsDoc = flag.Bool("update-anchors-doc", false, "rewrite the anchors table in docs/engine.md from TestAnchors' output")

// anchorsDoc is the document whose anchors table is TestAnchors' output.
const anchorsDoc = "../../docs/engine.md"

// checkAnchorsDoc fails when the anchors table in docs/engine.md (the lines from the header
// row to the first line that is not a table row) differs from rows; with -update-anchors-doc
// it rewrites the table instead.
func checkAnchorsDoc(t *testing.T, rows []string) {
	t.Helper()
	data, err := os.ReadFile(anchorsDoc)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(string(data), "\n")
	start := slices.Index(lines, rows[0])
	if start < 0 {
		t.Fatalf("%s has no anchors table (no line %q)", anchorsDoc, rows[0])
	}
	end := start
	for end < len(lines) && strings.HasPrefix(lines[end], "|") {
		end++
	}
	if slices.Equal(lines[start:end], rows) {
		return
	}
	if !*updateAnchorsDoc {
		t.Errorf("%s's anchors table differs from TestAnchors' output; run go test ./refengine/perf -run TestAnchors -update-anchors-doc", anchorsDoc)
		return
	}
	out := slices.Concat(lines[:start], rows, lines[end:])
	if err := os.WriteFile(anchorsDoc, []byte(strings.Join(out, "\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

func fmtMetric(metric string, v float64) string {
	if strings.HasPrefix(metric, "speedup_") {
		return fmt.Sprintf("%.2fx", v)
	}
	switch metric {
	case "output_tokens_per_s", "request_output_tokens_per_s", "slo_output_tokens_per_s":
		return fmt.Sprintf("%.1f tok/s", v)
	}
	return fmt.Sprintf("%.2f ms", v)
}
