package calibrate

import (
	"context"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/internal/racebuild"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/traces"
)

// The issue-45 server: a llama.cpp llama-server on a CPU with 4 slots and a tiny Llama model,
// whose decode slows as its batch grows (3.1 ms per token alone, 7.1 ms at 3 req/s). Here the
// reference engine stands in for it, configured the way that server behaves: a tiny model, a
// CPU-like device (tens of GB/s, a TFLOP/s), prompts prefilled at ≈ 0.2 ms a token in
// llama.cpp's 2,048-token batches, a per-sequence cost in every step (sampling and the
// matrix-vector products of each slot), 4 slots, llama.cpp's wire personality, and noise on
// every step (the "realistic" preset: jitter, drift, pauses), and each step priced as the
// textbook roofline, max(memory, compute), where the fit's model combines them smoothly. The
// fit is told the model's architecture (as a user gives --model-config) and
// nothing of the device or the scheduling.

// tinyLlama is a small Llama: 4 layers, 512 wide, a 32,000-token vocabulary (45.6 M
// parameters, 91 MB in bf16).
var tinyLlama = perf.Model{Name: "tiny-llama", Layers: 4, Hidden: 512, Heads: 8, KVHeads: 8, HeadDim: 64, FFN: 1408,
	Vocab: 32000, Params: 45.6e6, ActiveParams: 45.6e6, MaxContext: 4096}

// cpuBox is the hidden device: one socket's memory bandwidth and vector FLOP/s.
var cpuBox = perf.GPU{Name: "cpu-box", MemBytes: 32e9, MemBW: 60e9, BF16FLOPS: 1e12, BWEff: 0.76, KVBWEff: 0.76, FLOPEff: 0.45,
	StepOverhead: 300 * time.Microsecond, StepOverheadPerSeq: 800 * time.Microsecond}

// cpuServer is the hidden deployment (see above).
func cpuServer(t *testing.T) refengine.Config {
	t.Helper()
	reg := perf.NewRegistry()
	if err := reg.Add([]perf.Model{tinyLlama}, []perf.GPU{cpuBox}); err != nil {
		t.Fatal(err)
	}
	noise, err := refengine.ParseNoise("realistic")
	if err != nil {
		t.Fatal(err)
	}
	return refengine.Config{Model: tinyLlama.Name, GPU: cpuBox.Name, Profiles: reg, MaxNumSeqs: 4, MaxNumBatchedTokens: 2048,
		Combine: perf.CombineMax, Wire: "llamacpp", Noise: noise, DisablePrefixCaching: true, Seed: 1}
}

// toldEngine is what the fit is told: the model's architecture, the default GPU.
func toldEngine(t *testing.T) refengine.Config {
	t.Helper()
	reg := perf.NewRegistry()
	if err := reg.Add([]perf.Model{tinyLlama}, nil); err != nil {
		t.Fatal(err)
	}
	return refengine.Config{Model: tinyLlama.Name, Profiles: reg, DisablePrefixCaching: true, Seed: 1}
}

// cpuTrace is the workload: Poisson arrivals at rate per second for span, prompts of
// 256 to 1,000 tokens and 64 to 300 output tokens, uniformly.
func cpuTrace(span time.Duration, rate float64, seed uint64) []traces.Request {
	rng := rand.New(rand.NewPCG(seed, 45))
	var reqs []traces.Request
	for at := rng.ExpFloat64() / rate; at < span.Seconds(); at += rng.ExpFloat64() / rate {
		reqs = append(reqs, traces.Request{ID: "c" + time.Duration(len(reqs)).String(), Arrival: time.Duration(at * 1e9),
			InputTokens: 256 + rng.IntN(745), OutputTokens: 64 + rng.IntN(237)})
	}
	return reqs
}

// declaredFacts are the configuration facts `llmbench run` records for the server of cfg:
// runner.FetchServerConfig against the same engine served on loopback.
func declaredFacts(t *testing.T, cfg refengine.Config) map[string]string {
	t.Helper()
	cfg.TimeScale = 1
	eng, err := refengine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(eng.Handler())
	defer func() { srv.Close(); eng.Close() }()
	facts := runner.FetchServerConfig(context.Background(), srv.URL+"/v1", "", eng.ServedModelName(), nil)
	if facts["llamacpp.total_slots"] != "4" {
		t.Fatalf("the llama.cpp personality declares total_slots %q, want 4 (facts: %v)", facts["llamacpp.total_slots"], facts)
	}
	// A real llama-server has no /version: what the engine says there of itself (its token
	// budget among others) is not what the fit may read.
	for k := range facts {
		if strings.HasPrefix(k, "server.") {
			delete(facts, k)
		}
	}
	return facts
}

