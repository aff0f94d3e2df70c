package metrics

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// oracle is the nearest-rank percentile HdrHistogram uses: the value at rank round(q*n).
func oracle(sorted []float64, q float64) float64 {
	r := int(math.Floor(q*float64(len(sorted)) + 0.5))
	r = max(1, min(r, len(sorted)))
	return sorted[r-1]
}

func TestPercentilesMatchSortedOracle(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	const n = 5000
	var recs SliceSource
	ttfts := make([]float64, 0, n)
	for i := 0; i < n; i++ {
		// Log-normal around 150ms with a heavy tail, microsecond resolution.
		v := math.Round(150*math.Exp(rng.NormFloat64()*0.8)*1000) / 1000
		ttfts = append(ttfts, v)
		recs = append(recs, timeline(fmt.Sprint(i), float64(i), v, []float64{10}, nil))
	}
	sum, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(ttfts)
	d := sum.Latency.TTFT
	for _, c := range []struct {
		name string
		got  float64
		q    float64
	}{{"p50", d.P50, 0.5}, {"p90", d.P90, 0.9}, {"p95", d.P95, 0.95}, {"p99", d.P99, 0.99}, {"p999", d.P999, 0.999}, {"max", d.Max, 1}} {
		want := oracle(ttfts, c.q)
		// 3 significant digits: within 0.1% of the value, plus the 1µs recording unit.
		if !near(c.got, want, want*0.001+0.001) {
			t.Errorf("%s: hdr %.4f, oracle %.4f", c.name, c.got, want)
		}
	}
	if !near(d.Min, ttfts[0], ttfts[0]*0.001+0.001) || d.Count != n {
		t.Errorf("min %v count %d", d.Min, d.Count)
	}
	var mean float64
	for _, v := range ttfts {
		mean += v
	}
	mean /= n
	if !near(d.Mean, mean, mean*0.001) {
		t.Errorf("mean %v want %v", d.Mean, mean)
	}
	if len(d.CDF) < 50 || len(d.CDF) > 100 || d.CDF[0].Q != 0 || d.CDF[len(d.CDF)-1].Q != 1 {
		t.Errorf("CDF has %d points", len(d.CDF))
	}
	for i := 1; i < len(d.CDF); i++ {
		if d.CDF[i].Value < d.CDF[i-1].Value || d.CDF[i].Q <= d.CDF[i-1].Q {
			t.Fatalf("CDF not monotone at %d: %+v %+v", i, d.CDF[i-1], d.CDF[i])
		}
	}
}

func TestGoodputCountsFailuresInDenominator(t *testing.T) {
	var recs SliceSource
	for i := 0; i < 6; i++ {
		recs = append(recs, timeline(fmt.Sprint("ok", i), float64(i)*100, 100, constGaps(4, 20), nil))
	}
	recs = append(recs, timeline("slow1", 700, 900, constGaps(4, 20), nil)) // TTFT misses
	recs = append(recs, timeline("slow2", 800, 100, constGaps(4, 80), nil)) // TPOT misses
	for i, kind := range []FailureKind{FailHTTP5xx, FailTimeoutFirst} {
		f := timeline(fmt.Sprint("fail", i), 900+float64(i)*100, 50, nil, nil)
		f.Failure, f.Status = kind, 503
		if kind == FailTimeoutFirst {
			f.Status = 0
		}
		recs = append(recs, f)
	}
	slo, err := ParseSLO("ttft=500ms,tpot=50")
	if err != nil {
		t.Fatal(err)
	}
	sum, err := Summarize(recs, Options{SLO: slo})
	if err != nil {
		t.Fatal(err)
	}
	g := sum.Goodput
	if g.Met != 6 || g.Fraction != 0.6 || !near(g.RequestsPerS, 6/sum.Throughput.WindowS, 1e-12) {
		t.Fatalf("goodput %+v window %v", g, sum.Throughput.WindowS)
	}
	if g.SLO["ttft"] != 500 || g.SLO["tpot"] != 50 || len(g.SLO) != 2 {
		t.Errorf("slo map %v", g.SLO)
	}
	r := sum.Requests
	if r.Failed != 2 || r.Failures["http_5xx"] != 1 || r.Failures["timeout_first_token"] != 1 || r.FailStatus["503"] != 1 {
		t.Errorf("requests %+v", r)
	}
	// Failed requests never enter latency distributions.
	if sum.Latency.TTFT.Count != 8 || sum.Latency.E2E.Count != 8 {
		t.Errorf("ttft count %d e2e %d", sum.Latency.TTFT.Count, sum.Latency.E2E.Count)
	}
	if !strings.Contains(strings.Join(sum.Warnings, "\n"), "failures: 2 of 10 requests failed (20.0%): http_5xx 1, timeout_first_token 1") {
		t.Errorf("warnings %q", sum.Warnings)
	}
	// Without an SLO, goodput is every successful request.
	plain, _ := Summarize(recs, Options{})
	if plain.Goodput.Met != 8 || plain.Goodput.Fraction != 0.8 {
		t.Errorf("no-SLO goodput %+v", plain.Goodput)
	}
}

