package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/internal/gguf"
	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/internal/realserver"
	"github.com/llmbench/llmbench/metrics"
)

// The wire claims on a real server nobody here wrote (issue 45, docs/servers.md "Tested
// against real servers"): Ollama v0.6.8 on CPU, serving the tiny Llama model internal/gguf
// writes, loaded with `ollama create` from a Modelfile. Each test starts its own server
// (internal/realserver; skipped without the binary, failed under CI=true) and runs llmbench's
// CLI in-process against it, as a user would.

// realTrace writes a JSONL trace from lines and returns its path.
func realTrace(t *testing.T, lines ...string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "trace.jsonl")
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// realRun runs `llmbench run` against srv and returns the results directory, the exit code
// and the app (its output).
func realRun(t *testing.T, srv *realserver.Server, trace string, extra ...string) (string, int, *testApp) {
	t.Helper()
	out := filepath.Join(t.TempDir(), "out")
	app := newTestApp(nil)
	args := append([]string{"run", "--trace", trace, "--endpoint", srv.URL, "--backend", "ollama", "--model", srv.Model,
		"--out", out, "--no-progress", "--timeout-total", "60s"}, extra...)
	code := app.cli(args...)
	if code != 0 && code != exitRunFailed {
		t.Fatalf("llmbench %s: exit %d\nstderr:\n%s", strings.Join(args, " "), code, app.err.String())
	}
	return out, code, app
}

