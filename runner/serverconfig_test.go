package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
)

// backendStub is one server's configuration endpoints, shaped as each backend answers them
// (fields and nesting from the backends' READMEs and sources, trimmed). proc stands for the
// server process: the values that each process draws anew (llama.cpp's media marker, SGLang's
// random seed and ports, timestamps) depend on it, so two stubs of one configuration and
// different proc differ only in those.
type backendStub struct {
	backend string
	spec    int // speculative tokens (0: off)
	proc    int
	// flush counts prefix-cache flushes; busy makes SGLang refuse them (requests running);
	// devMode serves vLLM's /reset_prefix_cache; slotSave allows llama.cpp's slot actions.
	flushes  atomic.Int32
	busy     bool
	devMode  bool
	slotSave bool
}

func (b *backendStub) start(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	switch b.backend {
	case "llamacpp":
		b.llamacpp(mux)
	case "vllm":
		b.vllm(mux)
	case "sglang":
		b.sglang(mux)
	case "tgi":
		mux.HandleFunc("GET /info", func(w http.ResponseWriter, _ *http.Request) {
			json.NewEncoder(w).Encode(map[string]any{"model_id": "m", "model_dtype": "torch.float16", "max_batch_total_tokens": 16000, "speculate": b.spec})
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
	}
	if b.backend != "llamacpp" && b.backend != "vllm" {
		mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"data":[{"id":"m"}]}`) })
	}
	s := httptest.NewServer(mux)
	t.Cleanup(s.Close)
	return s
}

// llamacpp serves llama-server's /props, /slots, /v1/models and the slot erase action
// (tools/server/README.md). /props shows no draft model; /slots does ("speculative").
func (b *backendStub) llamacpp(mux *http.ServeMux) {
	mux.HandleFunc("GET /props", func(w http.ResponseWriter, _ *http.Request) {
		json.NewEncoder(w).Encode(map[string]any{
			"default_generation_settings": map[string]any{"n_ctx": 8192, "params": map[string]any{
				"temperature": 0.8, "seed": 4294967295, "speculative.types": "none", "samplers": []string{"top_k", "top_p"}}},
			"total_slots": 2, "model_path": "/models/m.gguf", "chat_template": strings.Repeat("{% x %}", 200),
			"media_marker": fmt.Sprintf("<__media_%08x__>", b.proc*7919), "build_info": "b6097-9515c613",
			"modalities": map[string]any{"vision": false, "audio": false}, "endpoint_slots": true, "is_sleeping": false,
		})
	})
	mux.HandleFunc("GET /slots", func(w http.ResponseWriter, _ *http.Request) {
		var slots []any
		for id := range 2 {
			slots = append(slots, map[string]any{
				"id": id, "id_task": 100*b.proc + id, "n_ctx": 4096, "speculative": b.spec > 0, "is_processing": false,
				"params":     map[string]any{"n_predict": -1, "speculative.n_max": b.spec, "speculative.n_min": 0, "speculative.p_min": 0.75},
				"next_token": []any{map[string]any{"has_next_token": true, "n_decoded": 17 * b.proc}},
			})
		}
		json.NewEncoder(w).Encode(slots)
	})
	mux.HandleFunc("POST /slots/{id}", func(w http.ResponseWriter, r *http.Request) {
		if !b.slotSave {
			w.WriteHeader(http.StatusNotImplemented)
			io.WriteString(w, `{"error":{"code":501,"message":"This server does not support slots action. Start it with `+"`--slot-save-path`"+`","type":"not_supported_error"}}`)
			return
		}
		if r.URL.Query().Get("action") != "erase" {
			http.Error(w, "bad action", http.StatusBadRequest)
			return
		}
		b.flushes.Add(1)
		fmt.Fprintf(w, `{"id_slot":%s,"n_erased":12}`, r.PathValue("id"))
	})
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":%d,"owned_by":"llamacpp","meta":{"n_params":135000000,"n_ctx_train":8192,"n_vocab":32000}}]}`, 1760000000+b.proc)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "llamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n")
	})
}

// vllm serves vLLM's /version, /v1/models (max_model_len, root, a per-answer created and
// permission id), /metrics (cache_config_info; spec_decode counters only with speculation)
// and, in development mode, /reset_prefix_cache.
func (b *backendStub) vllm(mux *http.ServeMux) {
	mux.HandleFunc("GET /version", func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, `{"version":"0.11.0"}`) })
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, _ *http.Request) {
		fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","created":%d,"owned_by":"vllm","root":"/models/m","parent":null,"max_model_len":32768,"permission":[{"id":"modelperm-%d","created":%d}]}]}`,
			1760000000+b.proc, b.proc, 1760000000+b.proc)
	})
	mux.HandleFunc("GET /metrics", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"+
			`vllm:cache_config_info{block_size="16",cache_dtype="fp8",enable_prefix_caching="True",gpu_memory_utilization="0.9",num_gpu_blocks="27000"} 1.0`+"\n"+
			"vllm:num_requests_running{model_name=\"m\"} 0.0\n")
		if b.spec > 0 {
			io.WriteString(w, "# TYPE vllm:spec_decode_num_drafts_total counter\nvllm:spec_decode_num_drafts_total{model_name=\"m\"} 0.0\n")
		}
	})
	if b.devMode {
		mux.HandleFunc("POST /reset_prefix_cache", func(w http.ResponseWriter, _ *http.Request) { b.flushes.Add(1) })
	}
}

