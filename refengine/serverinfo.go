package refengine

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/llmbench/llmbench/refengine/perf"
)

// The configuration endpoints of the wire personalities (issue 45): what each real server
// declares of itself, so that a client reading the server's limits (llmbench's run facts,
// calibrate) can be tested against the engine. Each personality serves its own server's
// endpoints and no other's, with the engine's configuration in that server's fields; /version
// (the engine's own) stays served by every personality.
//
//   - llama.cpp (tools/server/README.md "GET /props", "GET /slots"; ggml-org/llama.cpp):
//     /props is the global properties: default_generation_settings (a slot object), total_slots
//     (--parallel), model_path, chat_template, modalities, bos/eos tokens, build_info,
//     is_sleeping. /slots is an array with one object per slot: id, id_task, n_ctx (the
//     context of one slot), speculative (a draft model loaded), is_processing, params (the
//     sampling defaults and speculative.n_max/n_min/p_min) and next_token.
//   - SGLang (python/sglang/srt/entrypoints/http_server.py get_server_info and
//     get_model_info; sgl-project/sglang): /get_server_info is the server arguments
//     (dataclasses.asdict(server_args): model_path, context_length, max_running_requests,
//     chunked_prefill_size, mem_fraction_static, …), the scheduler's init info (status,
//     max_total_num_tokens: the KV cache in tokens, max_req_input_len), internal_states (one
//     object per data-parallel rank: last_gen_throughput, memory_usage) and version.
//   - TGI 3 (router/src/lib.rs Info; huggingface/text-generation-inference): /info is
//     model_id, model_sha, model_pipeline_tag, max_concurrent_requests, max_best_of,
//     max_stop_sequences, max_input_tokens, max_total_tokens, validation_workers,
//     max_client_batch_size, router, version, sha, docker_label.
//
// Where the engine has no such setting the field has the server's default (llama.cpp's
// sampling defaults, TGI's max_best_of 2), and where the engine's setting means something
// else the nearest is given and said here: a llama.cpp slot's n_ctx is the engine's
// MaxModelLen (the engine shares one paged KV cache where llama.cpp splits its context
// between slots); TGI's max_concurrent_requests is the engine's MaxConcurrentRequests when it
// has one and else MaxNumSeqs (TGI refuses requests beyond it with 429, the engine queues
// those beyond MaxNumSeqs: both bound the requests running).

// serverInfoRoutes adds the configuration endpoints of the engine's personality to mux.
func (e *Engine) serverInfoRoutes(mux *http.ServeMux) {
	switch e.wire.name {
	case "llamacpp":
		mux.HandleFunc("GET /props", e.handleProps)
		mux.HandleFunc("GET /slots", e.handleSlots)
	case "sglang":
		mux.HandleFunc("GET /get_server_info", e.handleSGLangServerInfo)
		mux.HandleFunc("GET /get_model_info", e.handleSGLangModelInfo)
	case "tgi":
		mux.HandleFunc("GET /info", e.handleTGIInfo)
	}
}

// writeJSON answers v as JSON.
func writeJSON(w http.ResponseWriter, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.Write(append(b, '\n'))
}

// llamaSlot is one llama.cpp slot as /slots and /props show it.
type llamaSlot struct {
	ID           int            `json:"id"`
	IDTask       int            `json:"id_task"`
	NCtx         int            `json:"n_ctx"`
	Speculative  bool           `json:"speculative"`
	IsProcessing bool           `json:"is_processing"`
	Params       map[string]any `json:"params"`
	Prompt       *string        `json:"prompt,omitempty"`
	NextToken    llamaNextToken `json:"next_token"`
}

type llamaNextToken struct {
	HasNextToken bool `json:"has_next_token"`
	HasNewLine   bool `json:"has_new_line"`
	NRemain      int  `json:"n_remain"`
	NDecoded     int  `json:"n_decoded"`
}

