package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
)

// serverConfigTimeout bounds the whole configuration fetch: the endpoints are asked in
// parallel, and one that does not answer in time is simply absent.
const serverConfigTimeout = 3 * time.Second

// maxConfigValue bounds one configuration value (a chat template or a license must not fill
// the run facts); maxConfigKeys the facts taken from one endpoint.
const (
	maxConfigValue = 200
	maxConfigKeys  = 300
)

// FetchServerConfig collects the configuration facts an endpoint exposes, for the run facts
// and for listing the differences between A/B arms. It asks every backend's own endpoint, in
// parallel, and keeps what answers:
//
//   - /version (vLLM, SGLang, the reference engine): "server.*";
//   - /metrics: vLLM's gauge vllm:cache_config_info, whose labels are the cache configuration
//     (block_size, cache_dtype, gpu_memory_utilization, num_gpu_blocks, …):
//     "vllm.cache_config.*"; and "vllm.spec_decode" = "on" when vLLM exports its speculative
//     decoding counters (vllm:spec_decode_*, registered only with a speculative config);
//   - SGLang's /get_server_info (python/sglang/srt/entrypoints/http_server.py: the server
//     args, e.g. speculative_algorithm, dtype, max_running_requests): "sglang.*", and its
//     /get_model_info (model_path, tokenizer_path, is_generation, weight_version):
//     "sglang.model_info.*";
//   - llama.cpp's /props (tools/server/README.md "GET /props": default_generation_settings,
//     total_slots, build_info): "llamacpp.*";
//   - llama.cpp's /slots: whether a draft model is loaded ("speculative", which /props does not
//     show), each slot's context and speculative parameters: "llamacpp.slots.*";
//   - TGI's /info (router/src/server.rs: model_id, model_dtype, max_batch_total_tokens,
//     max_concurrent_requests, version, speculate): "tgi.*";
//   - Ollama's POST /api/show with the model (api/types.go ShowResponse: details, parameters,
//     model_info): "ollama.*";
//   - /v1/models: the model ids ("models") and what each entry says of itself beyond its id
//     (vLLM's max_model_len, root, parent): "models.<id>.*".
//
// Anything unreachable is absent; values are cut to 200 characters and each endpoint gives
// at most 300 facts (the first in key order). Facts that change with every server process
// (VolatileConfigKey) are kept here and skipped by DiffConfig. apiKey, when set, is sent
// as a bearer token and never returned: every key and value is scrubbed by the target's
// redaction policy (the key, the headers' values and the URL's secrets), since a server may
// echo what it was sent into what it describes.
func FetchServerConfig(ctx context.Context, baseURL, apiKey, model string, headers map[string]string) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, serverConfigTimeout)
	defer cancel()
	f, ok := newConfigFetcher(baseURL, apiKey)
	if !ok {
		return map[string]string{}
	}
	var mu sync.Mutex
	out := map[string]string{}
	var wg sync.WaitGroup
	for _, job := range configJobs(model) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			m := job(ctx, f)
			mu.Lock()
			defer mu.Unlock()
			for k, v := range m {
				out[k] = v
			}
		}()
	}
	wg.Wait()
	return scrubConfig(out, redact.New(redact.Target{URL: baseURL, APIKey: apiKey, Headers: headers}))
}

// scrubConfig returns m with the policy applied to every key and value.
func scrubConfig(m map[string]string, pol *redact.Policy) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[pol.String(k)] = pol.String(v)
	}
	return out
}

// configJobs are the per-backend fetches FetchServerConfig runs in parallel, each returning
// its facts (nil when its endpoint did not answer).
func configJobs(model string) []func(context.Context, *configFetcher) map[string]string {
	object := func(path, prefix string) func(context.Context, *configFetcher) map[string]string {
		return func(ctx context.Context, f *configFetcher) map[string]string {
			if v, ok := f.getJSON(ctx, http.MethodGet, path, nil); ok {
				return flattened(prefix, v)
			}
			return nil
		}
	}
	return []func(context.Context, *configFetcher) map[string]string{
		object("/version", "server"),
		object("/get_server_info", "sglang"),
		object("/get_model_info", "sglang.model_info"),
		object("/props", "llamacpp"),
		object("/info", "tgi"),
		llamacppSlots,
		modelList,
		metricsFacts,
		func(ctx context.Context, f *configFetcher) map[string]string {
			if model == "" {
				return nil
			}
			body, _ := json.Marshal(map[string]string{"model": model})
			if v, ok := f.getJSON(ctx, http.MethodPost, "/api/show", body); ok {
				return flattened("ollama", v)
			}
			return nil
		},
	}
}

// configFetcher asks one server's root (the endpoint without a trailing /v1) for its
// configuration endpoints.
type configFetcher struct {
	base   url.URL
	apiKey string
	client *http.Client
}

func newConfigFetcher(baseURL, apiKey string) (*configFetcher, bool) {
	base, err := url.Parse(baseURL)
	if err != nil || base.Host == "" {
		return nil, false
	}
	base.Path = strings.TrimSuffix(strings.TrimSuffix(base.Path, "/"), "/v1")
	base.RawPath, base.Fragment = "", ""
	// Never follow a redirect: the key (and a query that may hold one) is for this host only.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	return &configFetcher{base: *base, apiKey: apiKey, client: client}, true
}

// do sends one request to path under the server root and returns the status and up to limit
// bytes of the body; ok is false when nothing came back.
func (f *configFetcher) do(ctx context.Context, method, path string, body []byte, limit int64) (status int, b []byte, ok bool) {
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	u := f.base
	p, q, _ := strings.Cut(path, "?")
	u.Path += p // the endpoint's query, if any, stays a query, before path's own
	if q != "" {
		u.RawQuery = strings.TrimPrefix(u.RawQuery+"&"+q, "&")
	}
	req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
	if err != nil {
		return 0, nil, false
	}
	if f.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+f.apiKey)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := f.client.Do(req)
	if err != nil {
		return 0, nil, false
	}
	defer resp.Body.Close()
	b, err = io.ReadAll(io.LimitReader(resp.Body, limit))
	return resp.StatusCode, b, err == nil
}

// fetch returns the body of a 200 answer.
func (f *configFetcher) fetch(ctx context.Context, method, path string, body []byte, limit int64) ([]byte, bool) {
	status, b, ok := f.do(ctx, method, path, body, limit)
	return b, ok && status == http.StatusOK
}

// getJSON returns the decoded JSON of a 200 answer; ok only when it is an object.
func (f *configFetcher) getJSON(ctx context.Context, method, path string, body []byte) (any, bool) {
	v, ok := f.getAnyJSON(ctx, method, path, body)
	_, isObj := v.(map[string]any)
	return v, ok && isObj
}

func (f *configFetcher) getAnyJSON(ctx context.Context, method, path string, body []byte) (any, bool) {
	b, ok := f.fetch(ctx, method, path, body, 1<<20)
	if !ok {
		return nil, false
	}
	var v any
	if json.Unmarshal(b, &v) != nil {
		return nil, false
	}
	return v, true
}
