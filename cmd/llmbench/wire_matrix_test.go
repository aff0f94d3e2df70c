package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// usageOpts rewrites the stream_options of every request on its way to the engine, so that
// one engine serves each usage option the matrix needs.
type usageOpts struct{ include, continuous bool }

func (u usageOpts) String() string {
	switch {
	case u.continuous:
		return "usage+continuous"
	case u.include:
		return "include_usage"
	}
	return "no-usage"
}

func (u usageOpts) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		var m map[string]any
		if json.Unmarshal(b, &m) == nil {
			if m["stream"] == true {
				m["stream_options"] = map[string]bool{"include_usage": u.include, "continuous_usage_stats": u.continuous}
			}
			b, _ = json.Marshal(m)
		}
		r.Body = io.NopCloser(bytes.NewReader(b))
		r.ContentLength = int64(len(b))
		h.ServeHTTP(w, r)
	})
}

// wireCell is one cell of the matrix.
type wireCell struct {
	wire  string
	chat  bool
	spec  bool
	usage usageOpts
	tok   bool
}

func (c wireCell) String() string {
	api := "completions"
	if c.chat {
		api = "chat"
	}
	return fmt.Sprintf("%s/%s/spec=%v/%s/tokenizer=%v", c.wire, api, c.spec, c.usage, c.tok)
}

// bursts groups a record's chunk times into deliveries: chunks closer than 0.5 ms (one engine
// step's events, sent back to back) are one delivery.
func bursts(chunks []metrics.Chunk) []int64 {
	ts := make([]int64, len(chunks))
	for i, c := range chunks {
		ts[i] = c.T
	}
	return burstTimes(ts)
}

func burstTimes(ts []int64) []int64 {
	var out []int64
	for i, t := range ts {
		if i == 0 || t-ts[i-1] > int64(500*time.Microsecond) {
			out = append(out, t)
		}
	}
	return out
}

// TestWireMatrix runs every personality × completions/chat × speculative decoding on/off ×
// usage options × tokenizer or not, on virtual time (a synctest bubble: engine, HTTP and
// client share one clock, so the run is exact and fast whatever the machine's load), and
// holds the harness to the engine's ground truth: token totals exactly whenever the wire makes
// them knowable (server usage, a tokenizer, or one event per token), the per-chunk split
// exactly where per-chunk usage gives it, and TTFT, decode time and the gaps between
// deliveries equal to the engine's (the harness's own error on virtual time is zero; 1 µs is
// allowed for rounding).
func TestWireMatrix(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 3; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("m", i), Arrival: time.Duration(i) * 15 * time.Millisecond, InputTokens: 40, OutputTokens: 24})
	}
	for _, w := range refengine.Wires {
		for _, chat := range []bool{false, true} {
			for _, spec := range []bool{false, true} {
				for _, u := range []usageOpts{{}, {include: true}, {include: true, continuous: true}} {
					for _, tok := range []bool{false, true} {
						c := wireCell{w, chat, spec, u, tok}
						t.Run(c.String(), func(t *testing.T) {
							synctest.Test(t, func(t *testing.T) {
								recs, tls, _ := runVirtualCell(t, c, reqs, nil)
								for i := range recs {
									checkWireRecord(t, c, &recs[i], tls[recs[i].ID])
								}
							})
						})
					}
				}
			}
		}
	}
}