func TestWarmupAndCooldownExcluded(t *testing.T) {
	var recs SliceSource
	for i := 0; i < 5; i++ {
		r := timeline(fmt.Sprint("w", i), float64(i)*100, 5000, constGaps(3, 20), nil)
		r.Phase = PhaseWarmup
		recs = append(recs, r)
	}
	for i := 0; i < 10; i++ {
		recs = append(recs, timeline(fmt.Sprint("s", i), 1000+float64(i)*100, 100, constGaps(3, 20), nil))
	}
	c := timeline("c0", 3000, 7000, constGaps(3, 20), nil)
	c.Phase = PhaseCooldown
	recs = append(recs, c)
	sum, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if sum.Requests.Total != 10 || sum.Latency.TTFT.Max > 101 {
		t.Fatalf("headline polluted: total %d ttft max %v", sum.Requests.Total, sum.Latency.TTFT.Max)
	}
	w, cd := sum.Excluded[PhaseWarmup], sum.Excluded[PhaseCooldown]
	if w == nil || w.Requests.Total != 5 || w.Latency.TTFT.Min < 4990 || cd == nil || cd.Requests.Total != 1 {
		t.Fatalf("excluded %+v %+v", w, cd)
	}
	if sum.Throughput.WindowStartS != 1 || !near(sum.Throughput.WindowEndS, 1.9+0.16, 1e-9) {
		t.Errorf("window %+v", sum.Throughput)
	}
	ts := sum.TimeSeries
	if ts.WarmupEndS != 1 || ts.CooldownStartS != 3 {
		t.Errorf("marks %v %v", ts.WarmupEndS, ts.CooldownStartS)
	}
	// The time series covers every phase: 16 requests sent.
	total := 0
	for _, s := range ts.Sent {
		total += s
	}
	if total != 16 {
		t.Errorf("sent %d", total)
	}
}

func TestByClassWithClassSLO(t *testing.T) {
	var recs SliceSource
	for i := 0; i < 4; i++ {
		r := timeline(fmt.Sprint("chat", i), float64(i)*100, 300, constGaps(4, 20), nil)
		r.Class = "chat"
		recs = append(recs, r)
		q := timeline(fmt.Sprint("rag", i), float64(i)*100+50, 1500, constGaps(2, 20), nil)
		q.Class = "rag"
		recs = append(recs, q)
	}
	recs = append(recs, timeline("plain", 500, 100, nil, nil))
	opts := Options{SLO: SLO{TTFT: 500 * time.Millisecond}, ClassSLO: map[string]SLO{"rag": {TTFT: 2 * time.Second}}}
	sum, err := Summarize(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ByClass) != 3 {
		t.Fatalf("classes %v", len(sum.ByClass))
	}
	chat, rag, none := sum.ByClass["chat"], sum.ByClass["rag"], sum.ByClass["(none)"]
	if chat.Requests.Total != 4 || rag.Requests.Total != 4 || none.Requests.Total != 1 {
		t.Fatalf("counts %d %d %d", chat.Requests.Total, rag.Requests.Total, none.Requests.Total)
	}
	// rag's 1.5s TTFT meets its own 2s SLO, not the default 500ms.
	if rag.Goodput.Met != 4 || rag.Goodput.SLO["ttft"] != 2000 || chat.Goodput.Met != 4 || sum.Goodput.Met != 9 {
		t.Errorf("goodput chat %+v rag %+v all %+v", chat.Goodput, rag.Goodput, sum.Goodput)
	}
	if sum.Goodput.ClassSLO["rag"]["ttft"] != 2000 {
		t.Errorf("class slo %v", sum.Goodput.ClassSLO)
	}
	if !near(rag.Latency.TTFT.P50, 1500, 1) || !near(chat.Latency.TTFT.P50, 300, 0.5) {
		t.Errorf("class latency %v %v", rag.Latency.TTFT.P50, chat.Latency.TTFT.P50)
	}
	if chat.Throughput.WindowS != sum.Throughput.WindowS {
		t.Errorf("classes share the headline window")
	}
	if _, ok := sum.Histograms["class/rag/ttft"]; !ok {
		t.Errorf("class histogram missing: %v", len(sum.Histograms))
	}
}

