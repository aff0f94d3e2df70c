package runner

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sort"
	"strings"
	"sync"
	"time"
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
//   - vLLM's /metrics gauge vllm:cache_config_info, whose labels are the cache configuration
//     (block_size, cache_dtype, gpu_memory_utilization, num_gpu_blocks, …): "vllm.cache_config.*";
//   - SGLang's /get_server_info (python/sglang/srt/entrypoints/http_server.py: the server
//     args, e.g. speculative_algorithm, dtype, max_running_requests): "sglang.*";
//   - llama.cpp's /props (tools/server/README.md "GET /props": default_generation_settings,
//     total_slots, build_info; speculative settings among them): "llamacpp.*";
//   - TGI's /info (router/src/server.rs: model_id, model_dtype, max_batch_total_tokens,
//     max_concurrent_requests, version, speculate): "tgi.*";
//   - Ollama's POST /api/show with the model (api/types.go ShowResponse: details, parameters,
//     model_info): "ollama.*";
//   - the model ids of /v1/models: "models".
//
// Anything unreachable is absent; values are cut to 200 characters and each endpoint gives
// at most 300 facts (the first in key order). apiKey, when set, is sent
// as a bearer token and never returned.
func FetchServerConfig(ctx context.Context, baseURL, apiKey, model string) map[string]string {
	ctx, cancel := context.WithTimeout(ctx, serverConfigTimeout)
	defer cancel()
	base, err := url.Parse(baseURL)
	if err != nil {
		return map[string]string{}
	}
	base.Path = strings.TrimSuffix(strings.TrimSuffix(base.Path, "/"), "/v1")
	base.RawPath, base.Fragment = "", ""
	// Never follow a redirect: the key (and a query that may hold one) is for this host only.
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	fetch := func(method, path string, body []byte, limit int64) ([]byte, bool) {
		var rd io.Reader
		if body != nil {
			rd = bytes.NewReader(body)
		}
		u := *base
		u.Path += path // the query, if any, stays a query
		req, err := http.NewRequestWithContext(ctx, method, u.String(), rd)
		if err != nil {
			return nil, false
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		if body != nil {
			req.Header.Set("Content-Type", "application/json")
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, false
		}
		b, err := io.ReadAll(io.LimitReader(resp.Body, limit))
		return b, err == nil
	}
	getJSON := func(method, path string, body []byte) (any, bool) {
		b, ok := fetch(method, path, body, 1<<20)
		if !ok {
			return nil, false
		}
		var v any
		if json.Unmarshal(b, &v) != nil {
			return nil, false
		}
		_, isObj := v.(map[string]any)
		return v, isObj
	}

	var mu sync.Mutex
	out := map[string]string{}
	put := func(m map[string]string) {
		mu.Lock()
		defer mu.Unlock()
		for k, v := range m {
			out[k] = v
		}
	}
	jobs := []func(){
		func() {
			if v, ok := getJSON(http.MethodGet, "/version", nil); ok {
				put(flattened("server", v))
			}
		},
		func() {
			if v, ok := getJSON(http.MethodGet, "/get_server_info", nil); ok {
				put(flattened("sglang", v))
			}
		},
		func() {
			if v, ok := getJSON(http.MethodGet, "/props", nil); ok {
				put(flattened("llamacpp", v))
			}
		},
		func() {
			if v, ok := getJSON(http.MethodGet, "/info", nil); ok {
				put(flattened("tgi", v))
			}
		},
		func() {
			if model == "" {
				return
			}
			body, _ := json.Marshal(map[string]string{"model": model})
			if v, ok := getJSON(http.MethodPost, "/api/show", body); ok {
				put(flattened("ollama", v))
			}
		},
		func() {
			if b, ok := fetch(http.MethodGet, "/metrics", nil, 8<<20); ok {
				put(vllmCacheConfig(b))
			}
		},
		func() {
			v, ok := getJSON(http.MethodGet, "/v1/models", nil)
			if !ok {
				return
			}
			data, _ := v.(map[string]any)["data"].([]any)
			var ids []string
			for _, d := range data {
				if dm, ok := d.(map[string]any); ok {
					if id, ok := dm["id"].(string); ok {
						ids = append(ids, id)
					}
				}
			}
			if len(ids) > 0 {
				sort.Strings(ids)
				put(map[string]string{"models": clipValue(strings.Join(ids, ","))})
			}
		},
	}
	var wg sync.WaitGroup
	for _, j := range jobs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			j()
		}()
	}
	wg.Wait()
	return out
}

// vllmCacheConfig reads the labels of vLLM's vllm:cache_config_info gauge from a /metrics body.
func vllmCacheConfig(b []byte) map[string]string {
	out := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, "vllm:cache_config_info{")
		if !ok {
			continue
		}
		end := labelEnd("{" + rest)
		if end < 0 {
			continue
		}
		for k, v := range parseLabels(rest[:end-1]) {
			out["vllm.cache_config."+k] = clipValue(v)
		}
		break
	}
	return out
}

// parseLabels reads a Prometheus label set body: name="value",… with \" \\ \n escapes.
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for len(s) > 0 {
		eq := strings.IndexByte(s, '=')
		if eq <= 0 || eq+1 >= len(s) || s[eq+1] != '"' {
			return out
		}
		name := strings.TrimSpace(s[:eq])
		var val strings.Builder
		i := eq + 2
		for ; i < len(s) && s[i] != '"'; i++ {
			if s[i] == '\\' && i+1 < len(s) {
				i++
				if s[i] == 'n' {
					val.WriteByte('\n')
					continue
				}
			}
			val.WriteByte(s[i])
		}
		out[name] = val.String()
		s = strings.TrimPrefix(s[min(i+1, len(s)):], ",")
	}
	return out
}

func flattened(prefix string, v any) map[string]string {
	out := map[string]string{}
	flatten(prefix, v, out)
	if len(out) > maxConfigKeys {
		keys := make([]string, 0, len(out))
		for k := range out {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		for _, k := range keys[maxConfigKeys:] {
			delete(out, k)
		}
	}
	return out
}

// flatten writes v's scalar leaves into out under dotted keys, each cut to maxConfigValue.
func flatten(prefix string, v any, out map[string]string) {
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			flatten(prefix+"."+k, c, out)
		}
	case []any:
		for i, c := range t {
			flatten(fmt.Sprintf("%s.%d", prefix, i), c, out)
		}
	case nil:
		out[prefix] = ""
	default:
		out[prefix] = clipValue(fmt.Sprint(t))
	}
}

func clipValue(s string) string {
	if len(s) <= maxConfigValue {
		return s
	}
	cut := maxConfigValue
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut] + "…"
}