// checkWireRecord checks one record against its ground truth.
func checkWireRecord(t *testing.T, c wireCell, r *metrics.Record, tl refengine.Timeline) {
	t.Helper()
	if !r.OK() {
		t.Fatalf("%s failed: %s %s", r.ID, r.Failure, r.Error)
	}
	if len(tl.Emissions) == 0 {
		t.Fatalf("no ground truth for %s", r.ID)
	}
	sum := 0
	for _, ch := range r.Chunks {
		sum += int(ch.Tokens)
	}
	if sum != r.OutputTokens {
		t.Errorf("%s: chunks sum to %d, output tokens %d", r.ID, sum, r.OutputTokens)
	}
	usage := c.usage.include || c.wire == "llamacpp" // llama.cpp always reports usage
	perToken := c.wire == "llamacpp" || c.wire == "tgi" || c.wire == "ollama"
	knowable := usage || c.tok || perToken || !c.spec
	switch {
	case knowable && r.OutputTokens != tl.OutputTokens:
		t.Errorf("%s: %d output tokens (%s, per chunk by %s), engine generated %d", r.ID, r.OutputTokens, r.TokenSource, r.TokenAttribution, tl.OutputTokens)
	case !knowable && r.TokenSource != metrics.TokensFromChunks:
		t.Errorf("%s: no usage, no tokenizer, multi-token chunks: counted by %q, want chunks", r.ID, r.TokenSource)
	}
	if usage && (r.TokenSource != metrics.TokensFromUsage || r.ServerOutputTokens != tl.OutputTokens) {
		t.Errorf("%s: token source %q, server %d: the server's usage must be the count", r.ID, r.TokenSource, r.ServerOutputTokens)
	}
	// Per-chunk usage gives each delivery's exact count.
	if c.usage.continuous && (c.wire == "vllm" || c.wire == "sglang") {
		if len(r.Chunks) != len(tl.Emissions) {
			t.Fatalf("%s: %d chunks for %d emissions", r.ID, len(r.Chunks), len(tl.Emissions))
		}
		for i, e := range tl.Emissions {
			if int(r.Chunks[i].Tokens) != e.Tokens {
				t.Fatalf("%s: chunk %d carried %d tokens, the engine emitted %d", r.ID, i, r.Chunks[i].Tokens, e.Tokens)
			}
		}
		if r.TokenAttribution != metrics.TokensFromUsage {
			t.Errorf("%s: attribution %q, want usage", r.ID, r.TokenAttribution)
		}
	}
	// One event per token and a total from usage: exactly one token per chunk, whatever the
	// tokenizer makes of the text (issue 31 item 4).
	if perToken && usage {
		for i, ch := range r.Chunks {
			if ch.Tokens != 1 {
				t.Fatalf("%s: chunk %d carried %d tokens on a one-token-per-event wire", r.ID, i, ch.Tokens)
			}
		}
		if len(r.Chunks) != tl.OutputTokens || r.TokenAttribution != metrics.TokensOnePerChunk {
			t.Errorf("%s: %d chunks by %q for %d tokens, want one per chunk", r.ID, len(r.Chunks), r.TokenAttribution, tl.OutputTokens)
		}
	}
	// Several tokens per chunk, the total only at the end, and the engine's own tokenizer on
	// the client: its counts split the total exactly as the engine emitted it.
	if !perToken && usage && !c.usage.continuous && c.tok {
		if len(r.Chunks) != len(tl.Emissions) {
			t.Fatalf("%s: %d chunks for %d emissions", r.ID, len(r.Chunks), len(tl.Emissions))
		}
		for i, e := range tl.Emissions {
			if int(r.Chunks[i].Tokens) != e.Tokens {
				t.Fatalf("%s: chunk %d carried %d tokens (%s), the engine emitted %d", r.ID, i, r.Chunks[i].Tokens, r.TokenAttribution, e.Tokens)
			}
		}
	}
	// Timing against the engine's emissions: TTFT from the send (the engine's arrival is the
	// same instant on virtual time), decode time from first to last token, and the gaps
	// between deliveries (a per-token personality's burst of events is one delivery).
	const eps = float64(time.Microsecond)
	gtTTFT := float64(tl.Emissions[0].At - tl.Arrival)
	gtDecode := float64(tl.Emissions[len(tl.Emissions)-1].At - tl.Emissions[0].At)
	ttft, decode := float64(r.FirstToken-r.Sent), float64(r.Chunks[len(r.Chunks)-1].T-r.FirstToken)
	if math.Abs(ttft-gtTTFT) > eps || math.Abs(decode-gtDecode) > eps {
		t.Errorf("%s: TTFT %.3f / decode %.3f ms, engine %.3f / %.3f ms", r.ID, ttft/1e6, decode/1e6, gtTTFT/1e6, gtDecode/1e6)
	}
	var gt []int64
	for _, e := range tl.Emissions {
		gt = append(gt, int64(e.At))
	}
	b, gtb := bursts(r.Chunks), burstTimes(gt)
	if len(b) != len(gtb) {
		t.Errorf("%s: %d deliveries, the engine made %d emissions", r.ID, len(b), len(gtb))
	}
	for i := 1; i < min(len(b), len(gtb)); i++ {
		if got, want := float64(b[i]-b[i-1]), float64(gtb[i]-gtb[i-1]); math.Abs(got-want) > eps {
			t.Errorf("%s: gap %d between deliveries %.3f ms, engine %.3f ms", r.ID, i, got/1e6, want/1e6)
			break
		}
	}
}