func TestClientLimitedAndTokenMismatchWarnings(t *testing.T) {
	var recs SliceSource
	for i := 0; i < 100; i++ {
		r := timeline(fmt.Sprint(i), float64(i)*10, 100, constGaps(3, 20), nil)
		r.ServerOutputTokens = r.OutputTokens
		if i < 5 {
			r.ServerOutputTokens++
		}
		if i >= 95 {
			r.Dispatched += int64(12.3 * float64(msNs))
			r.Sent = r.Dispatched
		}
		recs = append(recs, r)
	}
	sum, err := Summarize(recs, Options{ClientCPUFraction: 0.3})
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Client.Limited || sum.Client.Reason != "client-limited: schedule lag P99 12.3 ms exceeds 5 ms; numbers are not valid" {
		t.Errorf("client %+v", sum.Client)
	}
	if sum.Requests.TokenMismatch != 0.05 || sum.Requests.TokenCompared != 100 {
		t.Errorf("mismatch %v of %d", sum.Requests.TokenMismatch, sum.Requests.TokenCompared)
	}
	all := strings.Join(sum.Warnings, "\n")
	if !strings.Contains(all, "client-limited: schedule lag P99 12.3 ms") || !strings.Contains(all, "token counts: 5.0% of requests (5 of 100)") {
		t.Errorf("warnings %q", sum.Warnings)
	}
	// The size of the difference: five requests one token off each, of 100 × 4 tokens (and those five).
	if r := sum.Requests; r.TokenMismatchTokens != 5 || r.TokenComparedTokens != 405 ||
		!strings.Contains(all, "by 5 tokens in all (1.2% of the server's 405)") {
		t.Errorf("mismatch size %d of %d, warnings %q", r.TokenMismatchTokens, r.TokenComparedTokens, sum.Warnings)
	}
	merged, err := MergeSummaries(MergeShards, sum, sum)
	if err != nil {
		t.Fatal(err)
	}
	if r := merged.Requests; r.TokenMismatchTokens != 10 || r.TokenComparedTokens != 810 || r.TokenCompared != 200 {
		t.Errorf("merged mismatch size %d of %d over %d requests", r.TokenMismatchTokens, r.TokenComparedTokens, r.TokenCompared)
	}
	cpu, _ := Summarize(recs[:90], Options{ClientCPUFraction: 0.95})
	if !cpu.Client.Limited || !strings.Contains(cpu.Client.Reason, "client CPU use 95%") {
		t.Errorf("cpu %+v", cpu.Client)
	}
}

// TestStealWarning: a run on a virtual machine whose host took more than StealWarning of its
// CPU time says so (its timing figures include the stalls); below it, or unmeasured, nothing.
// Merged parts keep the highest steal.
func TestStealWarning(t *testing.T) {
	recs := SliceSource{timeline("a", 0, 100, constGaps(3, 20), nil)}
	for _, c := range []struct {
		steal, want float64
		warns       bool
	}{{0.05, 0.05, true}, {StealWarning, StealWarning, false}, {0.01, 0.01, false}, {0, 0, false}, {-1, 0, false}} {
		sum, err := Summarize(recs, Options{ClientStealFraction: c.steal})
		if err != nil {
			t.Fatal(err)
		}
		warned := strings.Contains(strings.Join(sum.Warnings, "\n"), "host: the hypervisor gave")
		if sum.Client.CPUStealFraction != c.want || warned != c.warns {
			t.Errorf("steal %v: client steal %v, warned %v; want %v, %v (%q)", c.steal, sum.Client.CPUStealFraction, warned, c.want, c.warns, sum.Warnings)
		}
		if c.steal == 0.05 && !strings.Contains(strings.Join(sum.Warnings, "\n"), "5.0% of the client machine's CPU time") {
			t.Errorf("the warning says how much: %q", sum.Warnings)
		}
	}
	if c := mergeClient([]*Summary{{Client: Client{CPUStealFraction: 0.01}}, {Client: Client{CPUStealFraction: 0.07}}}, nil); c.CPUStealFraction != 0.07 {
		t.Errorf("merged steal %v, want the highest part's 0.07", c.CPUStealFraction)
	}
}

