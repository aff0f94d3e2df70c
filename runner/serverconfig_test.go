package runner

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// fakeBackend answers the configuration endpoint of one backend the way it does.
func fakeBackend(t *testing.T, backend string, spec int) *httptest.Server {
	mux := http.NewServeMux()
	switch backend {
	case "llamacpp":
		mux.HandleFunc("GET /props", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{
				"default_generation_settings": map[string]any{"n_ctx": 8192, "params": map[string]any{"speculative.n_max": spec, "speculative.n_min": 0}},
				"total_slots":                 4, "chat_template": strings.Repeat("{% x %}", 200), "build_info": "b6097-9515c613",
			})
		})
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "llamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n")
		})
	case "tgi":
		mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"model_id": "m", "model_dtype": "torch.float16", "max_batch_total_tokens": 16000, "speculate": spec})
		})
	case "sglang":
		mux.HandleFunc("GET /get_server_info", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"speculative_algorithm": "EAGLE", "speculative_num_draft_tokens": spec, "dtype": "bfloat16"})
		})
	case "ollama":
		mux.HandleFunc("POST /api/show", func(w http.ResponseWriter, r *http.Request) {
			var q struct{ Model string }
			json.NewDecoder(r.Body).Decode(&q)
			if q.Model != "m" {
				http.Error(w, "no such model", http.StatusNotFound)
				return
			}
			json.NewEncoder(w).Encode(map[string]any{"details": map[string]any{"quantization_level": "Q4_K_M"}})
		})
	case "vllm":
		mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"version":"0.11.0"}`) })
		mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
			io.WriteString(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"+
				`vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True",gpu_memory_utilization="0.9",num_gpu_blocks="27000"} 1.0`+"\n")
		})
	}
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"data":[{"id":"m"}]}`) })
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// TestFetchServerConfigPerBackend: each backend's own configuration endpoint lands in the run
// facts, so an A/B of llama.cpp with speculation on and off lists the difference.
func TestFetchServerConfigPerBackend(t *testing.T) {
	want := map[string]map[string]string{
		"llamacpp": {"llamacpp.default_generation_settings.params.speculative.n_max": "4", "llamacpp.total_slots": "4"},
		"tgi":      {"tgi.model_dtype": "torch.float16", "tgi.speculate": "4"},
		"sglang":   {"sglang.speculative_num_draft_tokens": "4", "sglang.dtype": "bfloat16"},
		"ollama":   {"ollama.details.quantization_level": "Q4_K_M"},
		"vllm":     {"server.version": "0.11.0", "vllm.cache_config.cache_dtype": "fp8", "vllm.cache_config.num_gpu_blocks": "27000"},
	}
	for backend, keys := range want {
		got := FetchServerConfig(context.Background(), fakeBackend(t, backend, 4).URL+"/v1", "", "m")
		for k, v := range keys {
			if got[k] != v {
				t.Errorf("%s: %s = %q, want %q (facts %v)", backend, k, got[k], v, got)
			}
		}
		if got["models"] != "m" {
			t.Errorf("%s: models %q", backend, got["models"])
		}
		for k, v := range got {
			if len(v) > maxConfigValue+len("…") {
				t.Errorf("%s: %s is %d bytes long", backend, k, len(v))
			}
		}
	}
	on := FetchServerConfig(context.Background(), fakeBackend(t, "llamacpp", 16).URL, "", "m")
	off := FetchServerConfig(context.Background(), fakeBackend(t, "llamacpp", 0).URL, "", "m")
	k := "llamacpp.default_generation_settings.params.speculative.n_max"
	if on[k] == off[k] {
		t.Fatalf("spec on/off do not differ: %q", on[k])
	}
}

// TestScrapeLlamacppNames: llama.cpp's gauges fill running and waiting.
func TestScrapeLlamacppNames(t *testing.T) {
	m := parsePrometheus(strings.NewReader("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n"))
	if pick(m, "running") != 2 || pick(m, "waiting") != 5 || pick(m, "kv") != -1 {
		t.Fatalf("running %v waiting %v kv %v", pick(m, "running"), pick(m, "waiting"), pick(m, "kv"))
	}
}
