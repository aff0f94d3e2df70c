package loadgen

import (
	"testing"
)

// TestParseErrorBody reads each server's error shape: type, code, and the numbers of a
// context-length error, from fields or from the message.
func TestParseErrorBody(t *testing.T) {
	for _, tc := range []struct {
		name, body, typ, code string
		ctxErr                bool
		prompt, ctx           int
	}{
		{"llama.cpp", `{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`,
			"exceed_context_size_error", "400", true, 4476, 4096},
		{"vllm top-level", `{"object":"error","message":"This model's maximum context length is 2048 tokens. However, you requested 2100 tokens (2090 in the messages, 10 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`,
			"BadRequestError", "400", true, 2090, 2048},
		{"vllm nested", `{"error":{"message":"This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens.","type":"BadRequestError","param":null,"code":400}}`,
			"BadRequestError", "400", true, 9000, 8192},
		{"sglang", `{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","param":null,"code":400}`,
			"BadRequestError", "400", true, 5000, 4096},
		{"openai", `{"error":{"message":"This model's maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}`,
			"invalid_request_error", "context_length_exceeded", true, 130000, 128000},
		{"reference engine", `{"error":{"message":"This model's maximum context length is 100 tokens, but the prompt has 120 tokens; shorten the prompt.","type":"invalid_request_error","param":"prompt","code":"invalid_value"}}`,
			"invalid_request_error", "invalid_value", true, 120, 100},
		{"tgi", `{"error":"Input validation error: something else","error_type":"validation"}`, "validation", "", false, 0, 0},
		{"anthropic", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, "overloaded_error", "", false, 0, 0},
		{"rate limit", `{"error":{"message":"slow down","type":"rate_limit","code":429}}`, "rate_limit", "429", false, 0, 0},
		{"hostile numbers", `{"error":{"message":"context size exceeded","type":"exceed_context_size_error","n_prompt_tokens":-5,"n_ctx":1e300}}`,
			"exceed_context_size_error", "", true, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d, ok := parseErrorBody([]byte(tc.body))
			if !ok {
				t.Fatal("not parsed")
			}
			hit := d.contextLength()
			if d.typ != tc.typ || d.code != tc.code || hit != tc.ctxErr || d.promptTokens != tc.prompt || d.contextTokens != tc.ctx {
				t.Errorf("got type %q code %q context %v prompt %d ctx %d; want %q %q %v %d %d",
					d.typ, d.code, hit, d.promptTokens, d.contextTokens, tc.typ, tc.code, tc.ctxErr, tc.prompt, tc.ctx)
			}
		})
	}
	if _, ok := parseErrorBody([]byte("upstream timed out")); ok {
		t.Error("plain text parsed as an error object")
	}
}

// TestParseTokenizeCount reads each server's /tokenize answer and refuses nonsense.
func TestParseTokenizeCount(t *testing.T) {
	for body, want := range map[string]int{
		`{"count":5,"max_model_len":4096,"tokens":[1,2,3,4,5]}`: 5,
		`{"tokens":[1,2,3]}`: 3,
		`{"tokens":[{"id":1,"piece":"<s>"},{"id":2,"piece":"▁hi"}]}`: 2,
		`{"count":0,"tokens":[]}`:                                    0,
		`{"count":-1}`:                                               -1,
		`{"count":99999999999}`:                                      -1,
		`{"model":"x"}`:                                              -1,
		`[1,2]`:                                                      -1,
		`{"count":"5"}`:                                              -1,
	} {
		got, err := parseTokenizeCount([]byte(body))
		if (err != nil) != (want < 0) || (err == nil && got != want) {
			t.Errorf("%s: got %d, %v; want %d", body, got, err, want)
		}
	}
}

// FuzzErrorBody: no error body makes the parser panic, and the numbers it keeps are counts.
func FuzzErrorBody(f *testing.F) {
	f.Add([]byte(`{"error":{"code":400,"message":"request (4476 tokens) exceeds the available context size (4096 tokens)","type":"exceed_context_size_error","n_prompt_tokens":4476,"n_ctx":4096}}`))
	f.Add([]byte(`{"object":"error","message":"The input (5000 tokens) is longer than the model's context length (4096 tokens).","type":"BadRequestError","code":400}`))
	f.Add([]byte(`{"error":"x","error_type":"y"}`))
	f.Add([]byte(`{"error":{"code":"context_length_exceeded","n_ctx":"12"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		d, ok := parseErrorBody(b)
		if !ok {
			d = errDetail{message: string(b)}
		}
		d.contextLength()
		if d.promptTokens < 0 || d.contextTokens < 0 || d.promptTokens > maxErrorCount || d.contextTokens > maxErrorCount {
			t.Fatalf("counts %d %d out of range", d.promptTokens, d.contextTokens)
		}
	})
}

// FuzzTokenizeResponse: no /tokenize answer makes the parser panic or return a negative count.
func FuzzTokenizeResponse(f *testing.F) {
	f.Add([]byte(`{"count":5,"max_model_len":4096,"tokens":[1,2,3,4,5]}`))
	f.Add([]byte(`{"tokens":[{"id":1,"piece":"a"}]}`))
	f.Add([]byte(`{"count":null,"tokens":null}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		n, err := parseTokenizeCount(b)
		if err == nil && n < 0 {
			t.Fatalf("count %d", n)
		}
	})
}