func TestTimeSeriesAndCost(t *testing.T) {
	a := timeline("a", 0, 500, constGaps(9, 100), nil) // 0.5s..1.4s, 10 tokens
	b := timeline("b", 1200, 300, constGaps(4, 50), nil)
	f := timeline("f", 2500, 10, nil, nil)
	f.Failure = FailHTTP4xx
	f.Status = 400
	sum, err := Summarize(SliceSource{a, b, f}, Options{PricePerMInput: 1, PricePerMOutput: 2, Currency: "EUR"})
	if err != nil {
		t.Fatal(err)
	}
	ts := sum.TimeSeries
	if ts.BucketS != 1 || len(ts.T) != 3 {
		t.Fatalf("buckets %v %v", ts.BucketS, ts.T)
	}
	if !reflect.DeepEqual(ts.Sent, []int{1, 1, 1}) || !reflect.DeepEqual(ts.Completed, []int{0, 2, 0}) || !reflect.DeepEqual(ts.Failed, []int{0, 0, 1}) {
		t.Errorf("sent %v completed %v failed %v", ts.Sent, ts.Completed, ts.Failed)
	}
	// Tokens: a has 5 chunks before 1s and 5 after; b's 5 all in [1.5, 1.7]; f's 1 at 2.51.
	if !reflect.DeepEqual(ts.OutputTokPerS, []float64{5, 10, 1}) {
		t.Errorf("tok/s %v", ts.OutputTokPerS)
	}
	// In flight: a for 1s in bucket 0 (sent at 1ns) -> 1, plus 0.4 in bucket 1; b 0.5s in bucket 1 -> 0.9 -> 1.
	if !reflect.DeepEqual(ts.InFlight, []int{1, 1, 0}) {
		t.Errorf("in flight %v", ts.InFlight)
	}
	// Bucket 2 has no first token: no value (NaN, null in summary.json), not 0 ms.
	if !near(ts.TTFTP50[0], 500, 500*0.008) || !near(ts.TTFTP50[1], 300, 300*0.008) || !math.IsNaN(ts.TTFTP50[2]) {
		t.Errorf("ttft window %v", ts.TTFTP50)
	}
	if !near(ts.ITLP50[1], 100, 0.8) {
		t.Errorf("itl window %v", ts.ITLP50)
	}
	c := sum.Cost
	in, out := float64(sum.Requests.InputTokens), float64(sum.Requests.OutputTokens)
	wantTotal := in/1e6*1 + out/1e6*2
	if c == nil || c.Basis != "token_price" || c.Currency != "EUR" || !near(c.Total, wantTotal, 1e-15) || !near(c.PerRequest, wantTotal/3, 1e-15) {
		t.Fatalf("cost %+v", c)
	}
	gpu, _ := Summarize(SliceSource{a, b}, Options{GPUHourCost: 3.6, GPUCount: 2})
	if gpu.Cost.Basis != "gpu_hour" || !near(gpu.Cost.Total, 3.6*2*gpu.Throughput.WindowS/3600, 1e-12) || gpu.Cost.Currency != "USD" {
		t.Errorf("gpu cost %+v", gpu.Cost)
	}
	none, _ := Summarize(SliceSource{a}, Options{})
	if none.Cost != nil {
		t.Errorf("cost without prices %+v", none.Cost)
	}
}

