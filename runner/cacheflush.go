package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/llmbench/llmbench/internal/redact"
)

// cacheFlushTimeout bounds one flush of a server's prefix cache (every slot, for llama.cpp).
const cacheFlushTimeout = 30 * time.Second

// A cacheFlushMethod drops a server's prefix cache through one backend's own endpoint.
type cacheFlushMethod struct {
	name string // as the output names it
	// flush returns errNoSuchEndpoint when the server does not serve the endpoint at all,
	// another error when it does but refused.
	flush func(ctx context.Context, f *configFetcher) error
	// hint says how to enable the endpoint on that backend.
	hint string
}

var errNoSuchEndpoint = errors.New("no such endpoint")

// cacheFlushMethods is every backend's way to drop its prefix cache, tried in this order:
//
//   - SGLang: POST /flush_cache (python/sglang/srt/entrypoints/http_server.py; 400 while
//     requests are running);
//   - vLLM: POST /reset_prefix_cache, served only with VLLM_SERVER_DEV_MODE=1
//     (vllm/entrypoints/openai/api_server.py, the development endpoints);
//   - llama.cpp: POST /slots/{id}?action=erase for every slot GET /slots lists
//     (tools/server/README.md; llama-server answers 501 unless started with --slot-save-path).
//
// The reference engine serves SGLang's and vLLM's (refengine/flush.go); TGI, Ollama and hosted
// APIs have none.
var cacheFlushMethods = []cacheFlushMethod{
	{name: "SGLang POST /flush_cache", flush: flushSimple("/flush_cache"), hint: "every SGLang server serves it"},
	{name: "vLLM POST /reset_prefix_cache", flush: flushSimple("/reset_prefix_cache"), hint: "start vLLM with VLLM_SERVER_DEV_MODE=1"},
	{name: "llama.cpp POST /slots/{id}?action=erase", flush: flushLlamacppSlots, hint: "start llama-server with --slot-save-path DIR"},
}

// CacheFlush drops one server's prefix cache by the method found when it was made.
type CacheFlush struct {
	Method string // e.g. "vLLM POST /reset_prefix_cache"
	fetch  *configFetcher
	flush  func(ctx context.Context, f *configFetcher) error
}

// Flush drops the server's prefix cache now.
func (c *CacheFlush) Flush(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, cacheFlushTimeout)
	defer cancel()
	if err := c.flush(ctx, c.fetch); err != nil {
		return fmt.Errorf("%s: %w", c.Method, err)
	}
	return nil
}

// NewCacheFlush finds how the server at baseURL (an OpenAI-compatible endpoint, with or
// without /v1) drops its prefix cache, by flushing it once with each backend's method in turn
// (cacheFlushMethods). The error says what each method got and how to enable one.
func NewCacheFlush(ctx context.Context, baseURL, apiKey string) (*CacheFlush, error) {
	f, ok := newConfigFetcher(baseURL, apiKey)
	if !ok {
		return nil, fmt.Errorf("cache flush: %q is no URL", redact.URL(baseURL))
	}
	var why []string
	for _, m := range cacheFlushMethods {
		c := &CacheFlush{Method: m.name, fetch: f, flush: m.flush}
		err := c.Flush(ctx)
		if err == nil {
			return c, nil
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		if errors.Is(err, errNoSuchEndpoint) {
			why = append(why, fmt.Sprintf("%s: not served (%s)", m.name, m.hint))
		} else {
			why = append(why, err.Error())
		}
	}
	return nil, fmt.Errorf("the server at %s offers no prefix-cache flush llmbench knows: %s", redact.URL(baseURL), strings.Join(why, "; "))
}

// flushSimple posts to path: 200 is done (unless a JSON body says "success": false), 404 and
// 405 mean the server has no such endpoint, anything else is a refusal quoted from the body.
func flushSimple(path string) func(ctx context.Context, f *configFetcher) error {
	return func(ctx context.Context, f *configFetcher) error {
		status, body, ok := f.do(ctx, http.MethodPost, path, nil, 64<<10)
		if !ok {
			if err := ctx.Err(); err != nil {
				return err
			}
			return errors.New("no answer")
		}
		switch status {
		case http.StatusOK:
			var r struct {
				Success *bool `json:"success"`
			}
			if json.Unmarshal(body, &r) == nil && r.Success != nil && !*r.Success {
				return fmt.Errorf("the server refused: %s", clipValue(strings.TrimSpace(string(body))))
			}
			return nil
		case http.StatusNotFound, http.StatusMethodNotAllowed:
			return errNoSuchEndpoint
		}
		return fmt.Errorf("HTTP %d: %s", status, clipValue(strings.TrimSpace(string(body))))
	}
}

// maxFlushSlots bounds the erase requests one flush sends (llama-server's --parallel is a
// handful to a few hundred).
const maxFlushSlots = 4096

// flushLlamacppSlots erases every slot GET /slots lists.
func flushLlamacppSlots(ctx context.Context, f *configFetcher) error {
	v, ok := f.getAnyJSON(ctx, http.MethodGet, "/slots", nil)
	slots, isList := v.([]any)
	if !ok || !isList || len(slots) == 0 {
		return errNoSuchEndpoint
	}
	if len(slots) > maxFlushSlots {
		return fmt.Errorf("GET /slots lists %d slots, more than the %d llmbench erases", len(slots), maxFlushSlots)
	}
	for i, s := range slots {
		id := i
		if m, ok := s.(map[string]any); ok {
			if x, ok := m["id"].(float64); ok && x >= 0 && x < 1<<20 && x == float64(int(x)) {
				id = int(x)
			}
		}
		status, body, ok := f.do(ctx, http.MethodPost, fmt.Sprintf("/slots/%d", id)+"?action=erase", nil, 64<<10)
		if !ok {
			if err := ctx.Err(); err != nil {
				return err
			}
			return fmt.Errorf("slot %d: no answer", id)
		}
		if status != http.StatusOK {
			return fmt.Errorf("slot %d: HTTP %d: %s (start llama-server with --slot-save-path DIR to allow slot actions)",
				id, status, clipValue(strings.TrimSpace(string(body))))
		}
	}
	return nil
}