// llamaParams are a slot's params: llama.cpp's sampling defaults (common/common.h
// common_params_sampling) and the speculative settings, the draft length being the engine's.
func (e *Engine) llamaParams() map[string]any {
	nMax := 16 // llama.cpp's default --draft-max
	if e.cfg.SpecK > 0 {
		nMax = e.cfg.SpecK
	}
	return map[string]any{
		"n_predict": -1, "seed": uint32(0xFFFFFFFF), "temperature": 0.8, "dynatemp_range": 0.0, "dynatemp_exponent": 1.0,
		"top_k": 40, "top_p": 0.95, "min_p": 0.05, "typical_p": 1.0, "repeat_last_n": 64, "repeat_penalty": 1.0,
		"presence_penalty": 0.0, "frequency_penalty": 0.0, "mirostat": 0, "max_tokens": -1, "n_keep": 0, "n_discard": 0,
		"ignore_eos": false, "stream": true, "n_probs": 0, "min_keep": 0,
		"samplers":          []string{"penalties", "dry", "top_k", "typ_p", "top_p", "min_p", "xtc", "temperature"},
		"speculative.n_max": nMax, "speculative.n_min": 0, "speculative.p_min": 0.75,
		"timings_per_token": false, "lora": []any{},
	}
}

// llamaSlots returns the engine's slots: MaxNumSeqs of them, the first as many as are running
// marked processing.
func (e *Engine) llamaSlots() []llamaSlot {
	e.mu.Lock()
	running := e.cl.running()
	e.mu.Unlock()
	params := e.llamaParams()
	slots := make([]llamaSlot, e.cfg.MaxNumSeqs)
	for i := range slots {
		s := llamaSlot{ID: i, IDTask: -1, NCtx: e.cfg.maxModelLen, Speculative: e.cfg.SpecK > 0, Params: params,
			NextToken: llamaNextToken{HasNextToken: true, NRemain: -1}}
		if i < running {
			s.IsProcessing, s.IDTask = true, i
		}
		slots[i] = s
	}
	return slots
}

func (e *Engine) handleSlots(w http.ResponseWriter, r *http.Request) {
	slots := e.llamaSlots()
	if r.URL.Query().Get("fail_on_no_slot") == "1" {
		free := false
		for _, s := range slots {
			free = free || !s.IsProcessing
		}
		if !free {
			writeError(w, &apiError{status: http.StatusServiceUnavailable, typ: "unavailable_error", message: "no slot available"})
			return
		}
	}
	writeJSON(w, slots)
}

func (e *Engine) handleProps(w http.ResponseWriter, _ *http.Request) {
	def := e.llamaSlots()[0]
	def.IsProcessing, def.IDTask = false, -1
	empty := ""
	def.Prompt = &empty
	writeJSON(w, struct {
		Default     llamaSlot       `json:"default_generation_settings"`
		TotalSlots  int             `json:"total_slots"`
		ModelPath   string          `json:"model_path"`
		Template    string          `json:"chat_template"`
		Modalities  map[string]bool `json:"modalities"`
		BOS         string          `json:"bos_token"`
		EOS         string          `json:"eos_token"`
		BuildInfo   string          `json:"build_info"`
		IsSleeping  bool            `json:"is_sleeping"`
		ChatTplCaps map[string]bool `json:"chat_template_caps"`
	}{def, e.cfg.MaxNumSeqs, e.cfg.Model, "llmbench reference template", map[string]bool{"vision": false, "audio": false},
		"<|begin_of_text|>", "<|eot_id|>", e.wire.fingerprint, false,
		map[string]bool{"supports_tools": true, "supports_system_role": true}})
}

// sglangDtype names a weight dtype as SGLang's --dtype and --quantization do.
func sglangDtype(weight string) (dtype string, quant any) {
	switch weight {
	case "fp8":
		return "bfloat16", "fp8"
	case "int8":
		return "bfloat16", "w8a8_int8"
	case "int4":
		return "float16", "awq"
	}
	return "bfloat16", nil
}

