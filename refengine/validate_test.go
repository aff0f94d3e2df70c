package refengine

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

type errorBody struct {
	Error struct {
		Message string  `json:"message"`
		Type    string  `json:"type"`
		Param   *string `json:"param"`
		// Code is a string in OpenAI's errors, the status number in vLLM's NotFoundError.
		Code any `json:"code"`
	} `json:"error"`
}

func TestValidationErrors(t *testing.T) {
	_, url := startEngine(t, Config{MaxModelLen: 100, MaxBodyBytes: 4096})
	big := `{"prompt":"` + strings.Repeat("a ", 3000) + `"}`
	for _, tc := range []struct {
		name, path, body string
		status           int
		param, inMsg     string
	}{
		{"unknown model", "/v1/completions", `{"model":"gpt-9","prompt":"x"}`, 404, "model", "gpt-9"},
		{"bad type max_tokens", "/v1/completions", `{"prompt":"x","max_tokens":"ten"}`, 400, "max_tokens", "max_tokens"},
		{"bad type temperature", "/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}],"temperature":"hot"}`, 400, "temperature", "temperature"},
		{"bad type stream", "/v1/completions", `{"prompt":"x","stream":1}`, 400, "stream", "stream"},
		{"zero max_tokens", "/v1/completions", `{"prompt":"x","max_tokens":0}`, 400, "max_tokens", "at least 1"},
		{"context overflow", "/v1/completions", `{"prompt":"x y z","max_tokens":98}`, 400, "max_tokens", "maximum context length is 100"},
		{"prompt too long", "/v1/completions", `{"prompt":"` + strings.Repeat(" w", 100) + `"}`, 400, "prompt", "maximum context length"},
		{"missing prompt", "/v1/completions", `{"max_tokens":3}`, 400, "prompt", "required"},
		{"empty prompt", "/v1/completions", `{"prompt":""}`, 400, "prompt", "empty"},
		{"batched prompts", "/v1/completions", `{"prompt":["a","b"]}`, 400, "prompt", "batched"},
		{"bad token id", "/v1/completions", `{"prompt":[1,-2]}`, 400, "prompt[1]", "token id"},
		{"messages on completions", "/v1/completions", `{"prompt":"x","messages":[]}`, 400, "messages", "chat"},
		{"no messages", "/v1/chat/completions", `{"messages":[]}`, 400, "messages", "non-empty"},
		{"no role", "/v1/chat/completions", `{"messages":[{"content":"x"}]}`, 400, "messages[0].role", "role"},
		{"bad content", "/v1/chat/completions", `{"messages":[{"role":"user","content":5}]}`, 400, "messages[0].content", "content"},
		{"image part without a URL", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url"}]}]}`, 400, "messages[0].content[0].image_url", "image_url"},
		{"remote image", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"https://x/a.png"}}]}]}`, 400, "messages[0].content[0].image_url", "data: URLs"},
		{"audio part", "/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"input_audio"}]}]}`, 400, "messages[0].content[0].type", "input_audio"},
		{"messages without max_tokens", "/v1/messages", `{"messages":[{"role":"user","content":"x"}]}`, 400, "", "max_tokens"}, // Anthropic errors name no param
		{"messages system role", "/v1/messages", `{"max_tokens":4,"messages":[{"role":"system","content":"x"}]}`, 400, "", "system"},
		{"responses bad input", "/v1/responses", `{"input":5}`, 400, "input", "input"},
		{"embeddings empty", "/v1/embeddings", `{"input":[]}`, 400, "input", "1 to"},
		{"embeddings format", "/v1/embeddings", `{"input":"x","encoding_format":"int8"}`, 400, "encoding_format", "base64"},
		{"n=2", "/v1/completions", `{"prompt":"x","n":2}`, 400, "n", "n=1"},
		{"min>max", "/v1/completions", `{"prompt":"x","max_tokens":2,"min_tokens":5}`, 400, "min_tokens", "min_tokens"},
		{"temperature range", "/v1/completions", `{"prompt":"x","temperature":3}`, 400, "temperature", "between 0 and 2"},
		{"stream options without stream", "/v1/completions", `{"prompt":"x","stream_options":{"include_usage":true}}`, 400, "stream_options", "stream"},
		{"not json", "/v1/completions", `{"prompt":`, 400, "", "JSON"},
		{"trailing data", "/v1/completions", `{"prompt":"x"} {}`, 400, "", "after the JSON"},
		{"empty body", "/v1/completions", ``, 400, "", "empty"},
		{"body too large", "/v1/completions", big, 413, "", "4096 bytes"},
	} {
		resp, body := post(t, url+tc.path, tc.body)
		var eb errorBody
		if err := json.Unmarshal(body, &eb); err != nil {
			t.Errorf("%s: body %q is not an OpenAI error: %v", tc.name, body, err)
			continue
		}
		param := ""
		if eb.Error.Param != nil {
			param = *eb.Error.Param
		}
		if resp.StatusCode != tc.status || param != tc.param || !strings.Contains(eb.Error.Message, tc.inMsg) || eb.Error.Type == "" {
			t.Errorf("%s: %d %s; want %d param %q message containing %q", tc.name, resp.StatusCode, body, tc.status, tc.param, tc.inMsg)
		}
	}
	// Token-id prompts and array-of-one-string prompts are accepted.
	for _, body := range []string{`{"prompt":[1,2,3],"max_tokens":2}`, `{"prompt":["a b"],"max_tokens":2}`, `{"prompt":"x","max_completion_tokens":2,"unknown_field":{"a":1}}`} {
		if resp, b := post(t, url+"/v1/completions", body); resp.StatusCode != 200 {
			t.Errorf("%s: %d %s", body, resp.StatusCode, b)
		}
	}
}