// TestABSpeculativeLlamacppNoSpuriousStalls: llama.cpp sends every token of a speculative
// pass as its own event, microseconds apart. An A/B of speculative decoding off and on with
// that framing finds no stall on either arm (the threshold follows decode time, not the
// bursts' chunk gaps), and tokens per chunk stay 1 on both.
func TestABSpeculativeLlamacppNoSpuriousStalls(t *testing.T) {
	if testing.Short() {
		t.Skip("an A/B over HTTP: skipped in -short mode")
	}
	quietMachine(t)
	out := t.TempDir()
	app := newTestApp(nil)
	// Real time (--time-scale 1): a scaled clock would magnify the shared machine's scheduling
	// hiccups into gaps as long as the threshold.
	code := app.cli("ab", "--trace", chatSmall, "--wire", "llamacpp", "--b-engine", "spec-k=4,spec-alpha=0.8",
		"--runs", "1", "--warmup-requests", "2", "--max-requests", "12", "--format", "json", "--out", out, "--no-progress")
	if code != 0 {
		t.Fatalf("ab: exit %d\n%s", code, app.err.String())
	}
	data, err := os.ReadFile(filepath.Join(out, "ab.json"))
	if err != nil {
		t.Fatal(err)
	}
	var res runner.ABResult
	if err := json.Unmarshal(data, &res); err != nil {
		t.Fatal(err)
	}
	a, b := res.Comparison.Base.Summary, res.Comparison.Cand.Summary
	for _, s := range []struct {
		arm string
		sum *metrics.Summary
	}{{"A", a}, {"B", b}} {
		t.Logf("arm %s: %d stalls (threshold %.3g ms, %s), chunk ITL P50 %.3g ms", s.arm, s.sum.Stalls.Count,
			s.sum.Stalls.ThresholdMs, s.sum.Stalls.ThresholdRule, s.sum.Latency.ITLChunk.P50)
		if s.sum.TokensPerChunk.Max != 1 || s.sum.Requests.Succeeded == 0 || s.sum.Stalls.ThresholdMs < 20 {
			t.Errorf("arm %s: tokens per chunk max %v, %d ok, threshold %v ms", s.arm, s.sum.TokensPerChunk.Max, s.sum.Requests.Succeeded, s.sum.Stalls.ThresholdMs)
		}
	}
	// The engine decodes steadily on both arms, so every stall either arm reports is the
	// shared machine delaying a delivery (none on a quiet one). What bursts would add shows
	// as the bursty arm reporting more than the steady one: a chunk-gap rule put every
	// speculative pass over the threshold (thousands here).
	if b.Stalls.Count > a.Stalls.Count+2 || b.Stalls.StalledTimeFraction > 0.05 {
		t.Errorf("bursty arm B: %d stalls (%.1f%% of decode time) against %d on the steady arm A", b.Stalls.Count, 100*b.Stalls.StalledTimeFraction, a.Stalls.Count)
	}
	if !(b.Latency.TPOT.P50 < a.Latency.TPOT.P50) {
		t.Errorf("speculation should lower TPOT: A %v ms, B %v ms", a.Latency.TPOT.P50, b.Latency.TPOT.P50)
	}
}

