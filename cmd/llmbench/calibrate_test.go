package main

import (
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/llmbench/llmbench/calibrate"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/refengine/perf"
)

// TestCalibrateRecoversHiddenProfile is issue 22's done-when check for calibrate: the embedded
// engine (what `llmbench serve` runs) with a hidden GPU profile serves two loads of one trace
// over loopback HTTP, time-scaled; calibrate on one load recovers each hidden constant within
// 5% and predicts the other load's TTFT and E2E P50/P90 within 10%.
func TestCalibrateRecoversHiddenProfile(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two time-scaled HTTP runs and a fit")
	}
	quietMachine(t)
	dir := t.TempDir()
	g, _ := perf.LookupGPU("h100")
	g.BWEff, g.FLOPEff, g.StepOverhead = 0.60, 0.50, 4*time.Millisecond
	g.KVBWEff = g.BWEff * perf.DefaultKVBWEff / perf.DefaultBWEff
	prof, err := perf.FormatProfiles(nil, []perf.GPU{g})
	if err != nil {
		t.Fatal(err)
	}
	hidden := filepath.Join(dir, "hidden.json")
	if err := os.WriteFile(hidden, prof, 0o644); err != nil {
		t.Fatal(err)
	}
	// 120 requests arriving at 6 per second, prompts of 64 to 6,064 tokens and 16 to 616 output
	// tokens: enough spread in batch and KV cache to separate the three constants.
	rng := rand.New(rand.NewPCG(22, 1))
	var b strings.Builder
	var at float64
	for i := range 120 {
		at += rng.ExpFloat64() / 6
		fmt.Fprintf(&b, `{"id":"q%d","arrival_s":%.6f,"input_tokens":%d,"output_tokens":%d}`+"\n", i, at, 64+rng.IntN(6000), 16+rng.IntN(600))
	}
	trace := filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	high, low := filepath.Join(dir, "high"), filepath.Join(dir, "low")
	for _, r := range []struct {
		out, rate string
	}{{high, "1"}, {low, "0.5"}} {
		app := newTestApp(nil)
		if code := app.cli("run", "--trace", trace, "--out", r.out, "--rate-scale", r.rate, "--time-scale", "4", "--no-progress",
			"--profiles", hidden, "--enable-prefix-caching=false", "--engine-seed", "1"); code != 0 {
			t.Fatalf("run at rate scale %s: exit %d\n%s", r.rate, code, app.err)
		}
	}
	out := filepath.Join(dir, "fitted.json")
	app := newTestApp(nil)
	if code := app.cli("calibrate", high, "-o", out, "--validate", low, "--enable-prefix-caching=false"); code != 0 {
		t.Fatalf("calibrate: exit %d\n%s", code, app.err)
	}
	t.Log("\n" + app.out.String())
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	_, gpus, err := perf.ParseProfiles(data, out)
	if err != nil || len(gpus) != 1 {
		t.Fatalf("fitted profile: %v %v", gpus, err)
	}
	f := gpus[0]
	for _, c := range []struct {
		name      string
		got, want float64
	}{{"bw_eff", f.BWEff, g.BWEff}, {"flop_eff", f.FLOPEff, g.FLOPEff},
		{"step overhead", f.StepOverhead.Seconds(), g.StepOverhead.Seconds()}} {
		if math.Abs(c.got-c.want)/c.want > 0.05 {
			t.Errorf("%s: fitted %.4g, hidden %.4g (more than 5%% off)", c.name, c.got, c.want)
		}
	}
	// The held-out load's predicted TTFT and E2E P50/P90.
	res, err := calibrate.Run(calibrate.Options{Engine: mustEngineConfig(t, "--profiles", out, "--enable-prefix-caching=false"),
		Fit: []string{high}, Validate: []string{low}, MaxEvals: 1})
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.Marshal(res.Runs)
	for _, rf := range res.Runs {
		if !rf.Held {
			continue
		}
		for _, s := range rf.Stats {
			if (s.Metric == "ttft" || s.Metric == "e2e") && s.Quantile < 0.95 && math.Abs(s.RelErr) > 0.10 {
				t.Errorf("held-out %s P%.0f: simulated %.1f ms, measured %.1f ms (%+.1f%%)", s.Metric, s.Quantile*100, s.Simulated, s.Measured, s.RelErr*100)
			}
		}
	}
	if t.Failed() {
		t.Logf("runs: %s", js)
	}
}

// mustEngineConfig builds the engine configuration the engine flags give.
func mustEngineConfig(t *testing.T, args ...string) refengine.Config {
	t.Helper()
	fs := pflag.NewFlagSet("engine", pflag.ContinueOnError)
	f := addEngineFlags(fs)
	if err := fs.Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config()
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// TestCalibrateModelConfig: with --model-config the architecture comes from a Hugging Face
// config.json, goes into the written profile with the GPU, and --profiles alone then serves
// that model.
func TestCalibrateModelConfig(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256}`), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	app := newTestApp(nil)
	if code := app.cli("simulate", "--trace", chatSmall, "--out", runDir); code != 0 {
		t.Fatalf("simulate: exit %d\n%s", code, app.err)
	}
	prof := filepath.Join(dir, "p.json")
	app = newTestApp(nil)
	if code := app.cli("calibrate", runDir, "-o", prof, "--model", "my-8b", "--model-config", cfgPath, "--max-evals", "40"); code != 0 {
		t.Fatalf("calibrate: exit %d\n%s", code, app.err)
	}
	if !strings.Contains(app.out.String(), "--model my-8b --gpu h100-sxm --profiles") {
		t.Errorf("calibrate output does not say how to use the profile:\n%s", app.out)
	}
	data, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	models, gpus, err := perf.ParseProfiles(data, prof)
	if err != nil || len(models) != 1 || models[0].Name != "my-8b" || len(gpus) != 1 || gpus[0].StepOverhead <= 0 {
		t.Fatalf("profile %s: models %+v gpus %+v err %v", prof, models, gpus, err)
	}
	if c, err := calibrate.ParseProfileCalibration(data, prof); err != nil || c == nil || c.GPU != gpus[0].Name || len(c.Residuals) == 0 {
		t.Errorf("profile %s: calibration block %+v, %v; want the GPU's and the fit's residuals", prof, c, err)
	}
	if !strings.Contains(app.out.String(), "residuals (fit vs data on the fitted runs):") {
		t.Errorf("calibrate output has no residuals:\n%s", app.out)
	}
	app = newTestApp(nil)
	if code := app.cli("simulate", "--trace", chatSmall, "--out", filepath.Join(dir, "again"), "--model", "my-8b", "--profiles", prof); code != 0 {
		t.Fatalf("simulate with the calibrated profile: exit %d\n%s", code, app.err)
	}
	app = newTestApp(nil)
	if code := app.cli("calibrate", runDir, "-o", prof, "--model-config", filepath.Join(dir, "missing.json")); code == 0 || !strings.Contains(app.err.String(), "--model-config") {
		t.Errorf("a missing config.json: exit %d, stderr %s", code, app.err)
	}
}
