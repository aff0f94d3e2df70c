package refengine

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/tokenizer"
)

func startEngine(t testing.TB, cfg Config) (*Engine, string) {
	t.Helper()
	if cfg.TimeScale == 0 && cfg.Clock == nil {
		cfg.TimeScale = 50
	}
	e, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(e.Handler())
	t.Cleanup(func() {
		srv.Close()
		e.Close()
		if n := e.Panics(); n != 0 {
			t.Errorf("engine recovered %d panics", n)
		}
	})
	return e, srv.URL
}

func post(t testing.TB, url, body string, header ...string) (*http.Response, []byte) {
	t.Helper()
	req, err := http.NewRequest("POST", url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, b
}

// sseEvents splits an SSE body into the payloads of its "data: " events, checking the framing.
func sseEvents(t testing.TB, body []byte) []string {
	t.Helper()
	if !bytes.HasSuffix(body, []byte("\n\n")) {
		t.Fatalf("SSE body does not end with a blank line: %q", body)
	}
	var out []string
	for _, ev := range strings.Split(strings.TrimSuffix(string(body), "\n\n"), "\n\n") {
		if !strings.HasPrefix(ev, "data: ") || strings.Contains(ev, "\n") {
			t.Fatalf("malformed SSE event %q", ev)
		}
		out = append(out, strings.TrimPrefix(ev, "data: "))
	}
	return out
}

type testChunk struct {
	ID      string `json:"id"`
	Object  string `json:"object"`
	Created int64  `json:"created"`
	Model   string `json:"model"`
	Choices []struct {
		Index int     `json:"index"`
		Text  *string `json:"text"`
		Delta *struct {
			Role    *string `json:"role"`
			Content *string `json:"content"`
		} `json:"delta"`
		FinishReason *string `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		Prompt     int `json:"prompt_tokens"`
		Total      int `json:"total_tokens"`
		Completion int `json:"completion_tokens"`
	} `json:"usage"`
}

func decodeChunk(t testing.TB, s string) testChunk {
	t.Helper()
	var c testChunk
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		t.Fatalf("chunk %q: %v", s, err)
	}
	return c
}

func TestCompletionsStreamExactFraming(t *testing.T) {
	e, url := startEngine(t, Config{})
	prompt := "The quick brown fox jumps over the lazy dog."
	resp, body := post(t, url+"/v1/completions",
		`{"model":"llama-3.1-8b","prompt":"`+prompt+`","max_tokens":7,"temperature":0,"stream":true,"stream_options":{"include_usage":true}}`,
		"X-Request-Id", "req-1")
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	events := sseEvents(t, body)
	if events[len(events)-1] != "[DONE]" {
		t.Fatalf("last event %q, want [DONE]", events[len(events)-1])
	}
	tl, ok := e.Timeline("req-1")
	if !ok {
		t.Fatal("no timeline for req-1")
	}
	promptTokens := tokenizer.Reference{}.Count(prompt)
	first := decodeChunk(t, events[0])
	want := OutputText(hashString(fnvOffset, prompt), 0, nil, 7)
	words := tokenizer.Reference{}.Pieces(want)
	// Every content chunk is byte-exact vLLM framing; one token per chunk without speculation.
	for i := 0; i < 7; i++ {
		finish, usage := "null", ""
		if i == 6 {
			finish = `"length"`
		}
		exp := fmt.Sprintf(`{"id":%q,"object":"text_completion","created":%d,"model":"llama-3.1-8b","choices":[{"index":0,"text":%q,"logprobs":null,"finish_reason":%s,"stop_reason":null}]%s}`,
			first.ID, first.Created, words[i], finish, usage)
		if events[i] != exp {
			t.Fatalf("event %d:\n got %s\nwant %s", i, events[i], exp)
		}
	}
	expUsage := fmt.Sprintf(`{"id":%q,"object":"text_completion","created":%d,"model":"llama-3.1-8b","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":7,"prompt_tokens_details":{"cached_tokens":%d}}}`,
		first.ID, first.Created, promptTokens, promptTokens+7, tl.CachedTokens)
	if events[7] != expUsage || len(events) != 9 {
		t.Fatalf("usage event:\n got %s\nwant %s (%d events)", events[7], expUsage, len(events))
	}
	if tl.ResponseID != first.ID || tl.PromptTokens != promptTokens || tl.OutputTokens != 7 || len(tl.Emissions) != 7 || !tl.Done {
		t.Fatalf("timeline %+v does not match the stream", tl)
	}
	if got := tokenizer.Text(tl.OutputSeed, 0, tl.OutputTokens); got != want {
		t.Fatalf("timeline output seed gives %q, stream gave %q", got, want)
	}
}

func TestChatStreamRoleChunkAndContinuousUsage(t *testing.T) {
	_, url := startEngine(t, Config{ServedModelName: "my-model"})
	msgs := `[{"role":"system","content":"Be brief."},{"role":"user","content":"Name three colors, please."}]`
	resp, body := post(t, url+"/v1/chat/completions",
		`{"model":"my-model","messages":`+msgs+`,"max_tokens":5,"stream":true,"stream_options":{"include_usage":true,"continuous_usage_stats":true}}`)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d: %s", resp.StatusCode, body)
	}
	events := sseEvents(t, body)
	promptTokens := tokenizer.Reference{}.Count("Be brief.") + tokenizer.Reference{}.Count("Name three colors, please.")
	c0 := decodeChunk(t, events[0])
	if c0.Object != "chat.completion.chunk" || !strings.HasPrefix(c0.ID, "chatcmpl-") || c0.Model != "my-model" ||
		c0.Choices[0].Delta == nil || c0.Choices[0].Delta.Role == nil || *c0.Choices[0].Delta.Role != "assistant" ||
		*c0.Choices[0].Delta.Content != "" || c0.Usage == nil || c0.Usage.Completion != 0 {
		t.Fatalf("first chat chunk %s", events[0])
	}
	var text string
	for i, ev := range events[1:6] {
		c := decodeChunk(t, ev)
		if c.Choices[0].Delta.Role != nil {
			t.Fatalf("chunk %d repeats the role: %s", i+1, ev)
		}
		text += *c.Choices[0].Delta.Content
		if c.Usage == nil || c.Usage.Completion != i+1 || c.Usage.Prompt != promptTokens || c.Usage.Total != promptTokens+i+1 {
			t.Fatalf("chunk %d usage: %s", i+1, ev)
		}
		if (c.Choices[0].FinishReason != nil) != (i == 4) {
			t.Fatalf("chunk %d finish_reason: %s", i+1, ev)
		}
	}
	final := decodeChunk(t, events[6])
	if len(final.Choices) != 0 || final.Usage.Completion != 5 || events[7] != "[DONE]" || len(events) != 8 {
		t.Fatalf("tail events %q", events[6:])
	}
	var tok tokenizer.Reference
	if n := tok.Count(text); n != 5 {
		t.Fatalf("streamed %d tokens (%q), want 5", n, text)
	}
}

func TestNonStreamingUsageAndText(t *testing.T) {
	_, url := startEngine(t, Config{})
	for _, tc := range []struct{ path, body, object string }{
		{"/v1/completions", `{"prompt":"one two three","max_tokens":12,"temperature":0}`, "text_completion"},
		{"/v1/chat/completions", `{"messages":[{"role":"user","content":[{"type":"text","text":"one two"},{"type":"text","text":" three"}]}],"max_tokens":12,"temperature":0}`, "chat.completion"},
	} {
		resp, body := post(t, url+tc.path, tc.body)
		if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
			t.Fatalf("%s: status %d %s", tc.path, resp.StatusCode, body)
		}
		var r struct {
			Object  string `json:"object"`
			Choices []struct {
				Text    string `json:"text"`
				Message struct {
					Role, Content string
				} `json:"message"`
				FinishReason string `json:"finish_reason"`
			} `json:"choices"`
			Usage struct {
				Prompt     int `json:"prompt_tokens"`
				Completion int `json:"completion_tokens"`
				Total      int `json:"total_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			t.Fatalf("%s: %v: %s", tc.path, err, body)
		}
		text := r.Choices[0].Text + r.Choices[0].Message.Content
		var tok tokenizer.Reference
		if r.Object != tc.object || r.Usage.Prompt != 3 || r.Usage.Completion != 12 || r.Usage.Total != 15 ||
			tok.Count(text) != 12 || r.Choices[0].FinishReason != "length" {
			t.Fatalf("%s: %s", tc.path, body)
		}
	}
}