// TestStallsOnBurstyWire: a steady decode delivered as bursts of per-token events (llama.cpp
// framing with speculative decoding) has no stall; with 500 ms stalls injected into half the
// requests of an otherwise identical run, every injected stall is found, and nothing else.
func TestStallsOnBurstyWire(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 8; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("s", i), Arrival: time.Duration(i) * 20 * time.Millisecond, InputTokens: 64, OutputTokens: 64})
	}
	c := wireCell{wire: "llamacpp", chat: true, spec: true, usage: usageOpts{include: true}, tok: true}
	for _, stalls := range []bool{false, true} {
		synctest.Test(t, func(t *testing.T) {
			recs, tls, faults := runVirtualCell(t, c, reqs, func(cfg *refengine.Config) {
				if stalls {
					f, err := refengine.ParseFaults("stall=0.5:500ms,seed=3")
					if err != nil {
						t.Fatal(err)
					}
					cfg.Faults = f
				}
			})
			sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			injected := faults["stall"]
			if stalls && (injected == 0 || injected == int64(len(reqs))) {
				t.Fatalf("fixture: %d of %d requests stalled", injected, len(reqs))
			}
			if sum.Stalls.Count != injected || sum.Stalls.RequestsWithStall != injected {
				t.Errorf("stalls injected %d: found %d in %d requests (threshold %.3g ms, %s)", injected,
					sum.Stalls.Count, sum.Stalls.RequestsWithStall, sum.Stalls.ThresholdMs, sum.Stalls.ThresholdRule)
			}
			// Each stalled request is one the engine held for 500 ms.
			for _, r := range recs {
				var engineGap, gap int64
				tl := tls[r.ID]
				for i := 1; i < len(tl.Sent); i++ {
					engineGap = max(engineGap, int64(tl.Sent[i]-tl.Sent[i-1]))
				}
				for i := 1; i < len(r.Chunks); i++ {
					gap = max(gap, r.Chunks[i].T-r.Chunks[i-1].T)
				}
				if (gap > int64(sum.Stalls.ThresholdMs*1e6)) != (engineGap >= int64(500*time.Millisecond)) {
					t.Errorf("%s: largest gap %v, engine's %v", r.ID, time.Duration(gap), time.Duration(engineGap))
				}
			}
			if sum.TokensPerChunk.Max != 1 || sum.Latency.ITLChunk.P50 > 0.1 {
				t.Errorf("llama.cpp framing: tokens per chunk max %v (want 1), chunk ITL P50 %v ms (want the bursts' ~0)", sum.TokensPerChunk.Max, sum.Latency.ITLChunk.P50)
			}
		})
	}
}

// TestReasoningStreams: with the engine's reasoning mode, the harness separates reasoning
// from the answer on each personality that streams it (vLLM's reasoning_content, Ollama's
// reasoning) and on OpenAI's, which hides it and reports it in usage: reasoning tokens match
// the engine's, TTFT is the first token of any kind, the time to first answer token is when
// the first answer token was sent, and the summary reports both phases.
func TestReasoningStreams(t *testing.T) {
	var reqs []traces.Request
	for i := 0; i < 3; i++ {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint("q", i), Arrival: time.Duration(i) * 10 * time.Millisecond, InputTokens: 32, OutputTokens: 40})
	}
	const frac, want = 0.25, 10 // of 40 tokens
	for _, c := range []wireCell{
		{wire: "vllm", chat: true, usage: usageOpts{include: true, continuous: true}},
		{wire: "vllm", chat: true, spec: true, usage: usageOpts{include: true}, tok: true},
		{wire: "ollama", chat: true, usage: usageOpts{include: true}},
		{wire: "openai", chat: true, usage: usageOpts{include: true}},
	} {
		t.Run(c.String(), func(t *testing.T) {
			var recs []metrics.Record
			var tls map[string]refengine.Timeline
			synctest.Test(t, func(t *testing.T) {
				recs, tls, _ = runVirtualCell(t, c, reqs, func(cfg *refengine.Config) { cfg.ReasoningFraction = frac })
			})
			hidden := c.wire == "openai"
			for _, r := range recs {
				if !r.OK() {
					t.Fatalf("%s: %s %s", r.ID, r.Failure, r.Error)
				}
				tl := tls[r.ID]
				if r.OutputTokens != tl.OutputTokens || r.ReasoningTokens != want {
					t.Errorf("%s: %d output / %d reasoning tokens, engine %d / %d", r.ID, r.OutputTokens, r.ReasoningTokens, tl.OutputTokens, want)
				}
				if hidden != (r.ReasoningChunks == 0) || r.FirstAnswer <= 0 {
					t.Errorf("%s: %d reasoning chunks, first answer at %d", r.ID, r.ReasoningChunks, r.FirstAnswer)
				}
				// The first answer token is token number `want`: find the emission that carried it.
				k, seen := 0, 0
				for seen+tl.Emissions[k].Tokens <= want {
					seen += tl.Emissions[k].Tokens
					k++
				}
				gtTTFAT := float64(tl.Emissions[k].At - tl.Arrival)
				ttfat := float64(r.FirstAnswer - r.Sent)
				if math.Abs(ttfat-gtTTFAT) > float64(time.Microsecond) {
					t.Errorf("%s: time to first answer %.2f ms, engine sent it at %.2f ms", r.ID, ttfat/1e6, gtTTFAT/1e6)
				}
				if !hidden && !(r.FirstAnswer > r.FirstToken) {
					t.Errorf("%s: the answer must follow the reasoning: first token %d, first answer %d", r.ID, r.FirstToken, r.FirstAnswer)
				}
			}
			sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
			if err != nil {
				t.Fatal(err)
			}
			rs := sum.Reasoning
			if rs == nil || rs.Requests != len(reqs) || rs.ReasoningTokens != int64(want*len(reqs)) || rs.AnswerTokens != int64((40-want)*len(reqs)) {
				t.Fatalf("reasoning block %+v", rs)
			}
			if !hidden && (rs.TTFAT.P50 <= sum.Latency.TTFT.P50 || rs.ITLReasoning.Count == 0 || rs.ITLAnswer.Count == 0) {
				t.Errorf("TTFAT %v vs TTFT %v; ITL reasoning %d answer %d samples", rs.TTFAT.P50, sum.Latency.TTFT.P50, rs.ITLReasoning.Count, rs.ITLAnswer.Count)
			}
			if sum.Requests.OutputTokens != int64(40*len(reqs)) {
				t.Errorf("output tokens %d: reasoning counts once", sum.Requests.OutputTokens)
			}
		})
	}
}

