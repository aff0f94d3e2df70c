package perf

import (
	"os"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestBuiltinProfiles(t *testing.T) {
	// Numbers from the models' config.json and the GPUs' data sheets (see the package doc).
	wantModels := map[string]Model{
		"llama-3.1-8b": {Name: "llama-3.1-8b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
			FFN: 14336, Vocab: 128256, Params: 8.03e9, ActiveParams: 8.03e9, MaxContext: 131072},
		"llama-3.1-70b": {Name: "llama-3.1-70b", Layers: 80, Hidden: 8192, Heads: 64, KVHeads: 8, HeadDim: 128,
			FFN: 28672, Vocab: 128256, Params: 70.6e9, ActiveParams: 70.6e9, MaxContext: 131072},
		"mixtral-8x7b": {Name: "mixtral-8x7b", Layers: 32, Hidden: 4096, Heads: 32, KVHeads: 8, HeadDim: 128,
			FFN: 14336, Vocab: 32000, Params: 46.7e9, ActiveParams: 12.9e9, Experts: 8, ActiveExperts: 2,
			MaxContext: 32768},
	}
	for name, want := range wantModels {
		got, err := LookupModel(name)
		if err != nil || got != want {
			t.Errorf("LookupModel(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	wantGPUs := map[string]GPU{
		"a100-80gb": {Name: "a100-80gb", MemBytes: 80e9, MemBW: 2.039e12, BF16FLOPS: 312e12, INT8OPS: 624e12, LinkBW: 300e9, HostBW: 32e9},
		"h100-sxm": {Name: "h100-sxm", MemBytes: 80e9, MemBW: 3.35e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12,
			INT8OPS: 1979e12, LinkBW: 450e9, HostBW: 64e9},
		"h200": {Name: "h200", MemBytes: 141e9, MemBW: 4.8e12, BF16FLOPS: 989e12, FP8FLOPS: 1979e12,
			INT8OPS: 1979e12, LinkBW: 450e9, HostBW: 64e9},
	}
	for name, want := range wantGPUs {
		got, err := LookupGPU(name)
		if err != nil || got != want {
			t.Errorf("LookupGPU(%q) = %+v, %v; want %+v", name, got, err, want)
		}
	}
	// Dense parameter counts agree with the architecture to within 1%: embeddings + layers.
	for _, name := range []string{"llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b"} {
		m := mustModel(t, name)
		attn := m.Hidden*m.Heads*m.HeadDim*2 + m.Hidden*m.KVHeads*m.HeadDim*2
		mlp := 3 * m.Hidden * m.FFN
		emb := m.Vocab * m.Hidden
		if name != "llama-3.2-1b" {
			emb *= 2 // untied input and output embeddings
		}
		arch := float64(m.Layers*(attn+mlp) + emb)
		if d := arch/m.Params - 1; d > 0.01 || d < -0.01 {
			t.Errorf("%s: architecture gives %.3g params, profile says %.3g", name, arch, m.Params)
		}
	}
	// Mixtral: shared + 8 experts = total, shared + 2 experts = active.
	m := mustModel(t, "mixtral-8x7b")
	expert := float64(m.Layers * 3 * m.Hidden * m.FFN)
	if d := (m.Params-m.ActiveParams)/(6*expert) - 1; d > 0.01 || d < -0.01 {
		t.Errorf("mixtral: per-expert params %.3g from profile, %.3g from architecture", (m.Params-m.ActiveParams)/6, expert)
	}
}

func TestBuiltinProfilesValid(t *testing.T) {
	for _, m := range builtinModels {
		if err := m.Validate(); err != nil || normalizeName(m.Name) != m.Name {
			t.Errorf("built-in model %q: %v (names must be normalized)", m.Name, err)
		}
	}
	for _, g := range builtinGPUs {
		if err := g.Validate(); err != nil || normalizeName(g.Name) != g.Name {
			t.Errorf("built-in gpu %q: %v (names must be normalized)", g.Name, err)
		}
	}
	reg := NewRegistry()
	for alias, target := range builtinModelAliases {
		if _, ok := reg.models[target]; !ok || normalizeName(alias) != alias {
			t.Errorf("model alias %q -> %q: target missing or alias not normalized", alias, target)
		}
	}
	for alias, target := range builtinGPUAliases {
		if _, ok := reg.gpus[target]; !ok || normalizeName(alias) != alias {
			t.Errorf("gpu alias %q -> %q: target missing or alias not normalized", alias, target)
		}
	}
}

func TestLookupAliases(t *testing.T) {
	for alias, want := range map[string]string{
		"LLAMA-3.1-8B":                         "llama-3.1-8b",
		"meta-llama/Llama-3.1-8B-Instruct":     "llama-3.1-8b",
		"meta-llama/Meta-Llama-3.1-70B":        "llama-3.1-70b",
		"llama3.1-70b":                         "llama-3.1-70b",
		"mistralai/Mixtral-8x7B-Instruct-v0.1": "mixtral-8x7b",
		"Mixtral":                              "mixtral-8x7b",
		"llama_3.2_1b":                         "llama-3.2-1b",
	} {
		m, err := LookupModel(alias)
		if err != nil || m.Name != want {
			t.Errorf("LookupModel(%q) = %q, %v; want %q", alias, m.Name, err, want)
		}
	}
	for alias, want := range map[string]string{"A100": "a100-80gb", "h100": "h100-sxm", "H100-SXM": "h100-sxm",
		"h200": "h200", "H200-141GB": "h200"} {
		g, err := LookupGPU(alias)
		if err != nil || g.Name != want {
			t.Errorf("LookupGPU(%q) = %q, %v; want %q", alias, g.Name, err, want)
		}
	}
	_, err := LookupModel("gpt-5")
	if err == nil || !strings.Contains(err.Error(), "llama-3.1-8b") || !strings.Contains(err.Error(), "mixtral-8x7b") {
		t.Errorf("unknown model error should list valid names: %v", err)
	}
	_, err = LookupGPU("tpu")
	if err == nil || !strings.Contains(err.Error(), "h100-sxm, h200") {
		t.Errorf("unknown gpu error should list valid names: %v", err)
	}
	if !slices.Equal(GPUNames(), []string{"a100-80gb", "h100-sxm", "h200"}) {
		t.Errorf("GPUNames = %v", GPUNames())
	}
	if !slices.Contains(ModelNames(), "llama-3.1-70b") || !slices.IsSorted(ModelNames()) {
		t.Errorf("ModelNames = %v", ModelNames())
	}
}

const sampleProfiles = `{
  "models": [
    {"name": "my-13b", "layers": 40, "hidden": 5120, "heads": 40, "kv_heads": 40, "head_dim": 128,
     "ffn": 13824, "vocab": 32000, "params": 13.0e9, "max_context": 4096},
    {"name": "llama-3.1-8b", "layers": 32, "hidden": 4096, "heads": 32, "kv_heads": 8, "head_dim": 128,
     "ffn": 14336, "vocab": 128256, "params": 8.0e9, "max_context": 8192}
  ],
  "gpus": [
    {"name": "L40S", "mem_gb": 48, "mem_bw_gbs": 864, "bf16_tflops": 362, "fp8_tflops": 733,
     "int8_tops": 733, "link_gbs": 32},
    {"name": "h100", "mem_gb": 94, "mem_bw_gbs": 3900, "bf16_tflops": 989, "link_gbs": 450,
     "bw_eff": 0.8, "flop_eff": 0.7}
  ]
}`

func TestParseProfilesAndRegistry(t *testing.T) {
	models, gpus, err := ParseProfiles([]byte(sampleProfiles), "profiles.json")
	if err != nil {
		t.Fatal(err)
	}
	if len(models) != 2 || len(gpus) != 2 {
		t.Fatalf("got %d models, %d gpus", len(models), len(gpus))
	}
	if models[0].ActiveParams != 13e9 || gpus[0].MemBytes != 48e9 || gpus[0].MemBW != 864e9 ||
		gpus[0].FP8FLOPS != 733e12 || gpus[0].LinkBW != 32e9 || gpus[1].FP8FLOPS != 0 {
		t.Fatalf("unit conversion wrong: %+v %+v", models[0], gpus[0])
	}
	reg := NewRegistry()
	if err := reg.LoadJSON([]byte(sampleProfiles), "profiles.json"); err != nil {
		t.Fatal(err)
	}
	if m, err := reg.Model("My-13B"); err != nil || m.Layers != 40 {
		t.Errorf("new model: %+v %v", m, err)
	}
	if m, _ := reg.Model("meta-llama/Llama-3.1-8B-Instruct"); m.Params != 8e9 {
		t.Errorf("override of llama-3.1-8b not visible through its alias: %+v", m)
	}
	// A profile named like an alias replaces what the alias pointed at.
	if g, _ := reg.GPU("h100"); g.MemBytes != 94e9 || g.BWEff != 0.8 || g.FLOPEff != 0.7 {
		t.Errorf("h100 override: %+v", g)
	}
	if g, _ := reg.GPU("h100-sxm"); g.MemBytes != 80e9 {
		t.Errorf("h100-sxm should be unchanged: %+v", g)
	}
	if g, _ := reg.GPU("l40s"); g.Name != "l40s" {
		t.Errorf("l40s: %+v", g)
	}
	// The package-level table is untouched.
	if m, _ := LookupModel("llama-3.1-8b"); m.Params != 8.03e9 {
		t.Errorf("built-in profile mutated: %+v", m)
	}
	if _, err := LookupModel("my-13b"); err == nil {
		t.Error("built-in registry should not know my-13b")
	}
	var empty Registry
	if _, err := empty.Model("x"); err == nil {
		t.Error("zero Registry should be empty")
	}
}

func TestParseProfilesErrors(t *testing.T) {
	for _, tc := range []struct{ data, want string }{
		{`{"models": [{"name": "x", "layer": 3}]}`, `unknown field "layer"`},
		{"{\n  \"models\": [\n    {\"name\": \"x\",,}\n  ]\n}", "p.json:3:"},
		{`{"models": [{"name": "x", "layers": 1, "hidden": 1, "heads": 2, "kv_heads": 1, "head_dim": 1, "ffn": 1, "vocab": 1, "params": 1, "max_context": 1},
		               {"name": "X", "layers": 1, "hidden": 1, "heads": 2, "kv_heads": 1, "head_dim": 1, "ffn": 1, "vocab": 1, "params": 1, "max_context": 1}]}`, "models[1]: duplicate"},
		{`{"models": [{"name": "x", "layers": 0}]}`, "models[0]: model x: layers must be > 0"},
		{`{"models": [{"layers": 1}]}`, "models[0]: name is required"},
		{`{"models": [{"name": "x", "layers": 1, "hidden": 1, "heads": 3, "kv_heads": 2, "head_dim": 1, "ffn": 1, "vocab": 1, "params": 1, "max_context": 1}]}`, "multiple of kv_heads"},
		{`{"models": [{"name": "moe", "layers": 1, "hidden": 1, "heads": 1, "kv_heads": 1, "head_dim": 1, "ffn": 1, "vocab": 1, "params": 10, "active_params": 5, "experts": 4, "active_experts": 5, "max_context": 1}]}`, "active_experts"},
		{`{"gpus": [{"name": "g", "mem_gb": 80}]}`, "gpus[0]: gpu g: memory bandwidth must be > 0"},
		{`{"gpus": [{"name": "g", "mem_gb": 80, "mem_bw_gbs": 1, "bf16_tflops": 1, "fp8_tflops": -1}]}`, "fp8"},
		{`{"gpus": [{"name": "g", "mem_gb": 1e308, "mem_bw_gbs": 1, "bf16_tflops": 1}]}`, "memory must be > 0"},
		{`{"gpus": [{"name": "g", "mem_gb": 1, "mem_bw_gbs": 1, "bf16_tflops": 1, "bw_eff": 1.2}]}`, "bw_eff"},
		{`[]`, "want {"},
		{"{\"models\": [{\"name\": \"x\",\n \"layers\": 3.5}]}", `p.json:2:`},
		{`{"models": [{"name": "x", "layers": "32"}]}`, `"models.layers" must be an integer, not string`},
		{`{"gpus": {"name": "g"}}`, `"gpus" must be an array`},
		{`{} {}`, "trailing data"},
		{``, "p.json"},
	} {
		_, _, err := ParseProfiles([]byte(tc.data), "p.json")
		if err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), "p.json") {
			t.Errorf("ParseProfiles(%q): want error containing %q, got %v", tc.data, tc.want, err)
		}
	}
}

func TestExampleProfileFile(t *testing.T) {
	data, err := os.ReadFile("testdata/example-profiles.json")
	if err != nil {
		t.Fatal(err)
	}
	reg := NewRegistry()
	if err := reg.LoadJSON(data, "example-profiles.json"); err != nil {
		t.Fatal(err)
	}
	m, err := reg.Model("Qwen/Qwen2.5-7B")
	if err != nil {
		t.Fatal(err)
	}
	g, err := reg.GPU("L40S")
	if err != nil {
		t.Fatal(err)
	}
	r := mustNew(t, Config{Model: m, GPU: g, WeightDtype: "fp8"})
	if r.LinearPeakFormat() != "fp8" || r.KVBytesPerToken() != 2*28*4*128*2 {
		t.Errorf("qwen2.5-7b on l40s: %s", r)
	}
}

func FuzzParseProfiles(f *testing.F) {
	f.Add([]byte(sampleProfiles))
	if data, err := os.ReadFile("testdata/example-profiles.json"); err == nil {
		f.Add(data)
	}
	f.Add([]byte(`{"models": [], "gpus": []}`))
	f.Add([]byte(`{"models": [{"name": "moe", "layers": 2, "hidden": 8, "heads": 2, "kv_heads": 1, "head_dim": 4, "ffn": 16, "vocab": 10, "params": 100, "active_params": 40, "experts": 4, "active_experts": 1, "max_context": 64}]}`))
	f.Add([]byte(`{"gpus": [{"name": "g", "mem_gb": 1, "mem_bw_gbs": 1, "bf16_tflops": 1}]}`))
	f.Add([]byte(`{"gpus": [{"name": "g", "mem_gb": 80, "mem_bw_gbs": 3350, "bf16_tflops": 989, "step_overhead_per_seq_us": 18.4}]}`))
	f.Add([]byte("{\n\"models\": [{\"name\": 1}]}"))
	f.Fuzz(func(t *testing.T, data []byte) {
		models, gpus, err := ParseProfiles(data, "fuzz.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.json") {
				t.Fatalf("error does not name the input: %v", err)
			}
			return
		}
		reg := NewRegistry()
		if err := reg.Add(models, gpus); err != nil {
			t.Fatalf("parsed profiles rejected by Registry.Add: %v", err)
		}
		// Every parsed pair either prices steps with finite, non-negative times or is rejected
		// by New with an error.
		for _, m := range models {
			for _, g := range gpus {
				r, err := New(Config{Model: m, GPU: g})
				if err != nil {
					continue
				}
				var w Work
				w.Add(3, 5)
				b := r.Step(w)
				if b.Total < 0 || b.Compute < 0 || b.Memory < 0 || r.NumBlocks() < 1 {
					t.Fatalf("%s on %s: bad step %+v, blocks %d", m.Name, g.Name, b, r.NumBlocks())
				}
			}
		}
	})
}