// sglang serves SGLang's /get_server_info (the server args with a random seed and ports each
// process draws, plus live internal_states) and /flush_cache (400 while requests run).
func (b *backendStub) sglang(mux *http.ServeMux) {
	mux.HandleFunc("GET /get_server_info", func(w http.ResponseWriter, _ *http.Request) {
		algo := any(nil)
		if b.spec > 0 {
			algo = "EAGLE"
		}
		json.NewEncoder(w).Encode(map[string]any{
			"model_path": "m", "dtype": "bfloat16", "speculative_algorithm": algo, "speculative_num_draft_tokens": b.spec,
			"random_seed": 1000 + b.proc, "port": 30000, "nccl_port": 40000 + b.proc, "max_running_requests": 256,
			"internal_states": []any{map[string]any{"last_gen_throughput": 10.5 * float64(b.proc), "memory_usage": map[string]any{"kvcache": 1.5}}},
			"version":         "0.5.4",
		})
	})
	mux.HandleFunc("GET /get_model_info", func(w http.ResponseWriter, _ *http.Request) {
		io.WriteString(w, `{"model_path":"m","tokenizer_path":"m","is_generation":true,"preferred_sampling_params":null,"weight_version":"default"}`)
	})
	mux.HandleFunc("/flush_cache", func(w http.ResponseWriter, _ *http.Request) {
		if b.busy {
			http.Error(w, "Cache not flushed. Please check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)", http.StatusBadRequest)
			return
		}
		b.flushes.Add(1)
		io.WriteString(w, "Cache flushed.\nPlease check backend logs for more details. (When there are running or waiting requests, the operation will not be performed.)\n")
	})
}

// TestFetchServerConfigPerBackend: each backend's own configuration endpoint lands in the run
// facts, so an A/B of llama.cpp with speculation on and off lists the difference.
func TestFetchServerConfigPerBackend(t *testing.T) {
	want := map[string]map[string]string{
		"llamacpp": {"llamacpp.default_generation_settings.params.speculative.types": "none", "llamacpp.total_slots": "2",
			"llamacpp.slots.speculative": "true", "llamacpp.slots.params.speculative.n_max": "4", "llamacpp.slots.count": "2",
			"llamacpp.slots.n_ctx": "4096", "models.m.meta.n_params": "135000000", "models.m.owned_by": "llamacpp"},
		"tgi": {"tgi.model_dtype": "torch.float16", "tgi.speculate": "4"},
		"sglang": {"sglang.speculative_num_draft_tokens": "4", "sglang.speculative_algorithm": "EAGLE", "sglang.dtype": "bfloat16",
			"sglang.model_info.is_generation": "true", "sglang.model_info.weight_version": "default"},
		"ollama": {"ollama.details.quantization_level": "Q4_K_M"},
		"vllm": {"server.version": "0.11.0", "vllm.cache_config.cache_dtype": "fp8", "vllm.cache_config.num_gpu_blocks": "27000",
			"vllm.spec_decode": "on", "models.m.max_model_len": "32768", "models.m.root": "/models/m"},
	}
	for backend, keys := range want {
		b := &backendStub{backend: backend, spec: 4}
		got := FetchServerConfig(context.Background(), b.start(t).URL+"/v1", "", "m", nil)
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
			if strings.HasPrefix(k, "llamacpp.slots.") && (strings.Contains(k, "id_task") || strings.Contains(k, "next_token") || strings.Contains(k, "n_predict")) {
				t.Errorf("%s: slot state %s taken as configuration", backend, k)
			}
		}
	}
}

// TestConfigDiffPerProcessValuesAndSpeculation: two servers of one configuration (two
// processes) show no configuration difference although their per-process values differ
// (those are listed as ignored); speculative decoding on one arm and off on the other is a
// difference on every backend, including llama.cpp, where only /slots shows it.
func TestConfigDiffPerProcessValuesAndSpeculation(t *testing.T) {
	specKey := map[string]string{"llamacpp": "llamacpp.slots.speculative", "vllm": "vllm.spec_decode", "sglang": "sglang.speculative_algorithm"}
	wantIgnored := map[string][]string{
		"llamacpp": {"llamacpp.media_marker"},
		"vllm":     nil,
		"sglang":   {"sglang.internal_states.0.last_gen_throughput", "sglang.nccl_port", "sglang.random_seed"},
	}
	fetch := func(b *backendStub) map[string]string {
		return FetchServerConfig(context.Background(), b.start(t).URL, "", "m", nil)
	}
	for backend, key := range specKey {
		a := fetch(&backendStub{backend: backend, spec: 4, proc: 1})
		same := fetch(&backendStub{backend: backend, spec: 4, proc: 2})
		diffs, ignored := diffConfig(a, same)
		if len(diffs) != 0 {
			t.Errorf("%s: two processes of one configuration differ in %+v", backend, diffs)
		}
		if strings.Join(ignored, " ") != strings.Join(wantIgnored[backend], " ") {
			t.Errorf("%s: ignored %v, want %v", backend, ignored, wantIgnored[backend])
		}
		off := fetch(&backendStub{backend: backend, spec: 0, proc: 3})
		found := false
		for _, d := range DiffConfig(a, off) {
			found = found || d.Key == key
			if VolatileConfigKey(d.Key) {
				t.Errorf("%s: per-process %s listed as a difference", backend, d.Key)
			}
		}
		if !found {
			t.Errorf("%s: speculation on vs off does not show as %s: %+v", backend, key, DiffConfig(a, off))
		}
	}
}

// TestScrapeLlamacppNames: llama.cpp's gauges fill running and waiting.
func TestScrapeLlamacppNames(t *testing.T) {
	m := parsePrometheus(strings.NewReader("# TYPE llamacpp:requests_processing gauge\nllamacpp:requests_processing 2\nllamacpp:requests_deferred 5\n"))
	if pick(m, "running") != 2 || pick(m, "waiting") != 5 || pick(m, "kv") != -1 {
		t.Fatalf("running %v waiting %v kv %v", pick(m, "running"), pick(m, "waiting"), pick(m, "kv"))
	}
}