func (e *Engine) handleSGLangServerInfo(w http.ResponseWriter, _ *http.Request) {
	c := e.cfg
	dtype, quant := sglangDtype(c.roof.Config().WeightDtype)
	kvDtype := "auto"
	if c.roof.Config().KVDtype == "fp8" {
		kvDtype = "fp8_e4m3"
	}
	var specAlgo any
	if c.SpecK > 0 {
		specAlgo = map[string]string{perf.SpecEAGLE: "EAGLE", perf.SpecNgram: "NGRAM", perf.SpecDraft: "STANDALONE"}[c.specMethod]
		if specAlgo == "" {
			specAlgo = "STANDALONE"
		}
	}
	tokens := c.numBlocks * c.BlockSize
	info := map[string]any{
		"model_path": c.Model, "tokenizer_path": c.Model, "served_model_name": c.ServedModelName, "tp_size": c.roof.Config().TP,
		"dp_size": 1, "dtype": dtype, "quantization": quant, "kv_cache_dtype": kvDtype, "context_length": c.maxModelLen,
		"max_running_requests": c.MaxNumSeqs, "max_total_tokens": nil, "chunked_prefill_size": c.MaxNumBatchedTokens,
		"max_prefill_tokens": 16384, "schedule_policy": "fcfs", "mem_fraction_static": c.roof.Config().GPUMemUtil,
		"page_size": c.BlockSize, "disable_radix_cache": c.DisablePrefixCaching, "speculative_algorithm": specAlgo,
		"speculative_num_draft_tokens": nilIfZero(c.SpecK), "random_seed": int64(e.seed & 0x7FFFFFFF),
		"status": "ready", "max_total_num_tokens": tokens, "max_req_input_len": c.maxModelLen - 1,
		"internal_states": []any{map[string]any{"last_gen_throughput": 0.0, "memory_usage": map[string]any{
			"weight": round2(c.roof.WeightBytes() / float64(1<<30)), "kvcache": round2(c.roof.KVCacheBytes() / float64(1<<30)),
			"token_capacity": tokens}}},
		"version": "0.4.9",
	}
	writeJSON(w, info)
}

func (e *Engine) handleSGLangModelInfo(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, map[string]any{"model_path": e.cfg.Model, "tokenizer_path": e.cfg.Model, "is_generation": true,
		"preferred_sampling_params": nil, "weight_version": "default"})
}

func (e *Engine) handleTGIInfo(w http.ResponseWriter, _ *http.Request) {
	c := e.cfg
	concurrent := c.MaxNumSeqs
	if c.MaxConcurrentRequests > 0 {
		concurrent = c.MaxConcurrentRequests
	}
	writeJSON(w, struct {
		ModelID          string  `json:"model_id"`
		ModelSHA         *string `json:"model_sha"`
		PipelineTag      string  `json:"model_pipeline_tag"`
		MaxConcurrent    int     `json:"max_concurrent_requests"`
		MaxBestOf        int     `json:"max_best_of"`
		MaxStopSequences int     `json:"max_stop_sequences"`
		MaxInputTokens   int     `json:"max_input_tokens"`
		MaxTotalTokens   int     `json:"max_total_tokens"`
		Validation       int     `json:"validation_workers"`
		MaxClientBatch   int     `json:"max_client_batch_size"`
		Router           string  `json:"router"`
		Version          string  `json:"version"`
		SHA              *string `json:"sha"`
		DockerLabel      *string `json:"docker_label"`
	}{ModelID: c.Model, PipelineTag: "text-generation", MaxConcurrent: concurrent, MaxBestOf: 2, MaxStopSequences: 4,
		MaxInputTokens: c.maxModelLen - 1, MaxTotalTokens: c.maxModelLen, Validation: 2, MaxClientBatch: 4,
		Router: "text-generation-router", Version: strings.TrimSuffix(e.wire.fingerprint, "-native")})
}

func nilIfZero(n int) any {
	if n == 0 {
		return nil
	}
	return n
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }
