package refengine

import (
	"context"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/refengine/perf"
)

// Handler returns the engine's HTTP API: POST /v1/completions, POST /v1/chat/completions,
// POST /v1/responses, POST /v1/messages, POST /v1/embeddings (apis.go, embeddings.go),
// GET /v1/models, GET /health, GET /metrics, GET /version, POST /reset_prefix_cache and
// POST /flush_cache (flush.go), and the configuration endpoints of the wire personality:
// llama.cpp's /props and /slots, SGLang's /get_server_info and /get_model_info, TGI's /info
// (serverinfo.go). With Config.APIKey set, /v1/ paths
// require "Authorization: Bearer <key>" (or, for /v1/messages, "x-api-key: <key>"); /health,
// /metrics and /version stay open, as in vLLM.
func (e *Engine) Handler() http.Handler {
	mux := http.NewServeMux()
	for path, api := range map[string]wireAPI{"/v1/completions": apiCompletions, "/v1/chat/completions": apiChat,
		"/v1/responses": apiResponses, "/v1/messages": apiMessages, "/v1/embeddings": apiEmbeddings} {
		mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) { e.handleGenerate(w, r, api) })
	}
	mux.HandleFunc("GET /v1/models", e.handleModels)
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, _ *http.Request) { w.WriteHeader(http.StatusOK) })
	mux.HandleFunc("GET /metrics", e.handleMetrics)
	mux.HandleFunc("GET /version", e.handleVersion)
	// Prefix-cache flush, vLLM's and SGLang's endpoints (flush.go).
	mux.HandleFunc("POST /reset_prefix_cache", e.handleResetPrefixCache)
	mux.HandleFunc("POST /flush_cache", e.handleFlushCache)
	// The personality's own configuration endpoints (serverinfo.go).
	e.serverInfoRoutes(mux)
	return e.guard(mux)
}

// Panics is the number of handler panics recovered (each answered 500); it should stay 0.
func (e *Engine) Panics() int64 { return e.panics.Load() }

// guard recovers panics (500) and enforces the API key.
func (e *Engine) guard(next http.Handler) http.Handler {
	want := []byte("Bearer " + e.cfg.APIKey)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		defer func() {
			if v := recover(); v != nil {
				if v == http.ErrAbortHandler {
					panic(v)
				}
				e.panics.Add(1)
				writeError(w, &apiError{status: http.StatusInternalServerError, typ: "server_error",
					message: fmt.Sprintf("internal error: %v", v)})
			}
		}()
		if e.cfg.APIKey != "" && strings.HasPrefix(r.URL.Path, "/v1/") {
			got := []byte(r.Header.Get("Authorization"))
			if x := r.Header.Get("X-Api-Key"); r.URL.Path == "/v1/messages" && x != "" {
				got = []byte("Bearer " + x) // Anthropic's header
			}
			if subtle.ConstantTimeCompare(got, want) != 1 {
				writeError(w, &apiError{status: http.StatusUnauthorized, typ: "invalid_request_error",
					code: "invalid_api_key", message: "Missing or incorrect API key; send Authorization: Bearer <key>."})
				return
			}
		}
		next.ServeHTTP(w, r)
	})
}

func (e *Engine) handleModels(w http.ResponseWriter, _ *http.Request) {
	b := []byte(`{"object":"list","data":[{"id":`)
	b = appendJSONString(b, e.cfg.ServedModelName)
	b = append(b, `,"object":"model","created":`...)
	b = fmt.Appendf(b, "%d", e.cfg.Now().Unix())
	b = append(b, `,"owned_by":"llmbench","root":`...)
	b = appendJSONString(b, e.cfg.Model)
	b = fmt.Appendf(b, `,"parent":null,"max_model_len":%d}`, e.cfg.maxModelLen)
	b = e.appendAdapterModels(b)
	b = append(b, "]}\n"...)
	w.Header().Set("Content-Type", "application/json")
	w.Write(b)
}

// Info describes the engine's configuration; /version serves it so that A/B comparisons can
// list configuration differences.
type Info struct {
	Engine              string  `json:"engine"`
	Version             string  `json:"version"`
	ServedModelName     string  `json:"served_model_name"`
	Model               string  `json:"model"`
	GPU                 string  `json:"gpu"`
	TP                  int     `json:"tensor_parallel_size"`
	WeightDtype         string  `json:"weight_dtype"`
	KVDtype             string  `json:"kv_cache_dtype"`
	GPUMemUtil          float64 `json:"gpu_memory_utilization"`
	NumBlocks           int     `json:"num_gpu_blocks"`
	BlockSize           int     `json:"block_size"`
	MaxModelLen         int     `json:"max_model_len"`
	MaxNumSeqs          int     `json:"max_num_seqs"`
	MaxNumBatchedTokens int     `json:"max_num_batched_tokens"`
	PrefixCaching       bool    `json:"enable_prefix_caching"`
	SpecK               int     `json:"num_speculative_tokens"`
	SpecAlpha           float64 `json:"spec_acceptance_rate"`
	SpecDraftModel      string  `json:"speculative_model"`
	// Speculative methods (issue 22, item 5): set only with speculative decoding on.
	SpecMethod        string    `json:"speculative_method,omitempty"`
	SpecAlphas        []float64 `json:"spec_acceptance_rates,omitempty"`
	SpecTree          int       `json:"speculative_tree_tokens,omitempty"`
	SpecRepetition    string    `json:"spec_ngram_repetition,omitempty"`
	Disaggregated     bool      `json:"disaggregated_prefill"`
	KVTransferBW      float64   `json:"kv_transfer_bandwidth"`
	HashIDTokens      int       `json:"hash_id_tokens"`
	DefaultMaxTokens  int       `json:"default_max_tokens"`
	TimeScale         float64   `json:"time_scale"`
	Faults            string    `json:"faults"`
	Wire              string    `json:"wire"`
	ReasoningFraction float64   `json:"reasoning_fraction,omitempty"`
	Noise             string    `json:"engine_noise,omitempty"`
	// Quality is the answers' error model (ParseQuality's spec; omitted when off).
	Quality string `json:"quality,omitempty"`

	// LoRA adapters (issue 38): NAME:RANK of each, and the slots; omitted without adapters.
	LoRAModules string `json:"lora_modules,omitempty"`
	MaxLoRAs    int    `json:"max_loras,omitempty"`
}

// EngineVersion identifies the reference engine's behaviour in /version.
const EngineVersion = "llmbench-refengine/1"

// Info returns the engine's configuration after defaults.
func (e *Engine) Info() Info { return e.cfg.info(e.scale) }

func (r *resolved) info(scale float64) Info {
	pc := r.roof.Config()
	in := Info{
		Engine: "llmbench-refengine", Version: EngineVersion, ServedModelName: r.ServedModelName,
		Model: r.model.Name, GPU: pc.GPU.Name, TP: pc.TP, WeightDtype: pc.WeightDtype, KVDtype: pc.KVDtype,
		GPUMemUtil: pc.GPUMemUtil, NumBlocks: r.numBlocks, BlockSize: r.BlockSize, MaxModelLen: r.maxModelLen,
		MaxNumSeqs: r.MaxNumSeqs, MaxNumBatchedTokens: r.MaxNumBatchedTokens, PrefixCaching: !r.DisablePrefixCaching,
		SpecK: r.SpecK, SpecAlpha: r.SpecAlpha, SpecDraftModel: r.draft.Name, Disaggregated: r.Disaggregated,
		KVTransferBW: r.KVTransferBW, HashIDTokens: r.HashIDTokens, DefaultMaxTokens: r.DefaultMaxTokens,
		TimeScale: scale, Faults: r.Faults.String(), Wire: wireName(r.Wire), ReasoningFraction: r.ReasoningFraction,
		Noise: r.Noise.String(), Quality: qualityInfo(r.Quality),
	}
	in.LoRAModules, in.MaxLoRAs = r.lora.info()
	if r.SpecK > 0 {
		in.SpecMethod, in.SpecAlphas = r.specMethod, r.SpecAlphas
		if r.specMethod == perf.SpecEAGLE || r.specMethod == perf.SpecMedusa {
			in.SpecTree = r.specTree
		}
		if r.specMethod == perf.SpecNgram {
			in.SpecRepetition = FormatSpecRepetition(map[string]float64{"": r.repetitionFor("")})
			if len(r.SpecRepetition) > 0 {
				in.SpecRepetition = FormatSpecRepetition(r.SpecRepetition)
			}
		}
		if r.specMethod == perf.SpecEAGLE {
			in.SpecDraftModel = ""
		}
	}
	return in
}

