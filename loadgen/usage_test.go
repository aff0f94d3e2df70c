package loadgen

import (
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/tokenizer"
)

// TestUsageCounts reads usage counts exactly and names every implausible one.
func TestUsageCounts(t *testing.T) {
	tests := []struct {
		in     string
		ct     int64
		reason string // substring of usageBad; "" when the count is good
	}{
		{`16`, 16, ""},
		{`0`, 0, ""},
		{`null`, -1, ""},
		{`1e3`, 1000, ""},
		{`1E+3`, 1000, ""},
		{`12.0`, 12, ""},
		{`1073741824`, 1 << 30, ""},
		{`1073741825`, -1, "out of range"},
		{`9223372036854775807`, -1, "out of range"},
		{`9223372036854775808`, -1, "out of range"},
		{`922337203685477580800000`, -1, "out of range"},
		{`1e+300`, -1, "out of range"},
		{`1e400`, -1, "out of range"},
		{`-3`, -1, "negative"},
		{`-0.5`, -1, "negative"},
		{`2.5`, -1, "not a whole number"},
		{`"12"`, -1, "not a number"},
		{`true`, -1, "not a number"},
		{`{"a":1}`, -1, "not a number"},
	}
	for _, tt := range tests {
		var f chunkFields
		in := `{"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":` + tt.in + `}}`
		if _, err := parseChunk([]byte(in), &f, nil); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if f.completionTokens != tt.ct || f.promptTokens != 3 {
			t.Errorf("%s: completion_tokens %d prompt %d, want %d and 3", tt.in, f.completionTokens, f.promptTokens, tt.ct)
		}
		if (tt.reason == "") != (f.usageBad == "") || !strings.Contains(f.usageBad, tt.reason) {
			t.Errorf("%s: reason %q, want one containing %q", tt.in, f.usageBad, tt.reason)
		}
	}
}

// TestReasoningAndToolCallFields separates reasoning from the answer and counts tool-call
// fragments as generated output.
func TestReasoningAndToolCallFields(t *testing.T) {
	tests := []struct {
		in             string
		text           string
		reasoningBytes int
		answer, tool   bool
		rt             int64
	}{
		{`{"choices":[{"delta":{"reasoning_content":"hmm"}}]}`, "hmm", 3, false, false, -1},
		{`{"choices":[{"delta":{"reasoning":"hm"}}]}`, "hm", 2, false, false, -1},
		{`{"choices":[{"delta":{"content":"ok"}}]}`, "ok", 0, true, false, -1},
		{`{"choices":[{"delta":{"content":null,"reasoning_content":null}}]}`, "", 0, false, false, -1},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"get","arguments":""}}]}}]}`, "get", 0, true, true, -1},
		{`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x\":"}}]}}]}`, `{"x":`, 0, true, true, -1},
		{`{"choices":[{"delta":{"tool_calls":[]}}]}`, "", 0, false, false, -1},
		{`{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[{"function":{"name":"f","arguments":"{}"}}]}}]}`, "f{}", 0, true, true, -1},
		{`{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":{"reasoning_tokens":4}}}`, "", 0, false, false, 4},
		{`{"choices":[],"usage":{"completion_tokens":9,"completion_tokens_details":null}}`, "", 0, false, false, -1},
	}
	for _, tt := range tests {
		var f chunkFields
		if _, err := parseChunk([]byte(tt.in), &f, nil); err != nil {
			t.Fatalf("%s: %v", tt.in, err)
		}
		if string(f.text) != tt.text || f.reasoningBytes != tt.reasoningBytes || f.answer != tt.answer || f.toolCall != tt.tool || f.reasoningTokens != tt.rt {
			t.Errorf("%s: text %q reasoning %d answer %v tool %v rt %d", tt.in, f.text, f.reasoningBytes, f.answer, f.toolCall, f.reasoningTokens)
		}
	}
}