func realRecords(t *testing.T, dir string) map[string]metrics.Record {
	t.Helper()
	recs, err := metrics.ReadRecords(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	byID := make(map[string]metrics.Record, len(recs))
	for _, r := range recs {
		byID[r.ID] = r
	}
	return byID
}

// TestOllamaUsageStreamingSizing: on chat and completions, every request's token counts come
// from the server's usage (stream_options.include_usage), the model never stops early so the
// counts are exactly max_tokens, each streamed chunk carries one token (so ITL per token has
// one gap per token after the first), and the prompts synthesized from input_tokens are sized
// by probe requests (Ollama has no /tokenize) to the server's count within the run's tolerance.
func TestOllamaUsageStreamingSizing(t *testing.T) {
	srv := realserver.Start(t, realserver.Options{Parallel: 2})
	ins := []int{40, 100, 250, 500, 900, 64, 300, 1200}
	var lines []string
	var outTotal int64
	for i, n := range ins {
		o := 8 + 8*i
		outTotal += int64(o)
		lines = append(lines, fmt.Sprintf(`{"id":"q%d","arrival_s":%.2f,"input_tokens":%d,"output_tokens":%d}`, i, 0.2*float64(i), n, o))
	}
	trace := realTrace(t, lines...)
	for _, api := range []string{"chat", "completions"} {
		t.Run(api, func(t *testing.T) {
			dir, code, app := realRun(t, srv, trace, "--api", api)
			s := readSummaryStruct(t, dir)
			t.Logf("%s: exit %d; sizing %q; inputs %+v; TTFT P50 %.1f ms, TPOT P50 %.2f ms, ITL P50 %.2f ms",
				api, code, s.Run.PromptSizing, s.Inputs, s.Latency.TTFT.P50, s.Latency.TPOT.P50, s.Latency.ITL.P50)
			if s.Requests.Succeeded != len(ins) {
				t.Fatalf("requests %+v\n%s", s.Requests, app.err.String())
			}
			if s.Requests.OutputTokens != outTotal || s.Requests.TokenSource["usage"] != len(ins) {
				t.Errorf("output tokens %d from %v, want the trace's %d, all from usage", s.Requests.OutputTokens, s.Requests.TokenSource, outTotal)
			}
			for id, r := range realRecords(t, dir) {
				if len(r.Chunks) != r.OutputTokens {
					t.Errorf("%s: %d chunks for %d tokens, want one token per chunk", id, len(r.Chunks), r.OutputTokens)
				}
				for i, c := range r.Chunks {
					if c.Tokens != 1 {
						t.Errorf("%s: chunk %d of %d carries %d tokens (attribution %q), want 1", id, i, len(r.Chunks), c.Tokens, r.TokenAttribution)
						break
					}
				}
				if r.ServerInputTokens <= 0 {
					t.Errorf("%s: no prompt count from the server", id)
				}
			}
			if !strings.HasPrefix(s.Run.PromptSizing, "calibrate: ") {
				t.Errorf("prompt sizing %q, want calibration from probe requests", s.Run.PromptSizing)
			}
			if c := s.Inputs; c == nil || c.Requests != len(ins) || c.Exceeded || code != 0 {
				t.Errorf("inputs %+v (exit %d), want every prompt counted within the tolerance", c, code)
			}
		})
	}
}

// TestOllamaErrorsAndCancellation: a request naming a model the server does not serve is
// model_not_found (Ollama's 404 "model 'x' not found"); a request cancelled by the trace
// (cancel_after_ms) is cancelled, neither success nor failure, and the server stops its
// generation: two endless requests hold both slots until cancelled, and a third sent after
// the cancellations is served.
func TestOllamaErrorsAndCancellation(t *testing.T) {
	srv := realserver.Start(t, realserver.Options{Parallel: 2})
	t.Run("model_not_found", func(t *testing.T) {
		trace := realTrace(t,
			`{"id":"ok","arrival_s":0,"input_tokens":32,"output_tokens":4}`,
			`{"id":"gone","arrival_s":0.1,"input_tokens":32,"output_tokens":4,"model":"no-such-model"}`)
		dir, code, app := realRun(t, srv, trace)
		recs := realRecords(t, dir)
		if recs["ok"].Failure != metrics.FailNone || recs["gone"].Failure != metrics.FailModelNotFound || recs["gone"].Status != 404 {
			t.Fatalf("ok %q, gone %q (HTTP %d, %q), want success and model_not_found (exit %d)\n%s",
				recs["ok"].Failure, recs["gone"].Failure, recs["gone"].Status, recs["gone"].Error, code, app.err.String())
		}
		t.Logf("unknown model: %s, HTTP %d, type %q, message %q", recs["gone"].Failure, recs["gone"].Status, recs["gone"].ErrorType, recs["gone"].Error)
	})
	t.Run("cancelled", func(t *testing.T) {
		trace := realTrace(t,
			`{"id":"long1","arrival_s":0,"input_tokens":32,"output_tokens":200000,"cancel_after_ms":700}`,
			`{"id":"long2","arrival_s":0.05,"input_tokens":32,"output_tokens":200000,"cancel_after_ms":700}`,
			`{"id":"after","arrival_s":1.5,"input_tokens":32,"output_tokens":16}`)
		dir, code, app := realRun(t, srv, trace, "--timeout-total", "30s")
		recs := realRecords(t, dir)
		for _, id := range []string{"long1", "long2"} {
			if r := recs[id]; !r.Cancelled() || r.OutputTokens == 0 {
				t.Errorf("%s: %q with %d tokens, want cancelled after some output", id, r.Failure, r.OutputTokens)
			}
		}
		if r := recs["after"]; r.Failure != metrics.FailNone || r.OutputTokens != 16 {
			t.Errorf("after: %q with %d tokens: the cancelled requests still hold the server's slots (exit %d)\n%s", r.Failure, r.OutputTokens, code, app.err.String())
		}
		s := readSummaryStruct(t, dir)
		if s.Requests.Cancelled != 2 || s.Requests.Failed != 0 {
			t.Errorf("requests %+v, want 2 cancelled, none failed", s.Requests)
		}
		t.Logf("cancelled after %d and %d tokens; the next request's TTFT %.1f ms", recs["long1"].OutputTokens, recs["long2"].OutputTokens,
			float64(recs["after"].FirstToken-recs["after"].Intended)/1e6)
	})
}

// TestOllamaLimitsMetricsAndCache: what Ollama declares and what it does not. Its
// configuration (/api/show) is in the run facts, the per-request context among it; a prompt
// longer than that context is not refused but cut by the server, so no request fails as
// context_length, and the run's input check catches it instead (the server counted fewer
// tokens than the trace asked for: exit 3). Ollama serves no Prometheus /metrics and reports
// no cached prompt tokens, so the summary says the server prefix-cache figure is unavailable
// and has no client-side hit rate, while the trace's prefix groups did reach it.
func TestOllamaLimitsMetricsAndCache(t *testing.T) {
	srv := realserver.Start(t, realserver.Options{Parallel: 2, NumCtx: 1024})
	lines := []string{`{"id":"long","arrival_s":0,"input_tokens":1600,"output_tokens":4}`}
	for i := range 4 {
		lines = append(lines, fmt.Sprintf(`{"id":"p%d","arrival_s":%.1f,"input_tokens":700,"output_tokens":4,"hash_ids":[1,%d]}`, i, 0.5+0.3*float64(i), 10+i))
	}
	dir, code, app := realRun(t, srv, realTrace(t, lines...), "--scrape-metrics", "--prefix-block-tokens", "512")
	s := readSummaryStruct(t, dir)
	recs := realRecords(t, dir)
	long := recs["long"]
	t.Logf("exit %d; the 1,600-token prompt: failure %q, server counted %d (num_ctx %d); inputs %+v",
		code, long.Failure, long.ServerInputTokens, srv.NumCtx, s.Inputs)
	if long.Failure != metrics.FailNone || long.ServerInputTokens > srv.NumCtx || long.ServerInputTokens < srv.NumCtx/2 {
		t.Errorf("the over-context prompt: %q, server counted %d: want served, cut to about num_ctx %d", long.Failure, long.ServerInputTokens, srv.NumCtx)
	}
	if s.Requests.Failures[string(metrics.FailContextLength)] != 0 || code != exitRunFailed || s.Inputs == nil || !s.Inputs.Exceeded {
		t.Errorf("exit %d, failures %v, inputs %+v: want the input check to fail the run (exit 3)\n%s", code, s.Requests.Failures, s.Inputs, app.err.String())
	}
	for id, r := range recs {
		if id != "long" {
			t.Logf("%s (hash_ids, 700 tokens asked): server counted %d", id, r.ServerInputTokens)
		}
		if r.CacheSource != "" || r.CachedInputTokens > 0 {
			t.Errorf("%s: cached tokens %d from %q: Ollama reports none", id, r.CachedInputTokens, r.CacheSource)
		}
	}
	if p := s.ServerPrefixCache; p == nil || p.Available || !strings.Contains(p.Note, "404") {
		t.Errorf("server prefix cache %+v, want unavailable: /metrics is 404", p)
	}
	if s.PrefixCache != nil {
		t.Errorf("prefix cache %+v: no request reported cached tokens", s.PrefixCache)
	}
	if got := s.Run.Engine["ollama.model_info.llama.context_length"]; got != "4096" {
		t.Errorf("run facts: trained context %q, want 4096 from /api/show", got)
	}
	if got := s.Run.Engine["ollama.parameters"]; !strings.Contains(got, "num_ctx") || !strings.Contains(got, "1024") {
		t.Errorf("run facts: parameters %q, want num_ctx 1024", got)
	}
	t.Logf("server prefix cache: %s; %d run facts from /api/show, %d of them per tensor",
		s.ServerPrefixCache.Note, len(s.Run.Engine), realCountPrefix(s.Run.Engine, "ollama.tensors."))
}

func realCountPrefix(m map[string]string, prefix string) int {
	n := 0
	for k := range m {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// TestOllamaStallDuringPrefill: a real server's stall, seen by llmbench. Ollama's runner
// batches a new prompt's prefill (up to 512 tokens a step) with the decode of running
// sequences, so a stream in flight when a long prompt arrives gets no token during each
// prefill step. The stream's longest gap while the long prompt waits for its first token is
// at least 5x its median gap (the default stall rule's factor; whether it also passes the 20 ms
// floor depends on the machine's speed), and the summary counts every gap of the stream above
// its stall threshold.
func TestOllamaStallDuringPrefill(t *testing.T) {
	srv := realserver.Start(t, realserver.Options{Parallel: 2, NumCtx: 4096})
	// The stream outlasts the long prompt's prefill however fast the machine: 2,000 tokens
	// take several times as long as a 1,800-token prefill.
	trace := realTrace(t,
		`{"id":"stream","arrival_s":0,"input_tokens":32,"output_tokens":2000}`,
		`{"id":"long","arrival_s":0.3,"input_tokens":1800,"output_tokens":4}`)
	dir, code, app := realRun(t, srv, trace)
	s := readSummaryStruct(t, dir)
	recs := realRecords(t, dir)
	st, long := recs["stream"], recs["long"]
	if code != 0 || !st.OK() || !long.OK() {
		t.Fatalf("exit %d: stream %q, long %q\n%s", code, st.Failure, long.Failure, app.err.String())
	}
	ms := func(ns int64) float64 { return float64(ns) / 1e6 }
	threshold := int64(s.Stalls.ThresholdMs * 1e6)
	var gaps []int64
	var during, over int64
	for i := 1; i < len(st.Chunks); i++ {
		from, to := st.Chunks[i-1].T, st.Chunks[i].T
		gaps = append(gaps, to-from)
		if to-from > threshold {
			over++
		}
		if from < long.FirstToken && to > long.Sent {
			during = max(during, to-from)
		}
	}
	slices.Sort(gaps)
	median := gaps[len(gaps)/2]
	t.Logf("stream: first token %.0f ms, end %.0f; long prompt: sent %.0f, first token %.0f; stream's median gap %.2f ms, longest during the prefill %.1f ms; threshold %.1f ms (%s): %d gaps over it, summary %d stalls",
		ms(st.FirstToken), ms(st.End), ms(long.Sent), ms(long.FirstToken), ms(median), ms(during), s.Stalls.ThresholdMs, s.Stalls.ThresholdRule, over, s.Stalls.Count)
	if during < 5*median {
		t.Errorf("the stream's longest gap during the long prompt's prefill is %.1f ms, under 5x its median gap (%.2f ms)", ms(during), ms(median))
	}
	if s.Stalls.Count < over {
		t.Errorf("the summary counts %d stalls, the stream has %d gaps over the threshold", s.Stalls.Count, over)
	}
}

// realLoad is one load of a calibrate → simulate study: the measured run at a rate scale of
// the trace and the simulation of the same trace with the calibrated profile.
type realLoad struct {
	Scale               float64
	Measured, Predicted *metrics.Summary
}

// relErr is (predicted - measured) / measured.
func realRelErr(pred, meas float64) float64 { return (pred - meas) / meas }

// String is the load's figures and the prediction's errors.
func (l realLoad) String() string {
	m, p := l.Measured, l.Predicted
	return fmt.Sprintf("%.0fx: TTFT P50 %.1f ms measured, %.1f predicted (%+.0f%%); TPOT P50 %.2f vs %.2f ms (%+.0f%%); output %.1f vs %.1f tok/s (%+.0f%%)",
		l.Scale, m.Latency.TTFT.P50, p.Latency.TTFT.P50, 100*realRelErr(p.Latency.TTFT.P50, m.Latency.TTFT.P50),
		m.Latency.TPOT.P50, p.Latency.TPOT.P50, 100*realRelErr(p.Latency.TPOT.P50, m.Latency.TPOT.P50),
		m.Throughput.OutputTokensPerS, p.Throughput.OutputTokensPerS, 100*realRelErr(p.Throughput.OutputTokensPerS, m.Throughput.OutputTokensPerS))
}

// realStudyTrace writes n requests arriving as a Poisson process at rate per second, prompts
// of in[0] to in[1] tokens and outputs of out[0] to out[1] (uniform), seeded.
func realStudyTrace(t *testing.T, n int, rate float64, in, out [2]int, seed uint64) string {
	t.Helper()
	rng := rand.New(rand.NewPCG(seed, 45))
	lines := make([]string, n)
	at := 0.0
	for i := range lines {
		lines[i] = fmt.Sprintf(`{"id":"c%d","arrival_s":%.6f,"input_tokens":%d,"output_tokens":%d}`,
			i, at, in[0]+rng.IntN(in[1]-in[0]+1), out[0]+rng.IntN(out[1]-out[0]+1))
		at += rng.ExpFloat64() / rate
	}
	return realTrace(t, lines...)
}

// realCalibrate runs the trace against srv at each rate scale, calibrates on the first run
// (the model's shape from a Hugging Face config.json written from its gguf.Llama, a nominal
// "cpu" GPU whose efficiencies the fit scales), then simulates the trace at each scale with
// the fitted profile. calibrate's output goes to the test log.
func realCalibrate(t *testing.T, srv *realserver.Server, m gguf.Llama, trace string, scales []float64) []realLoad {
	t.Helper()
	dir := t.TempDir()
	cfg, gpus := filepath.Join(dir, "config.json"), filepath.Join(dir, "cpu.json")
	tokens, _, _ := gguf.Vocabulary()
	realWriteFile(t, cfg, fmt.Sprintf(`{"architectures":["LlamaForCausalLM"],"model_type":"llama","hidden_size":%d,"intermediate_size":%d,
 "num_hidden_layers":%d,"num_attention_heads":%d,"num_key_value_heads":%d,"vocab_size":%d,"max_position_embeddings":%d,"tie_word_embeddings":false}`,
		m.Embed, m.FFN, m.Layers, m.Heads, m.KVHeads, len(tokens), m.Context))
	realWriteFile(t, gpus, `{"gpus":[{"name":"cpu","mem_gb":16,"mem_bw_gbs":100,"bf16_tflops":1}]}`)
	loads := make([]realLoad, len(scales))
	var runs []string
	for i, sc := range scales {
		out, code, app := realRun(t, srv, trace, "--rate-scale", fmt.Sprint(sc))
		if code != 0 {
			t.Fatalf("run at %gx: exit %d\n%s", sc, code, app.err.String())
		}
		loads[i] = realLoad{Scale: sc, Measured: readSummaryStruct(t, out)}
		runs = append(runs, out)
	}
	prof := filepath.Join(dir, "fitted.json")
	args := []string{"calibrate", runs[0], "-o", prof, "--model", "llmbench-tiny", "--model-config", cfg, "--gpu", "cpu",
		"--profiles", gpus, "--enable-prefix-caching=false"}
	if len(runs) > 1 {
		args = append(args, "--validate", strings.Join(runs[1:], ","))
	}
	app := newTestApp(nil)
	if code := app.cli(args...); code != 0 {
		t.Fatalf("calibrate: exit %d\n%s", code, app.err)
	}
	t.Logf("calibrate:\n%s", app.out)
	for i := range loads {
		out := filepath.Join(dir, fmt.Sprintf("sim%d", i))
		app := newTestApp(nil)
		if code := app.cli("simulate", "--trace", trace, "--rate-scale", fmt.Sprint(loads[i].Scale), "--model", "llmbench-tiny",
			"--gpu", "cpu", "--profiles", prof, "--enable-prefix-caching=false", "--out", out, "--no-progress"); code != 0 {
			t.Fatalf("simulate at %gx: exit %d\n%s", loads[i].Scale, code, app.err)
		}
		loads[i].Predicted = readSummaryStruct(t, out)
	}
	return loads
}

func realWriteFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOllamaCalibrateSimulate: calibrate on a real server's run at 1 request/s (4 slots, which
// Ollama declares nowhere) and predict its own data and a run at 3x with simulate. The
// figures are logged; what holds today is asserted: the server kept up with both loads (the
// study means nothing otherwise), calibrate accepts the runs and simulate completes every
// request of both predictions. The prediction errors are the twin's open problem (issue 45);
// realCalibrate is the scaffolding a test of its accuracy builds on.
func TestOllamaCalibrateSimulate(t *testing.T) {
	if testing.Short() {
		t.Skip("two real-server runs (about 45 s) and a fit")
	}
	racebuild.Heavy(t)
	m := gguf.TinyLlama()
	srv := realserver.Start(t, realserver.Options{Model: m, Parallel: 4, NumCtx: 2048})
	// Issue 45's llama.cpp study had prompts of 256 to 1,000 tokens and outputs of 64 to 300;
	// half of that keeps the tiny model's server well below saturation at 3x on a CPU shared
	// with other work.
	trace := realStudyTrace(t, 30, 1, [2]int{128, 500}, [2]int{32, 150}, 45)
	for _, l := range realCalibrate(t, srv, m, trace, []float64{1, 3}) {
		t.Log(l)
		if r := l.Measured.Requests; r.Succeeded != r.Total {
			t.Errorf("%gx: the server kept up with %d of %d requests (failures %v): the machine is too busy for this study", l.Scale, r.Succeeded, r.Total, r.Failures)
		}
		if l.Predicted.Requests.Succeeded != l.Measured.Requests.Total {
			t.Errorf("%gx: simulated %d of %d requests", l.Scale, l.Predicted.Requests.Succeeded, l.Measured.Requests.Total)
		}
	}
}