// A profile's host time per sequence is read, written back, applied when Config leaves its own
// at 0, and refused out of range.
func TestProfileStepOverheadPerSeq(t *testing.T) {
	data := []byte(`{"gpus": [{"name": "h100-vllm", "mem_gb": 80, "mem_bw_gbs": 3350, "bf16_tflops": 989,
		"fp8_tflops": 1979, "link_gbs": 450, "step_overhead_per_seq_us": 18.4}]}`)
	_, gpus, err := ParseProfiles(data, "p.json")
	if err != nil {
		t.Fatal(err)
	}
	if gpus[0].StepOverheadPerSeq != 18400*time.Nanosecond {
		t.Fatalf("parsed %v, want 18.4µs", gpus[0].StepOverheadPerSeq)
	}
	out, err := FormatProfiles(nil, gpus)
	if err != nil {
		t.Fatal(err)
	}
	if _, again, err := ParseProfiles(out, "out.json"); err != nil || again[0].StepOverheadPerSeq != gpus[0].StepOverheadPerSeq {
		t.Fatalf("round trip: %v, %v", err, again)
	}
	m := mustModel(t, "llama-3.1-8b")
	if c := mustNew(t, Config{Model: m, GPU: gpus[0]}).Config(); c.StepOverheadPerSeq != 18400*time.Nanosecond {
		t.Errorf("profile's host time not applied: %v", c.StepOverheadPerSeq)
	}
	if c := mustNew(t, Config{Model: m, GPU: gpus[0], StepOverheadPerSeq: time.Microsecond}).Config(); c.StepOverheadPerSeq != time.Microsecond {
		t.Errorf("Config's host time should win: %v", c.StepOverheadPerSeq)
	}
	for _, bad := range []string{"-1", "1e6"} {
		in := []byte(`{"gpus": [{"name": "g", "mem_gb": 1, "mem_bw_gbs": 1, "bf16_tflops": 1, "step_overhead_per_seq_us": ` + bad + `}]}`)
		if _, _, err := ParseProfiles(in, "bad.json"); err == nil || !strings.Contains(err.Error(), "step_overhead_per_seq_us") {
			t.Errorf("step_overhead_per_seq_us %s: %v", bad, err)
		}
	}
}