// cpuOutcome is the fit's error on its own run and on the 3× run, predicted from the written
// profile alone.
type cpuOutcome struct {
	res        *Result
	own, three []Residual
}

// calibrateCPU fits the 1 req/s run (with the server's declarations in run.json when facts
// is not nil) and predicts the 3 req/s run from the profile the fit writes.
func calibrateCPU(t *testing.T, low, high string, facts map[string]string) cpuOutcome {
	t.Helper()
	if facts != nil {
		writeRunFacts(t, low, facts)
	}
	res, err := Run(Options{Engine: toldEngine(t), Fit: []string{low}, FitMaxNumSeqs: true, FitMaxNumBatchedTokens: true})
	if err != nil {
		t.Fatal(err)
	}
	data, err := FormatProfile([]perf.Model{tinyLlama}, res)
	if err != nil {
		t.Fatal(err)
	}
	cfg := profileEngine(t, data)
	cfg.Model = tinyLlama.Name
	r, err := load(high)
	if err != nil {
		t.Fatal(err)
	}
	sim, err := simulate(r, cfg, 0)
	if err != nil {
		t.Fatal(err)
	}
	return cpuOutcome{res: res, own: res.Residuals, three: residuals(r, sim)}
}

// logOutcome logs the fit and its errors.
func logOutcome(t *testing.T, what string, o cpuOutcome) {
	t.Helper()
	t.Logf("%s:\n%s", what, o.res.Table())
	for _, x := range o.three {
		t.Logf("%s, 3x load: %-10s predicted %10.2f %-5s measured %10.2f (%+.1f%%)", what, x.Quantity, x.Simulated, x.Unit, x.Measured, x.RelErr*100)
	}
}

// TestCalibrateCPUServer is issue 45's goal on the engine standing in for its llama.cpp
// server: calibrated from 60 s at 1 req/s and not told the slots, the fit reproduces its own
// TTFT and TPOT P50 within 10% and predicts 3 req/s within 15% on TTFT P50, TPOT P50 and
// throughput, with the slots read from the server's declaration and, without one, inferred.
func TestCalibrateCPUServer(t *testing.T) {
	racebuild.Heavy(t)
	hidden := cpuServer(t)
	low := serveRun(t, hidden, cpuTrace(60*time.Second, 1, 1), t.TempDir())
	high := serveRun(t, hidden, cpuTrace(60*time.Second, 3, 2), t.TempDir())
	for _, c := range []struct {
		name  string
		facts map[string]string
	}{{"declared", declaredFacts(t, hidden)}, {"inferred", nil}} {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			copyRun(t, low, dir)
			o := calibrateCPU(t, dir, high, c.facts)
			logOutcome(t, c.name, o)
			checkResiduals(t, "own data", o.own, map[string]float64{"ttft_p50": 0.10, "tpot_p50": 0.10})
			checkResiduals(t, "3x load", o.three, map[string]float64{"ttft_p50": 0.15, "tpot_p50": 0.15, "throughput": 0.15})
		})
	}
}

// copyRun copies the records file of results directory from into directory to.
func copyRun(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(from, RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(to, RecordsFile), data, 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestWarnsWhenToldTooBig: the CPU server calibrated as the default model (Llama 3.1 8B on
// an H100) decodes faster than that model's weights can be read: the fit says the model or
// device it was told is not the server's.
func TestWarnsWhenToldTooBig(t *testing.T) {
	racebuild.Heavy(t)
	low := serveRun(t, cpuServer(t), cpuTrace(30*time.Second, 1, 1), t.TempDir())
	res, err := Run(Options{Engine: refengine.Config{DisablePrefixCaching: true, Seed: 1}, Fit: []string{low}, MaxEvals: 120, FitMaxNumSeqs: true})
	if err != nil {
		t.Fatal(err)
	}
	if w := strings.Join(res.Warnings, "\n"); !strings.Contains(w, "bw_eff is at its bound of 1") || !strings.Contains(w, "llama-3.1-8b") {
		t.Errorf("no warning that the told model is too big:\n%s", res.Table())
	}
}
