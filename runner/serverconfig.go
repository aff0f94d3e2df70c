package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"time"
)

// FetchServerConfig collects the configuration facts an endpoint exposes, for listing the
// differences between A/B arms: /version (vLLM, SGLang and the reference engine answer it),
// and the model ids of /v1/models. Anything unreachable is simply absent. apiKey, when set, is
// sent as a bearer token and never returned.
func FetchServerConfig(ctx context.Context, baseURL, apiKey string) map[string]string {
	out := map[string]string{}
	base := strings.TrimSuffix(strings.TrimSuffix(baseURL, "/"), "/v1")
	client := &http.Client{Timeout: 5 * time.Second}
	get := func(path string) (any, bool) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return nil, false
		}
		if apiKey != "" {
			req.Header.Set("Authorization", "Bearer "+apiKey)
		}
		resp, err := client.Do(req)
		if err != nil {
			return nil, false
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return nil, false
		}
		var v any
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<20)).Decode(&v) != nil {
			return nil, false
		}
		return v, true
	}
	if v, ok := get("/version"); ok {
		flatten("server", v, out)
	}
	if v, ok := get("/v1/models"); ok {
		if m, ok := v.(map[string]any); ok {
			if data, ok := m["data"].([]any); ok {
				var ids []string
				for _, d := range data {
					if dm, ok := d.(map[string]any); ok {
						if id, ok := dm["id"].(string); ok {
							ids = append(ids, id)
						}
					}
				}
				sort.Strings(ids)
				out["models"] = strings.Join(ids, ",")
			}
		}
	}
	return out
}

// flatten writes v's scalar leaves into out under dotted keys.
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
		out[prefix] = fmt.Sprint(t)
	}
}