func TestTimeSeriesWidensLongRuns(t *testing.T) {
	long := timeline("x", 0, 100, []float64{2 * 3600 * 1000}, nil) // a two-hour gap
	sum, err := Summarize(SliceSource{long}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if n := len(sum.TimeSeries.T); n > MaxBuckets || sum.TimeSeries.BucketS != 3 {
		t.Fatalf("%d buckets of %vs", n, sum.TimeSeries.BucketS)
	}
}

// mixedRun builds a run with classes, failures, multi-token chunks and a warm-up phase.
func mixedRun(n int, seed uint64) SliceSource {
	rng := rand.New(rand.NewPCG(seed, seed+1))
	var recs SliceSource
	for i := 0; i < n; i++ {
		gaps := make([]float64, 5+rng.IntN(30))
		toks := make([]int32, len(gaps)+1)
		for j := range gaps {
			gaps[j] = 5 + rng.ExpFloat64()*20
			if rng.IntN(50) == 0 {
				gaps[j] = 400 + rng.Float64()*300
			}
		}
		for j := range toks {
			toks[j] = 1 + int32(rng.IntN(3))
		}
		r := timeline(fmt.Sprint("r", i), float64(i)*37, 50+rng.ExpFloat64()*200, gaps, toks)
		r.Class = []string{"chat", "rag", ""}[i%3]
		r.InputTokens = 50 + rng.IntN(4000)
		r.Dispatched += int64(rng.IntN(3000)) * 1000
		r.Sent = r.Dispatched + int64(rng.IntN(2000))*1000
		r.ServerOutputTokens = r.OutputTokens
		if i%41 == 0 {
			r.Failure, r.Status = FailHTTP5xx, 500
		}
		if i < n/10 {
			r.Phase = PhaseWarmup
		}
		recs = append(recs, r)
	}
	return recs
}

func TestMergeOfHalvesEqualsWhole(t *testing.T) {
	recs := mixedRun(600, 11)
	opts := Options{StallThreshold: 200 * time.Millisecond, SLO: SLO{TTFT: 300 * time.Millisecond, TPOT: 30 * time.Millisecond},
		PricePerMOutput: 1}
	var a, b SliceSource
	for i, r := range recs {
		if i%2 == 0 {
			a = append(a, r)
		} else {
			b = append(b, r)
		}
	}
	whole, err := Summarize(recs, opts)
	if err != nil {
		t.Fatal(err)
	}
	sa, _ := Summarize(a, opts)
	sb, _ := Summarize(b, opts)
	// Go through summary.json, as `llmbench merge` does.
	sa, sb = viaJSON(t, sa), viaJSON(t, sb)
	merged, err := MergeSummaries(MergeShards, sa, sb)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(merged.Latency, whole.Latency) {
		t.Errorf("latency differs:\nmerged %+v\nwhole  %+v", merged.Latency.TTFT, whole.Latency.TTFT)
	}
	if !reflect.DeepEqual(merged.Requests, whole.Requests) || !reflect.DeepEqual(merged.Stalls, whole.Stalls) ||
		!reflect.DeepEqual(merged.Goodput, whole.Goodput) || !reflect.DeepEqual(merged.TokensPerChunk, whole.TokensPerChunk) {
		t.Errorf("blocks differ:\n%+v\n%+v\n%+v\n%+v\n%+v\n%+v", merged.Requests, whole.Requests, merged.Stalls, whole.Stalls, merged.Goodput, whole.Goodput)
	}
	if !reflect.DeepEqual(merged.Fluidity, whole.Fluidity) || !reflect.DeepEqual(merged.Client.LagMs, whole.Client.LagMs) {
		t.Errorf("fluidity/client differ: %+v %+v", merged.Fluidity, whole.Fluidity)
	}
	if !reflect.DeepEqual(merged.Histograms, whole.Histograms) {
		t.Errorf("histogram encodings differ")
	}
	mt, wt := merged.Throughput, whole.Throughput
	if mt.WindowS != wt.WindowS || !near(mt.OutputTokensPerS, wt.OutputTokensPerS, 1e-9) || !near(mt.RequestsPerS, wt.RequestsPerS, 1e-12) {
		t.Errorf("throughput %+v vs %+v", mt, wt)
	}
	for c, wc := range whole.ByClass {
		mc := merged.ByClass[c]
		if mc == nil || !reflect.DeepEqual(mc.Latency, wc.Latency) || !reflect.DeepEqual(mc.Requests, wc.Requests) || !reflect.DeepEqual(mc.Goodput, wc.Goodput) || !reflect.DeepEqual(mc.Fluidity, wc.Fluidity) {
			t.Errorf("class %s differs", c)
		}
	}
	if !reflect.DeepEqual(merged.Excluded["warmup"], whole.Excluded["warmup"]) {
		t.Errorf("warm-up differs")
	}
	if !near(merged.Cost.Total, whole.Cost.Total, 1e-12) {
		t.Errorf("cost %v vs %v", merged.Cost.Total, whole.Cost.Total)
	}
	if !reflect.DeepEqual(merged.TimeSeries.Sent, whole.TimeSeries.Sent) || !reflect.DeepEqual(merged.TimeSeries.Completed, whole.TimeSeries.Completed) {
		t.Errorf("time series counts differ")
	}
	if !slices.Equal(merged.Warnings, whole.Warnings) {
		t.Errorf("warnings %q vs %q", merged.Warnings, whole.Warnings)
	}
	// Sequential runs: windows add.
	runs, err := MergeSummaries(MergeRuns, sa, sa)
	if err != nil {
		t.Fatal(err)
	}
	if runs.Throughput.WindowS != 2*sa.Throughput.WindowS || runs.Requests.Total != 2*sa.Requests.Total || runs.TimeSeries != nil {
		t.Errorf("runs merge %+v", runs.Throughput)
	}
	if _, err := MergeSummaries(MergeShards); err == nil {
		t.Error("empty merge accepted")
	}
}

func viaJSON(t *testing.T, s *Summary) *Summary {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	var out Summary
	if err := json.Unmarshal(b, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func TestEachSLOLimit(t *testing.T) {
	// 20 chunks: 19 gaps of 20ms except one of 300ms; TTFT 100ms; E2E 100+18*20+300 = 760ms.
	gaps := constGaps(19, 20)
	gaps[10] = 300
	r := timeline("r", 0, 100, gaps, nil)
	s := &summarizer{}
	for _, c := range []struct {
		slo  string
		meet bool
	}{
		{"ttft=100ms", true}, {"ttft=99ms", false},
		{"e2e=760ms", true}, {"e2e=759ms", false},
		{"tpot=35ms", true}, {"tpot=34ms", false}, // (760-100)/19 = 34.7ms
		{"max_gap=300ms", true}, {"max_gap=299ms", false},
		{"itl_p99=300ms", true}, {"itl_p99=299ms", false}, // 19 samples: p99 is the largest
		{"ttft=1s,tpot=1s,itl_p99=1s,max_gap=1s,e2e=1s", true},
	} {
		slo, err := ParseSLO(c.slo)
		if err != nil {
			t.Fatal(err)
		}
		s.opts = Options{SLO: slo}
		if got := s.meets(&r); got != c.meet {
			t.Errorf("%s: meets=%v", c.slo, got)
		}
	}
}

func TestOptionDefaults(t *testing.T) {
	o := Options{}.withDefaults()
	if o.StallMultiple != 5 || o.Bucket != time.Second || o.LagLimit != 5*time.Millisecond || o.FluidityTBT != 50*time.Millisecond ||
		o.FluidityTTFT != 500*time.Millisecond || o.FluidityPrefillRate != 10000 || o.Currency != "USD" || o.CPULimit != 0.8 {
		t.Errorf("%+v", o)
	}
	o = Options{SLO: SLO{TTFT: 2 * time.Second, ITLP99: 80 * time.Millisecond}}.withDefaults()
	if o.FluidityTTFT != 2*time.Second || o.FluidityTBT != 80*time.Millisecond {
		t.Errorf("SLO-derived deadlines %+v", o)
	}
	o = Options{SLO: SLO{TPOT: 40 * time.Millisecond, ITLP99: 80 * time.Millisecond}, FluidityPrefillRate: -1}.withDefaults()
	if o.FluidityTBT != 40*time.Millisecond || o.FluidityPrefillRate != -1 {
		t.Errorf("TPOT first %+v", o)
	}
}

func TestTooManyClassesFoldIntoOther(t *testing.T) {
	var recs SliceSource
	for i := 0; i < MaxClasses+10; i++ {
		r := timeline(fmt.Sprint(i), float64(i), 100, nil, nil)
		r.Class = fmt.Sprint("user-", i)
		recs = append(recs, r)
	}
	sum, err := Summarize(recs, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sum.ByClass) != MaxClasses+1 || sum.ByClass["(other)"].Requests.Total != 10 {
		t.Fatalf("%d classes", len(sum.ByClass))
	}
	if !strings.Contains(strings.Join(sum.Warnings, " "), "10 requests of the classes after the first 64") {
		t.Errorf("warnings %v", sum.Warnings)
	}
}