// TestErrorMidStream: each personality's way of ending a started stream with an error (a data
// error object, vLLM's followed by [DONE], TGI's {"error","error_type"}, llama.cpp's
// "error:" line) is recorded as server_error with the server's message, keeping the tokens
// received before it.
func TestErrorMidStream(t *testing.T) {
	reqs := []traces.Request{{ID: "e0", InputTokens: 16, OutputTokens: 32}}
	for _, w := range refengine.Wires {
		t.Run(w, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				c := wireCell{wire: w, chat: true, usage: usageOpts{include: true}}
				recs, _, faults := runVirtualCell(t, c, reqs, func(cfg *refengine.Config) {
					f, err := refengine.ParseFaults("error-mid=1")
					if err != nil {
						t.Fatal(err)
					}
					cfg.Faults = f
				})
				r := recs[0]
				if faults["error-mid"] != 1 || r.Failure != metrics.FailServerError || !strings.Contains(r.Error, "the engine failed while generating") || len(r.Chunks) == 0 {
					t.Fatalf("failure %q error %q, %d chunks (faults %v)", r.Failure, r.Error, len(r.Chunks), faults)
				}
			})
		})
	}
}

// TestRunEndpointRecordsServerConfig: run --endpoint reads the server's own configuration
// into the run facts (here the reference engine's /version), so compare can list what
// differs between two runs.
func TestRunEndpointRecordsServerConfig(t *testing.T) {
	srv := startRefEngine(t, refengine.Config{TimeScale: 20, SpecK: 4, SpecAlpha: 0.8, Wire: "llamacpp"})
	dir := t.TempDir()
	trace, _ := writeTrace(t, dir, "trace.jsonl", traceSpec{prefix: "c", n: 3, spacing: 10 * time.Millisecond, in: 32, out: 8})
	out := filepath.Join(dir, "out")
	mustRun(t, newTestApp(nil), "run", "--trace", trace, "--out", out, "--endpoint", srv.URL, "--model", "llama-3.1-8b", "--no-progress")
	s := readSummaryStruct(t, out)
	if s.Run.Engine["server.num_speculative_tokens"] != "4" || s.Run.Engine["server.wire"] != "llamacpp" || s.Run.Engine["models"] != "llama-3.1-8b" {
		t.Fatalf("run facts %v", s.Run.Engine)
	}
}
