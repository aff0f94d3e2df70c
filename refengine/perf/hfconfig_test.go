package perf

import (
	"math"
	"strings"
	"testing"
)

// llama31_8B is meta-llama/Llama-3.1-8B-Instruct's config.json (fields as published).
const llama31_8B = `{
  "architectures": ["LlamaForCausalLM"], "attention_bias": false, "attention_dropout": 0.0,
  "bos_token_id": 128000, "eos_token_id": [128001, 128008, 128009], "hidden_act": "silu",
  "hidden_size": 4096, "initializer_range": 0.02, "intermediate_size": 14336,
  "max_position_embeddings": 131072, "mlp_bias": false, "model_type": "llama",
  "num_attention_heads": 32, "num_hidden_layers": 32, "num_key_value_heads": 8,
  "pretraining_tp": 1, "rms_norm_eps": 1e-05,
  "rope_scaling": {"factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
    "original_max_position_embeddings": 8192, "rope_type": "llama3"},
  "rope_theta": 500000.0, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.43.0.dev0", "use_cache": true, "vocab_size": 128256
}`

// mixtral8x7B is mistralai/Mixtral-8x7B-v0.1's config.json.
const mixtral8x7B = `{
  "architectures": ["MixtralForCausalLM"], "attention_dropout": 0.0, "bos_token_id": 1,
  "eos_token_id": 2, "hidden_act": "silu", "hidden_size": 4096, "initializer_range": 0.02,
  "intermediate_size": 14336, "max_position_embeddings": 32768, "model_type": "mixtral",
  "num_attention_heads": 32, "num_experts_per_tok": 2, "num_hidden_layers": 32,
  "num_key_value_heads": 8, "num_local_experts": 8, "output_router_logits": false,
  "rms_norm_eps": 1e-05, "rope_theta": 1000000.0, "router_aux_loss_coef": 0.02,
  "sliding_window": null, "tie_word_embeddings": false, "torch_dtype": "bfloat16",
  "transformers_version": "4.36.0.dev0", "use_cache": true, "vocab_size": 32000
}`

func TestParseHFConfig(t *testing.T) {
	for _, c := range []struct {
		data, builtin string
	}{{llama31_8B, "llama-3.1-8b"}, {mixtral8x7B, "mixtral-8x7b"}} {
		m, err := ParseHFConfig([]byte(c.data), "config.json", "x")
		if err != nil {
			t.Fatal(err)
		}
		want, _ := LookupModel(c.builtin)
		if m.Layers != want.Layers || m.Hidden != want.Hidden || m.Heads != want.Heads || m.KVHeads != want.KVHeads ||
			m.HeadDim != want.HeadDim || m.FFN != want.FFN || m.Vocab != want.Vocab || m.MaxContext != want.MaxContext ||
			m.Experts != want.Experts || m.ActiveExperts != want.ActiveExperts {
			t.Errorf("%s: shapes %+v, built-in %+v", c.builtin, m, want)
		}
		// The model cards' parameter counts, to their three significant digits.
		if math.Abs(m.Params-want.Params)/want.Params > 0.005 || math.Abs(m.ActiveParams-want.ActiveParams)/want.ActiveParams > 0.005 {
			t.Errorf("%s: params %.4g (active %.4g), model card %.4g (%.4g)", c.builtin, m.Params, m.ActiveParams, want.Params, want.ActiveParams)
		}
	}
	for _, c := range []struct{ data, want string }{
		{"{\n \"hidden_size\": 4096,,\n}", "config.json:2:"},
		{`{"hidden_size": "big"}`, `field "hidden_size"`},
		{`{"model_type": "bert"}`, `"num_hidden_layers" must be a positive integer`},
		{strings.Replace(llama31_8B, `"num_key_value_heads": 8`, `"num_key_value_heads": 64`, 1), `"num_key_value_heads" (64)`},
		{strings.Replace(mixtral8x7B, `"num_experts_per_tok": 2`, `"num_experts_per_tok": 9`, 1), `"num_experts_per_tok" (9)`},
	} {
		if _, err := ParseHFConfig([]byte(c.data), "config.json", "x"); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("error %v, want it to contain %q", err, c.want)
		}
	}
}

func FuzzParseHFConfig(f *testing.F) {
	f.Add([]byte(llama31_8B))
	f.Add([]byte(mixtral8x7B))
	f.Add([]byte(`{"num_hidden_layers": 1, "hidden_size": 16777216, "num_attention_heads": 1, "intermediate_size": 16777216, "vocab_size": 16777216, "max_position_embeddings": 1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		m, err := ParseHFConfig(data, "fuzz.json", "fuzz")
		if err != nil {
			return
		}
		if err := m.Validate(); err != nil {
			t.Fatalf("accepted an invalid model: %v", err)
		}
		if !(m.Params > 0) || m.ActiveParams > m.Params {
			t.Fatalf("params %g active %g", m.Params, m.ActiveParams)
		}
	})
}