func (e *Engine) handleVersion(w http.ResponseWriter, _ *http.Request) {
	b, _ := json.Marshal(e.Info())
	w.Header().Set("Content-Type", "application/json")
	w.Write(append(b, '\n'))
}

// readBody reads a request body of at most MaxBodyBytes within BodyReadTimeout. A declared
// Content-Length above the limit fails at once, without waiting for the bytes.
func (e *Engine) readBody(w http.ResponseWriter, r *http.Request) ([]byte, error) {
	if r.ContentLength > e.cfg.MaxBodyBytes {
		w.Header().Set("Connection", "close")
		return nil, &http.MaxBytesError{Limit: e.cfg.MaxBodyBytes}
	}
	rc := http.NewResponseController(w)
	if rc.SetReadDeadline(time.Now().Add(e.cfg.BodyReadTimeout)) == nil {
		defer rc.SetReadDeadline(time.Time{})
	}
	return io.ReadAll(http.MaxBytesReader(w, r.Body, e.cfg.MaxBodyBytes))
}

// stream receives a request's emissions from the scheduler goroutine.
type stream struct {
	mu      sync.Mutex
	pending []pendingEmit
	notify  chan struct{}
}

type pendingEmit struct {
	start, n int
	final    bool
	reason   string
}

func newStream() *stream { return &stream{notify: make(chan struct{}, 1)} }

func (st *stream) emit(start, n int, _ time.Duration, final bool, reason string) {
	st.mu.Lock()
	st.pending = append(st.pending, pendingEmit{start: start, n: n, final: final, reason: reason})
	st.mu.Unlock()
	select {
	case st.notify <- struct{}{}:
	default:
	}
}

func (st *stream) take(buf []pendingEmit) []pendingEmit {
	st.mu.Lock()
	buf = append(buf[:0], st.pending...)
	st.pending = st.pending[:0]
	st.mu.Unlock()
	return buf
}

func tooMany(msg string) *apiError {
	return &apiError{status: http.StatusTooManyRequests, typ: "rate_limit_error", code: "rate_limit_exceeded", message: msg}
}

// handleGenerate serves the generation endpoints (and admits embeddings requests): admit,
// read and decode the body, apply the faults that answer before the response, then generate.
func (e *Engine) handleGenerate(w http.ResponseWriter, r *http.Request, api wireAPI) {
	release, ok := e.admit(w, api)
	if !ok {
		return
	}
	defer release()
	body, err := e.readBody(w, r)
	if err != nil {
		e.writeBodyError(w, api, err)
		return
	}
	var req *request
	var aerr *apiError
	switch api {
	case apiCompletions, apiChat:
		req, aerr = decodeRequest(body, api.chatLike(), e.decodeLimits())
	case apiResponses, apiMessages:
		req, aerr = decodeAPIRequest(body, api, e.decodeLimits())
	case apiEmbeddings:
		// Decoded after the faults below: an embeddings call is many sequences.
		req = &request{}
	}
	if aerr != nil {
		writeAPIError(w, api, aerr)
		return
	}
	n := e.counter.Add(1)
	respID := e.newID(api.respPrefix(), n)
	key := r.Header.Get("X-Request-Id")
	faultKey := n
	if key != "" {
		faultKey = hashString(fnvOffset, key)
	} else {
		key = respID
	}
	plan := e.cfg.Faults.plan(faultKey, e.clock.Now())
	if e.injectBefore(w, api, &plan) {
		return
	}
	if api == apiEmbeddings {
		e.handleEmbeddings(w, r, body, key, respID, &plan)
		return
	}
	e.generate(w, r, api, req, key, respID, faultKey, &plan)
}

// admit applies the engine's shutdown, rate limit and concurrency limit; when it admits the
// request (ok), release must be called once the request is served.
func (e *Engine) admit(w http.ResponseWriter, api wireAPI) (release func(), ok bool) {
	if e.ctx.Err() != nil {
		writeAPIError(w, api, &apiError{status: http.StatusServiceUnavailable, typ: "server_error", code: "shutting_down",
			message: "the engine is shutting down"})
		return nil, false
	}
	if e.limiter != nil && !e.limiter.allow() {
		writeAPIError(w, api, tooMany(fmt.Sprintf("rate limit of %g requests/s exceeded; retry later", e.cfg.RateLimit)))
		return nil, false
	}
	if lim := int64(e.cfg.MaxConcurrentRequests); lim > 0 {
		if e.inflight.Add(1) > lim {
			e.inflight.Add(-1)
			writeAPIError(w, api, tooMany(fmt.Sprintf("more than %d requests in flight; retry later", lim)))
			return nil, false
		}
		return func() { e.inflight.Add(-1) }, true
	}
	return func() {}, true
}