func TestModelsHealthVersionMetrics(t *testing.T) {
	_, url := startEngine(t, Config{SpecK: 3, SpecAlpha: 0.7})
	for path, want := range map[string]string{
		"/v1/models": `"id":"llama-3.1-8b"`,
		"/health":    "",
		"/version":   `"num_speculative_tokens":3`,
		"/metrics":   "vllm:num_requests_running{",
	} {
		resp, err := http.Get(url + path)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || !strings.Contains(string(b), want) {
			t.Fatalf("%s: %d %s", path, resp.StatusCode, b)
		}
	}
	post(t, url+"/v1/completions", `{"prompt":"hello","max_tokens":20,"stream":true}`)
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, name := range []string{"vllm:num_requests_waiting", "vllm:kv_cache_usage_perc", "vllm:num_preemptions_total",
		"vllm:prefix_cache_queries_total", "vllm:prefix_cache_hits_total", "vllm:spec_decode_num_draft_tokens_total",
		"vllm:spec_decode_num_accepted_tokens_total", "vllm:prompt_tokens_total",
		`vllm:time_to_first_token_seconds_bucket{model_name="llama-3.1-8b",le="+Inf"} 1`,
		`vllm:e2e_request_latency_seconds_count{model_name="llama-3.1-8b"} 1`,
		`vllm:inter_token_latency_seconds_count{model_name="llama-3.1-8b"}`,
		`vllm:generation_tokens_total{model_name="llama-3.1-8b"} 20`,
		`vllm:request_queue_time_seconds_count{model_name="llama-3.1-8b"} 1`,
		`vllm:time_per_output_token_seconds_count{model_name="llama-3.1-8b"} 1`} {
		if !strings.Contains(string(b), name) {
			t.Errorf("/metrics lacks %q", name)
		}
	}
}

// fixedNow is a frozen wall clock for tests that must not depend on elapsed time; engines
// given it need a Clock of their own.
func fixedNow() time.Time { return time.Unix(1_700_000_000, 0) }

func TestChatRoleChunkWaitsForFirstToken(t *testing.T) {
	e, url := startEngine(t, Config{Clock: &heldClock{}})
	req, _ := http.NewRequest("POST", url+"/v1/chat/completions",
		strings.NewReader(`{"messages":[{"role":"user","content":"x"}],"max_tokens":5,"stream":true}`))
	resp, err := http.DefaultClient.Do(req)
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("%v %v", resp, err)
	}
	defer resp.Body.Close()
	// No step ever ends, so no token exists: closing the engine must end a stream that has
	// sent headers but not a single chunk (vLLM sends the role chunk with the first token).
	e.Close()
	b, _ := io.ReadAll(resp.Body)
	if len(b) != 0 {
		t.Fatalf("stream sent %q before any token", b)
	}
	if r2, _ := post(t, url+"/v1/completions", `{"prompt":"x"}`); r2.StatusCode != 503 {
		t.Fatalf("request after Close: %d, want 503", r2.StatusCode)
	}
}
