package usecase

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/refengine/perf"
)

// TestCalibrateModelConfigWithoutCobra fits a simulated run from CalibrateOptions alone, with
// the model's architecture from a Hugging Face config.json: the written profile holds that
// model and the fitted GPU, stdout says how to use it; a missing config.json is named.
func TestCalibrateModelConfigWithoutCobra(t *testing.T) {
	dir := t.TempDir()
	cfgPath := filepath.Join(dir, "config.json")
	if err := os.WriteFile(cfgPath, []byte(`{"architectures": ["LlamaForCausalLM"], "hidden_size": 4096, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "model_type": "llama", "num_attention_heads": 32, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "rope_theta": 500000.0, "tie_word_embeddings": false, "vocab_size": 128256}`), 0o644); err != nil {
		t.Fatal(err)
	}
	sim := defaultSimulate(t)
	sim.MaxRequests = 0
	env, _, errb := testEnv()
	if code, err := Simulate(context.Background(), env, sim); code != ExitOK || err != nil {
		t.Fatalf("simulate: exit %d, %v\n%s", code, err, errb)
	}
	eng := defaultEngine()
	eng.Model = "my-8b"
	o := &CalibrateOptions{Fit: []string{sim.Output.Out}, Out: filepath.Join(dir, "p.json"), ModelConfig: cfgPath, MaxEvals: 40, Engine: eng}
	env, out, errb := testEnv()
	if err := Calibrate(env, o); err != nil {
		t.Fatalf("calibrate: %v\n%s", err, errb)
	}
	if !strings.Contains(out.String(), "--model my-8b --gpu h100-sxm --profiles "+o.Out) {
		t.Errorf("stdout does not say how to use the profile:\n%s", out)
	}
	data, err := os.ReadFile(o.Out)
	if err != nil {
		t.Fatal(err)
	}
	models, gpus, err := perf.ParseProfiles(data, o.Out)
	if err != nil || len(models) != 1 || models[0].Name != "my-8b" || len(gpus) != 1 || gpus[0].StepOverhead <= 0 {
		t.Fatalf("profile: models %+v gpus %+v err %v", models, gpus, err)
	}
	o.ModelConfig = filepath.Join(dir, "missing.json")
	if err := Calibrate(env, o); err == nil || !strings.Contains(err.Error(), "--model-config") {
		t.Errorf("a missing config.json: %v", err)
	}
}