// finalUsageServer streams n one-token chunks " t3" (the approximate tokenizer reads each as
// two tokens) and then the standard final chunk with empty choices and the server's usage.
func finalUsageServer(t *testing.T, n int) *httptest.Server {
	return newServer(t, func(w http.ResponseWriter, r *http.Request) {
		decodeReq(t, r)
		s := startSSE(w)
		for i := 0; i < n; i++ {
			s.data(`{"id":"c","choices":[{"index":0,"text":" t3","finish_reason":null}]}`)
		}
		s.data(fmt.Sprintf(`{"id":"c","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":%d,"total_tokens":%d}}`, n, n+9))
		s.done()
	})
}

// TestFinalUsageOnlyIsTheCount: against a server that reports usage only in its final chunk,
// output tokens equal the server's usage exactly with or without a tokenizer, TPOT is
// computed from them, and the mismatch warning still shows a tokenizer that counts twice.
func TestFinalUsageOnlyIsTheCount(t *testing.T) {
	const n = 16
	srv := finalUsageServer(t, n)
	for _, tok := range []tokenizer.Tokenizer{nil, tokenizer.Approx{}, tokenizer.Reference{}} {
		tg := target(srv.URL)
		tg.Backend = "openai"
		rec := runOne(t, Options{Target: tg, Tokenizer: tok}, oneReq("a", n))
		if !rec.OK() {
			t.Fatalf("%T: %s %s", tok, rec.Failure, rec.Error)
		}
		if rec.OutputTokens != n || rec.ServerOutputTokens != n || rec.ServerInputTokens != 9 || rec.TokenSource != metrics.TokensFromUsage {
			t.Fatalf("%T: %d output tokens (%s), server %d/%d, want %d from usage", tok, rec.OutputTokens, rec.TokenSource, rec.ServerInputTokens, rec.ServerOutputTokens, n)
		}
		for i, c := range rec.Chunks {
			if c.Tokens != 1 {
				t.Fatalf("%T: chunk %d carries %d tokens, want 1 (%s)", tok, i, c.Tokens, rec.TokenAttribution)
			}
		}
		sum, err := metrics.Summarize(metrics.SliceSource{rec}, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		want := float64(rec.End-rec.FirstToken) / 1e6 / (n - 1)
		if got := sum.Latency.TPOT.P50; math.Abs(got-want) > 0.01*want+0.002 {
			t.Errorf("%T: TPOT %v ms, want %v from %d tokens", tok, got, want, n)
		}
		// The case: the approximate tokenizer reads " t3" as two tokens.
		if _, approx := tok.(tokenizer.Approx); approx && rec.ClientOutputTokens != 2*n {
			t.Errorf("fixture: the approximate tokenizer counted %d", rec.ClientOutputTokens)
		}
		off := tok != nil && rec.ClientOutputTokens != n
		warned := strings.Contains(strings.Join(sum.Warnings, "\n"), "differs from the server's usage")
		if off != warned || off != (sum.Requests.TokenMismatch == 1) {
			t.Errorf("%T: client count %d, mismatch %v, warnings %q", tok, rec.ClientOutputTokens, sum.Requests.TokenMismatch, sum.Warnings)
		}
	}
}

// TestZeroUsagePlaceholderIsNoCount: Ollama's /v1/completions stream (v0.6.8, with
// stream_options.include_usage) carries a usage of zeros on every content chunk and the real
// counts in a final chunk with no choices. The zeros are not per-chunk counts: each chunk
// carries one token, and the total and the prompt are the final chunk's.
func TestZeroUsagePlaceholderIsNoCount(t *testing.T) {
	const n = 12
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		decodeReq(t, r)
		s := startSSE(w)
		const zero = `"usage":{"prompt_tokens":0,"completion_tokens":0,"total_tokens":0}`
		for i := 0; i < n; i++ {
			s.data(`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"ki","index":0,"finish_reason":null}],` + zero + `}`)
		}
		s.data(`{"id":"cmpl-1","object":"text_completion","choices":[{"text":"","index":0,"finish_reason":"length"}],` + zero + `}`)
		s.data(fmt.Sprintf(`{"id":"cmpl-1","object":"text_completion","choices":[],"usage":{"prompt_tokens":14,"completion_tokens":%d,"total_tokens":%d}}`, n, n+14))
		s.done()
	})
	tg := target(srv.URL)
	tg.Backend = "ollama"
	rec := runOne(t, Options{Target: tg}, oneReq("a", n))
	if !rec.OK() || rec.OutputTokens != n || rec.ServerInputTokens != 14 || rec.TokenSource != metrics.TokensFromUsage || len(rec.Chunks) != n {
		t.Fatalf("%s: %d output tokens (%s) in %d chunks, prompt %d; want %d from usage, prompt 14",
			rec.Failure, rec.OutputTokens, rec.TokenSource, len(rec.Chunks), rec.ServerInputTokens, n)
	}
	for i, c := range rec.Chunks {
		if c.Tokens != 1 {
			t.Fatalf("chunk %d carries %d tokens, want 1 (%s)", i, c.Tokens, rec.TokenAttribution)
		}
	}
}

