package reports

import (
	"fmt"
	"math"

	"github.com/llmbench/llmbench/metrics"
)

// dist builds a plausible distribution from its median: a log-normal-ish tail with a CDF.
func dist(p50, spread float64, count int64) metrics.Dist {
	q := func(z float64) float64 { return round3(p50 * math.Exp(spread*z)) }
	d := metrics.Dist{
		Mean: round3(p50 * math.Exp(spread*spread/2)), P50: p50, P90: q(1.2816), P95: q(1.6449),
		P99: q(2.3263), P999: q(3.0902), Max: q(3.4), Min: q(-2.5), Count: count,
	}
	zs := []float64{-2.5, -2, -1.5, -1.2816, -1, -0.5, 0, 0.5, 1, 1.2816, 1.6449, 2, 2.3263, 3.0902, 3.4}
	qs := []float64{0, 0.0228, 0.0668, 0.1, 0.1587, 0.3085, 0.5, 0.6915, 0.8413, 0.9, 0.95, 0.9772, 0.99, 0.999, 1}
	for i, z := range zs {
		d.CDF = append(d.CDF, metrics.CDFPoint{Q: qs[i], Value: q(z)})
	}
	return d
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// fixtureSummary is a hand-built summary of a 120 s open-loop run with two classes, a few
// failures, stalls and SLOs; modelName and errText let tests plant hostile text.
func fixtureSummary(modelName, warning string) *metrics.Summary {
	lat := metrics.Latency{
		TTFT: dist(180, 0.5, 1437), TPOT: dist(22, 0.2, 1437), ITL: dist(18, 0.6, 310000),
		ITLChunk: dist(21, 0.7, 290000), ITLBurst: dist(22, 0.6, 280000), E2E: dist(4800, 0.6, 1437), Queue: dist(0.05, 0.3, 1440),
		MaxGap: dist(95, 0.7, 1437), Normalized: dist(23, 0.25, 1437),
	}
	s := &metrics.Summary{
		Schema: metrics.SummarySchema,
		Run: metrics.RunInfo{
			Command: "llmbench run --trace chat.jsonl --slo ttft=500,tpot=50", Trace: "chat.jsonl",
			Endpoint: "http://127.0.0.1:8000", Model: modelName, Backend: "vllm", API: "chat", Seed: 7,
			Start: "2026-11-29T17:00:00Z", DurationS: 130, Version: "0.1.0-test", Mode: "open-loop",
			Tokenizer: "llama3", Engine: map[string]string{"gpu": "H100-SXM", "model": "llama-3.1-8b"},
			Host: metrics.Host{OS: "linux", Arch: "amd64", CPUs: 8, GoVersion: "go1.26"},
		},
		Requests: metrics.Requests{
			Total: 1440, Succeeded: 1437, Failed: 3,
			Failures:   map[string]int{"timeout_idle": 2, "http_5xx": 1},
			FailStatus: map[string]int{"503": 1}, InputTokens: 1843200, OutputTokens: 310000,
			TokenSource: map[string]int{"usage": 1437, "chunks": 3}, TokenMismatch: 0.002,
		},
		Throughput: metrics.Throughput{RequestsPerS: 12, InputTokensPerS: 15360, OutputTokensPerS: 2583.3, WindowS: 120},
		Latency:    lat,
		Stalls: metrics.Stalls{ThresholdMs: 90, ThresholdRule: "5x median burst ITL (18 ms)", Source: metrics.StallBurstCadence,
			BurstCadenceMs: 18, BurstWindowMs: 1, Count: 41, RequestsWithStall: 33,
			RequestFraction: 0.0229, StalledTimeMs: 6100, StalledTimeFraction: 0.0009},
		Fluidity: metrics.Fluidity{TTFTDeadlineMs: 500, TBTDeadlineMs: 50, IndexMean: 0.981, IndexP1: 0.71,
			IndexP5: 0.88, IndexP50: 1, FractionAbove90: 0.952},
		Goodput: metrics.Goodput{SLO: map[string]float64{"ttft": 500, "tpot": 50}, RequestsPerS: 11.28,
			Fraction: 0.94, Met: 1354},
		Client: metrics.Client{LagMs: dist(0.08, 0.4, 1440), CPUFraction: 0.031},
		TokensPerChunk: metrics.Dist{Mean: 1.07, P50: 1, P90: 1, P95: 2, P99: 3, P999: 4, Max: 4, Min: 1, Count: 290000,
			CDF: []metrics.CDFPoint{{Q: 0, Value: 1}, {Q: 0.94, Value: 1}, {Q: 0.985, Value: 2}, {Q: 0.997, Value: 3}, {Q: 1, Value: 4}}},
		TokensPerBurst: metrics.Dist{Mean: 1.1, P50: 1, P90: 1, P95: 2, P99: 3, P999: 4, Max: 5, Min: 1, Count: 280000},
		Excluded: map[string]*metrics.PhaseSummary{
			"warmup": {Requests: metrics.Requests{Total: 60, Succeeded: 60}, Latency: metrics.Latency{
				TTFT: dist(260, 0.5, 60), E2E: dist(5100, 0.5, 60), ITL: dist(19, 0.5, 12000)}},
		},
		Workload: map[string]any{
			"requests": 1500, "duration_s": 125.0, "classes": map[string]int{"chat": 1000, "rag": 500},
			"input_tokens":  map[string]float64{"mean": 1280, "p50": 900, "p90": 2600, "p99": 6100, "max": 7900, "min": 12},
			"output_tokens": map[string]float64{"mean": 215, "p50": 180, "p90": 420, "p99": 900, "max": 1024, "min": 4},
			"burstiness_cv": 1.12,
		},
		Cost: &metrics.Cost{Basis: "gpu_hour", Total: 0.1333, PerRequest: 0.0000926, PerMillionOutput: 0.43,
			PerMillionTokens: 0.062, PerGoodRequest: 0.0000985, Currency: "USD"},
		ByClass: map[string]*metrics.ClassSummary{
			"chat": {Requests: metrics.Requests{Total: 960, Succeeded: 958, Failed: 2}, Throughput: metrics.Throughput{RequestsPerS: 8},
				Latency: metrics.Latency{TTFT: dist(150, 0.4, 958), TPOT: dist(21, 0.2, 958), ITL: dist(17, 0.5, 200000), E2E: dist(4100, 0.5, 958)},
				Goodput: metrics.Goodput{SLO: map[string]float64{"ttft": 500}, Fraction: 0.97, RequestsPerS: 7.76, Met: 931},
				Stalls:  metrics.Stalls{RequestFraction: 0.018}},
			"rag": {Requests: metrics.Requests{Total: 480, Succeeded: 479, Failed: 1}, Throughput: metrics.Throughput{RequestsPerS: 4},
				Latency: metrics.Latency{TTFT: dist(320, 0.5, 479), TPOT: dist(24, 0.2, 479), ITL: dist(19, 0.6, 110000), E2E: dist(6000, 0.5, 479)},
				Goodput: metrics.Goodput{SLO: map[string]float64{"ttft": 500}, Fraction: 0.88, RequestsPerS: 3.52, Met: 423},
				Stalls:  metrics.Stalls{RequestFraction: 0.033}},
		},
		Warnings: []string{warning},
	}
	s.TimeSeries = fixtureSeries(130)
	return s
}

// fixtureSeries is a deterministic per-second series of n buckets with warm-up and cool-down.
func fixtureSeries(n int) *metrics.TimeSeries {
	ts := &metrics.TimeSeries{BucketS: 1, WarmupEndS: 5, CooldownStartS: float64(n) - 5}
	for i := 0; i < n; i++ {
		w := math.Sin(float64(i)/7) + 0.3*math.Sin(float64(i)*1.7)
		ts.T = append(ts.T, float64(i))
		ts.InFlight = append(ts.InFlight, 55+int(12*w))
		ts.Queued = append(ts.Queued, max(0, int(6*w)))
		ts.Sent = append(ts.Sent, 12+int(3*w))
		ts.Completed = append(ts.Completed, 12+int(2.5*w))
		ts.Failed = append(ts.Failed, (i/40)%2*(i%3/2))
		ts.OutputTokPerS = append(ts.OutputTokPerS, round3(2580+300*w))
		ts.TTFTP50 = append(ts.TTFTP50, round3(180+40*w))
		ts.TTFTP99 = append(ts.TTFTP99, round3(560+150*w))
		v := math.Cos(float64(i)/11) + 0.2*math.Sin(float64(i)*2.3)
		ts.ITLP50 = append(ts.ITLP50, round3(18+3*v))
		ts.ITLP99 = append(ts.ITLP99, round3(70+20*v))
	}
	return ts
}

// fixtureRecords builds n deterministic records; every 50th has a stall, every 97th fails.
func fixtureRecords(n int) []metrics.Record {
	const ms = int64(1e6)
	out := make([]metrics.Record, 0, n)
	for i := 0; i < n; i++ {
		intended := int64(i) * 83 * ms
		r := metrics.Record{
			ID: fmt.Sprintf("req-%05d", i), Class: []string{"chat", "rag"}[i%2], Intended: intended,
			Dispatched: intended + ms/10, Sent: intended + ms/5, Headers: intended + 20*ms,
			InputTokens: 200 + (i*37)%900, RequestedTokens: 40 + (i*13)%60, Status: 200,
			TokenSource: metrics.TokensFromUsage, ServerInputTokens: -1, ServerOutputTokens: -1,
		}
		if i < n/20 {
			r.Phase = metrics.PhaseWarmup
		}
		t := intended + int64(120+(i*7)%200)*ms
		out1 := r.RequestedTokens
		for k := 0; k < out1; {
			tok := int32(1 + (k+i)%5/4)
			r.Chunks = append(r.Chunks, metrics.Chunk{T: t, Tokens: tok})
			k += int(tok)
			gap := int64(15+(k*i)%11) * ms
			if i%50 == 7 && k == out1/2 {
				gap = 900 * ms
			}
			t += gap
		}
		r.FirstToken = r.Chunks[0].T
		r.End = t
		r.OutputTokens = out1
		if i%97 == 13 {
			r.Failure = metrics.FailTimeoutIdle
			r.Error = "idle timeout <script>alert(1)</script>"
			r.Chunks = r.Chunks[:len(r.Chunks)/3]
		}
		out = append(out, r)
	}
	return out
}

// fixtureComparison is a hand-built comparison with one regression, spreads, equivalence
// mismatches and overlaid CDFs; label lets tests plant hostile text.
func fixtureComparison(label string) *metrics.Comparison {
	base := fixtureSummary("llama-3.1-8b", "base warning")
	cand := fixtureSummary("llama-3.1-8b", "cand warning")
	cand.Latency.TTFT = dist(205, 0.5, 1437)
	cand.Latency.ITLChunk = dist(48, 0.6, 120000)
	cand.TokensPerChunk = metrics.Dist{Mean: 2.6, P50: 3, P90: 4, P95: 4, P99: 5, P999: 5, Max: 5, Min: 1, Count: 120000,
		CDF: []metrics.CDFPoint{{Q: 0, Value: 1}, {Q: 0.2, Value: 1}, {Q: 0.4, Value: 2}, {Q: 0.7, Value: 3}, {Q: 0.95, Value: 4}, {Q: 1, Value: 5}}}
	c := &metrics.Comparison{
		Schema: metrics.ComparisonSchema, Method: "paired bootstrap over 1,437 request ids, 2000 resamples, 95% percentile intervals",
		Paired: true, MatchedIDs: 1437, Resamples: 2000, Confidence: 0.95, Seed: 1,
		Base:       metrics.ComparisonSide{Label: "main", Runs: 3, Requests: 4311, Succeeded: 4302, Summary: base},
		Cand:       metrics.ComparisonSide{Label: label, Runs: 1, Requests: 1437, Succeeded: 1436, Summary: cand},
		Thresholds: []metrics.Threshold{{Metric: "ttft.p95", Op: ">", Value: 5, Relative: true, Text: "ttft.p95>+5%", Unit: "%"}},
		Regressed:  true, Regressions: []string{"ttft.p95"},
		Equivalence: &metrics.Equivalence{Compared: 1436, Mismatched: 2, MismatchIDs: []string{"req-00031", "req-<b>9</b>"}, Unchecked: 3},
		CDFs: map[string]metrics.CDFPair{
			"ttft":             {Unit: "ms", Base: base.Latency.TTFT.CDF, Cand: cand.Latency.TTFT.CDF},
			"itl_chunk":        {Unit: "ms", Base: base.Latency.ITLChunk.CDF, Cand: cand.Latency.ITLChunk.CDF},
			"e2e":              {Unit: "ms", Base: base.Latency.E2E.CDF, Cand: cand.Latency.E2E.CDF},
			"tokens_per_chunk": {Unit: "tokens", Base: base.TokensPerChunk.CDF, Cand: cand.TokensPerChunk.CDF},
		},
		Warnings: []string{"candidate is a single run; base pooled 3 runs"},
	}
	md := func(name, unit, better string, b, cd, lo, hi float64, verdict, rule string) metrics.MetricDelta {
		d := metrics.MetricDelta{Name: name, Unit: unit, Better: better, Base: b, Cand: cd, Delta: cd - b,
			CILow: lo, CIHigh: hi, Verdict: verdict, Threshold: rule}
		if b != 0 {
			d.DeltaPct, d.CILowPct, d.CIHighPct = (cd-b)/b*100, lo/b*100, hi/b*100
		}
		return d
	}
	c.Metrics = []metrics.MetricDelta{
		md("ttft.p50", "ms", "lower", 180, 205, 18, 31, metrics.VerdictWorse, ""),
		md("ttft.p95", "ms", "lower", 409.7, 466.8, 40, 75, metrics.VerdictRegressed, "ttft.p95>+5%"),
		md("ttft.p99", "ms", "lower", 576, 601, -20, 70, metrics.VerdictUnchanged, ""),
		md("tpot.p95", "ms", "lower", 30.57, 24.1, -7.2, -5.7, metrics.VerdictBetter, ""),
		md("itl.p99", "ms", metrics.BetterNone, 72.69, 70.1, -6, 1.2, metrics.VerdictUnchanged, ""),
		md("itl_chunk.p99", "ms", "lower", 107, 190, 70, 96, metrics.VerdictWorse, ""),
		md("e2e.p95", "ms", "lower", 12878, 11020, -2100, -1600, metrics.VerdictBetter, ""),
		md("throughput.requests_per_s", "req/s", "higher", 12, 12, -0.1, 0.1, metrics.VerdictUnchanged, ""),
		md("goodput.fraction", "fraction", "higher", 0.94, 0.93, -0.02, 0.001, metrics.VerdictUnchanged, "goodput<-2%"),
		md("stalls.fraction", "fraction", "lower", 0, 0, 0, 0, metrics.VerdictNA, ""),
		md("tokens_per_chunk.mean", "tokens", metrics.BetterNone, 1.07, 2.9, 1.7, 1.95, metrics.VerdictChanged, ""),
	}
	c.Metrics[1].BaseSpread = &metrics.Spread{Runs: 3, Values: []float64{401, 409, 419}, Min: 401, Max: 419, Mean: 409.7, StdDev: 9, CVPct: 2.2}
	return c
}

// fixturePairs pairs fixture records with a slower candidate.
func fixturePairs(n int) *RequestPairs {
	base := fixtureRecords(n)
	cand := fixtureRecords(n)
	for i := range cand {
		d := int64(i%13) * 3e6
		cand[i].FirstToken += d
		cand[i].End += 2 * d
	}
	p, err := PairRecords(eachOf(base), eachOf(cand), 300)
	if err != nil {
		panic(err)
	}
	return p
}