// writeBodyError answers a request whose body could not be read: 408 when it did not arrive
// in time, 413 when it is too large, 400 otherwise.
func (e *Engine) writeBodyError(w http.ResponseWriter, api wireAPI, err error) {
	var mbe *http.MaxBytesError
	if errors.Is(err, os.ErrDeadlineExceeded) {
		w.Header().Set("Connection", "close")
		writeAPIError(w, api, &apiError{status: http.StatusRequestTimeout, typ: "invalid_request_error", code: "body_timeout",
			message: fmt.Sprintf("the request body did not arrive within %v", e.cfg.BodyReadTimeout)})
		return
	}
	if errors.As(err, &mbe) {
		writeAPIError(w, api, &apiError{status: http.StatusRequestEntityTooLarge, typ: "invalid_request_error", code: "body_too_large",
			message: fmt.Sprintf("request body exceeds %d bytes; send a shorter prompt", mbe.Limit)})
		return
	}
	writeAPIError(w, api, badRequest("", "reading the request body: %v", err))
}

// injectBefore applies the faults of plan that answer instead of the engine (a reset, an
// injected status, an overloaded queue); it reports true when it answered.
func (e *Engine) injectBefore(w http.ResponseWriter, api wireAPI, plan *faultPlan) bool {
	if plan.resetBefore {
		e.faultCount("reset-before")
		resetConn(w)
		return true
	}
	if plan.status != 0 {
		e.faultCount(fmt.Sprintf("status-%d", plan.status))
		writeAPIError(w, api, injectedStatus(plan.status))
		return true
	}
	if q := e.cfg.Faults.OverloadQueue; q > 0 && e.waitingLen() >= q {
		e.faultCount("overload")
		writeAPIError(w, api, tooMany(fmt.Sprintf("server overloaded: %d requests already waiting", q)))
		return true
	}
	return false
}

// generate submits a decoded generation request to the scheduler and writes its answer,
// streamed or whole, in api's format; the request is aborted unless the answer completes.
func (e *Engine) generate(w http.ResponseWriter, r *http.Request, api wireAPI, req *request, key, respID string, faultKey uint64, plan *faultPlan) {
	chat := api.chatLike()
	if s := plan.earlyEOSFor(req); s {
		e.faultCount("early-eos")
	}
	// Unseeded sampling draws from the engine seed and the request's key, as faults do, so a
	// replay of the same trace under the same Config.Seed gets the same outputs whatever
	// order near-simultaneous requests arrive in.
	base := outputBase(req.promptHash, req.temperature, req.seed, tokenizer64(e.seed, faultKey))
	out := e.outPlan(req, base)
	st := newStream()
	s := e.submit(req, key, respID, out, plan, st)
	finished := false
	defer func() {
		if !finished {
			e.abort(s)
		}
	}()
	ctx := r.Context()
	if plan.slowHeaders > 0 {
		e.faultCount("slow-headers")
		if !e.sleep(ctx, plan.slowHeaders) {
			return
		}
	}
	w.Header().Set("X-Request-Id", key)
	g := &generation{req: req, chat: chat, respID: respID, base: base, created: e.cfg.Now().Unix(), s: s, st: st, plan: plan, out: out}
	if chat {
		g.reasoning = int(e.cfg.ReasoningFraction * float64(s.target))
		if out.ans != nil {
			g.reasoning = min(out.reasoning, s.target)
		}
	}
	out.reasoning = g.reasoning
	switch {
	case req.stream:
		finished = e.writeStreamed(ctx, w, g, e.framingFor(api, g))
	case api == apiResponses || api == apiMessages:
		finished = e.writeAPIWhole(ctx, w, g, api)
	default:
		finished = e.writeWhole(ctx, w, g)
	}
}