// TestToolCallStream: a response made only of tool-call fragments is generated output: it
// sets TTFT, counts tokens and is not "empty".
func TestToolCallStream(t *testing.T) {
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		decodeReq(t, r)
		s := startSSE(w)
		s.data(`{"id":"t","choices":[{"index":0,"delta":{"role":"assistant","content":null},"finish_reason":null}]}`)
		s.data(`{"id":"t","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]},"finish_reason":null}]}`)
		for _, frag := range []string{`{\"city\":`, `\"Paris\"`, `}`} {
			s.data(`{"id":"t","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"` + frag + `"}}]},"finish_reason":null}]}`)
		}
		s.data(`{"id":"t","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		s.data(`{"id":"t","choices":[],"usage":{"prompt_tokens":20,"completion_tokens":9}}`)
		s.done()
	})
	tg := target(srv.URL)
	tg.Backend, tg.API = "openai", "chat"
	rec := runOne(t, Options{Target: tg, Tokenizer: tokenizer.Reference{}}, oneReq("tc", 32))
	if !rec.OK() {
		t.Fatalf("%s %s", rec.Failure, rec.Error)
	}
	if len(rec.Chunks) != 4 || rec.FirstToken != rec.Chunks[0].T || rec.FirstAnswer != rec.FirstToken || rec.OutputTokens != 9 || rec.OutputHash == "" {
		t.Fatalf("record %+v", rec)
	}
}

// TestSSEErrorField: llama.cpp writes an error in a started stream as an "error:" line; the
// reader delivers it as an "error" event.
func TestSSEErrorField(t *testing.T) {
	sr := newSSEReader(strings.NewReader("data: {\"choices\":[{\"text\":\" a\"}]}\n\nerror: {\"error\":{\"code\":500,\"message\":\"boom\"}}\n\n"), 64)
	if d, ev, err := sr.next(); err != nil || len(ev) != 0 || !strings.Contains(string(d), " a") {
		t.Fatalf("first event %q %q %v", d, ev, err)
	}
	d, ev, err := sr.next()
	if err != nil || string(ev) != "error" || !strings.Contains(string(d), "boom") {
		t.Fatalf("error event %q %q %v", d, ev, err)
	}
}

// TestStreamErrorFramesOfLlamacpp: a started stream that ends in an error is a server error
// with the server's message, in both framings llama.cpp has used: today's data line with an
// "error" object (and no [DONE]), and earlier builds' "error:" field holding the bare
// {"code","message","type"} object, followed by data: [DONE].
func TestStreamErrorFramesOfLlamacpp(t *testing.T) {
	for name, tail := range map[string]string{
		"data line":  "data: {\"error\":{\"code\":500,\"message\":\"slot failed\",\"type\":\"server_error\"}}\n\n",
		"error line": "error: {\"code\":500,\"message\":\"slot failed\",\"type\":\"server_error\"}\n\ndata: [DONE]\n\n",
	} {
		t.Run(name, func(t *testing.T) {
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				decodeReq(t, r)
				s := startSSE(w)
				s.data(textChunk(" a", -1))
				s.raw(tail)
			})
			rec := runOne(t, Options{Target: target(srv.URL)}, oneReq("e", 8))
			if rec.Failure != metrics.FailServerError || rec.Error != "error in stream: slot failed" || len(rec.Chunks) != 1 {
				t.Fatalf("failure %q, error %q, %d chunks", rec.Failure, rec.Error, len(rec.Chunks))
			}
		})
	}
}