func TestAPIKey(t *testing.T) {
	const key = "sk-test-planted-key"
	_, url := startEngine(t, Config{APIKey: key})
	body := `{"prompt":"x","max_tokens":2}`
	for _, h := range []string{"", "Bearer wrong", "Bearer " + key + "x", key} {
		resp, b := post(t, url+"/v1/completions", body, "Authorization", h)
		if resp.StatusCode != 401 || strings.Contains(string(b), key) {
			t.Errorf("Authorization %q: %d %s", h, resp.StatusCode, b)
		}
	}
	if resp, b := post(t, url+"/v1/completions", body, "Authorization", "Bearer "+key); resp.StatusCode != 200 {
		t.Errorf("right key: %d %s", resp.StatusCode, b)
	}
	resp, err := http.Get(url + "/health")
	if err != nil || resp.StatusCode != 200 {
		t.Errorf("/health needs no key: %v %v", resp, err)
	}
	resp.Body.Close()
}

func TestLimits(t *testing.T) {
	_, url := startEngine(t, Config{RateLimit: 2, Now: fixedNow, Clock: NewVirtualClock(fixedNow())})
	codes := []int{}
	for i := 0; i < 4; i++ {
		resp, _ := post(t, url+"/v1/completions", `{"prompt":"x","max_tokens":1}`)
		codes = append(codes, resp.StatusCode)
	}
	// A frozen wall clock never refills the bucket of 2.
	if codes[0] != 200 || codes[1] != 200 || codes[2] != 429 || codes[3] != 429 {
		t.Fatalf("codes %v, want [200 200 429 429]", codes)
	}
}

func TestMaxConcurrentRequests(t *testing.T) {
	_, url := startEngine(t, Config{MaxConcurrentRequests: 1, Clock: &heldClock{}})
	// A stream flushes its headers at once, so Do returns while it stays in flight (the held
	// clock never finishes a step).
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("first request: %v %v", resp, err)
	}
	defer resp.Body.Close()
	r2, body := post(t, url+"/v1/completions", `{"prompt":"x","max_tokens":1}`)
	if r2.StatusCode != 429 || !strings.Contains(string(body), "in flight") {
		t.Fatalf("second request: %d %s", r2.StatusCode, body)
	}
}

func TestHashIDsOverHTTP(t *testing.T) {
	e, url := startEngine(t, Config{HashIDTokens: 16, TimeScale: 100})
	for _, id := range []string{"h1", "h2"} {
		// Different text, same hash_ids: the 4 blocks (64 tokens) they cover are shared.
		body := `{"prompt":"` + strings.Repeat(" "+id, 70) + `","max_tokens":2,"hash_ids":[5,6,7,8]}`
		if resp, b := post(t, url+"/v1/completions", body, "X-Request-Id", id); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", id, resp.StatusCode, b)
		}
	}
	a, _ := e.Timeline("h1")
	b, _ := e.Timeline("h2")
	if a.CachedTokens != 0 || b.CachedTokens != 64 {
		t.Fatalf("cached tokens %d, %d; want 0, 64", a.CachedTokens, b.CachedTokens)
	}
}