// decodeLimits are the bounds requests are checked against.
func (e *Engine) decodeLimits() decodeLimits {
	return decodeLimits{servedModel: e.cfg.ServedModelName, maxModelLen: e.cfg.maxModelLen,
		defaultMaxTokens: e.cfg.DefaultMaxTokens, vision: perf.VisionOf(e.cfg.model), lora: e.cfg.lora}
}

// injectMid applies the mid-stream faults of plan; it reports false when the stream is gone.
func (e *Engine) injectMid(ctx context.Context, w http.ResponseWriter, rc *http.ResponseController, plan *faultPlan, id string, s *seq) bool {
	if plan.malformed {
		e.faultCount("malformed")
		io.WriteString(w, "data: \x00\xffnot-an-sse-event\n\n") // a data line that is no JSON: an unknown field would be ignored (SSE spec)
	}
	if plan.badJSON {
		e.faultCount("bad-json")
		b := append([]byte(`data: {"id":`), appendJSONString(nil, id)...)
		b = append(b, `,"choices":[{"index":0,"text":`+"\n\n"...)
		w.Write(b)
	}
	rc.Flush()
	if plan.stall > 0 {
		e.faultCount("stall")
		if !e.sleep(ctx, plan.stall) {
			return false
		}
	}
	if plan.resetMid {
		e.faultCount("reset-mid")
		e.abort(s) // before the client can see the reset, so the engine's state is settled
		resetConn(w)
		return false
	}
	return true
}

// sleep waits simulated duration d on the engine's clock; false when ctx or the engine ended.
func (e *Engine) sleep(ctx context.Context, d time.Duration) bool {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(e.ctx, cancel)
	defer stop()
	return e.clock.SleepUntil(ctx, e.clock.Now()+d) == nil
}

// wait blocks until st has news; false when the client or the engine went away.
func (e *Engine) wait(ctx context.Context, st *stream) bool {
	select {
	case <-st.notify:
		return true
	case <-ctx.Done():
		return false
	case <-e.ctx.Done():
		return false
	}
}

func injectedStatus(code int) *apiError {
	switch code {
	case 429:
		return tooMany("injected fault: rate limit reached for requests; retry later")
	case 503:
		return &apiError{status: 503, typ: "server_error", code: "service_unavailable", message: "injected fault: the server is temporarily unavailable"}
	default:
		return &apiError{status: code, typ: "server_error", code: "internal_error", message: "injected fault: internal server error"}
	}
}

// resetConn drops the connection with a TCP reset (or aborts the handler where the connection
// cannot be taken over, e.g. HTTP/2).
func resetConn(w http.ResponseWriter) {
	conn, _, err := http.NewResponseController(w).Hijack()
	if err != nil {
		panic(http.ErrAbortHandler)
	}
	if tc, ok := conn.(*net.TCPConn); ok {
		tc.SetLinger(0)
	}
	conn.Close()
}

func tokenizer64(seed, n uint64) uint64 { return mix(seed ^ mix(n^0xa5a5a5a5a5a5a5a5)) }

// Describe returns the engine configuration as strings (for run facts in summaries).
func (e *Engine) Describe() map[string]string {
	b, _ := json.Marshal(e.Info())
	var m map[string]any
	json.Unmarshal(b, &m)
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = fmt.Sprint(v)
	}
	return out
}

// faultCount counts one injected fault of kind (shown in /metrics).
func (e *Engine) faultCount(kind string) {
	e.faultMu.Lock()
	if e.faults == nil {
		e.faults = map[string]int64{}
	}
	e.faults[kind]++
	e.faultMu.Unlock()
}

// FaultsInjected returns how many faults of each kind the engine has injected.
func (e *Engine) FaultsInjected() map[string]int64 {
	e.faultMu.Lock()
	defer e.faultMu.Unlock()
	out := make(map[string]int64, len(e.faults))
	for k, v := range e.faults {
		out[k] = v
	}
	return out
}

// noteSent records that the first n emissions of s have been flushed to the connection.
func (e *Engine) noteSent(s *seq, n int) {
	e.mu.Lock()
	now := e.clock.Now()
	for i := len(s.tl.Sent); i < n && i < len(s.tl.Emissions); i++ {
		// The loop only completes a step once the clock has reached its end, so a chunk is
		// never sent before its emission; max absorbs the clock's float rounding (< 1 ns).
		s.tl.Sent = append(s.tl.Sent, max(now, s.tl.Emissions[i].At))
	}
	e.mu.Unlock()
}
