package loadgen

import (
	"encoding/json"
	"fmt"
	"net/http"
	"reflect"
	"testing"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// TestCaptureOutput: a request with expect keeps its answer text (reasoning left out) and its
// tool calls assembled from vLLM/OpenAI delta fragments, streamed and whole, for chat and
// completions; the trace's tools, tool_choice and response_format reach the body verbatim; a
// request without expect keeps nothing unless KeepOutput is set.
func TestCaptureOutput(t *testing.T) {
	const tools = `[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}]`
	var seen []map[string]json.RawMessage
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		var body map[string]json.RawMessage
		if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
			t.Errorf("body: %v", err)
		}
		seen = append(seen, body)
		stream := string(body["stream"]) == "true"
		chat := r.URL.Path == "/v1/chat/completions"
		if !stream {
			w.Header().Set("Content-Type", "application/json")
			if chat {
				fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"message":{"role":"assistant","content":null,"tool_calls":[{"id":"call_9","type":"function","function":{"name":"get_weather","arguments":"{\"city\":\"Paris\"}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":4,"completion_tokens":20}}`)
			} else {
				fmt.Fprint(w, `{"id":"x","choices":[{"index":0,"text":" 42 is it","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":3}}`)
			}
			return
		}
		s := startSSE(w)
		if !chat {
			s.data(textChunk(" the", -1))
			s.data(textChunk(" answer", -1))
			s.done()
			return
		}
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`)
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"reasoning_content":"let me think"}}]}`)
		s.data(chatChunk("Calling."))
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"get_weather","arguments":""}}]}}]}`)
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\":"}}]}}]}`)
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"call_2","type":"function","function":{"name":"get_time","arguments":"{}"}}]}}]}`)
		s.data(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":" \"Paris\"}"}}]}}]}`)
		s.data(`{"id":"c","choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		s.done()
	})
	expect := []traces.Expectation{{Kind: traces.CheckJSON}}
	chatReq := traces.Request{ID: "c", InputTokens: 5, OutputTokens: 20, Expect: expect,
		Messages: []traces.Message{{Role: "user", Content: "weather?"}},
		Tools:    json.RawMessage(tools), ToolChoice: json.RawMessage(`"auto"`),
		ResponseFormat: json.RawMessage(`{"type":"json_object"}`)}
	compReq := traces.Request{ID: "p", InputTokens: 5, OutputTokens: 3, Prompt: "q", Expect: expect}
	wantStreamCalls := []metrics.ToolCall{{ID: "call_1", Name: "get_weather", Arguments: `{"city": "Paris"}`}, {ID: "call_2", Name: "get_time", Arguments: "{}"}}
	for _, c := range []struct {
		name      string
		stream    bool
		req       traces.Request
		keep      bool
		wantText  string
		wantCalls []metrics.ToolCall
	}{
		{"chat stream", true, chatReq, false, "Calling.", wantStreamCalls},
		{"chat whole", false, chatReq, false, "", []metrics.ToolCall{{ID: "call_9", Name: "get_weather", Arguments: `{"city":"Paris"}`}}},
		{"completion stream", true, compReq, false, " the answer", nil},
		{"completion whole", false, compReq, false, " 42 is it", nil},
		{"no expect", true, oneReq("n", 2), false, "", nil},
		{"no expect, kept", true, oneReq("k", 2), true, " the answer", nil},
	} {
		seen = nil
		tg := target(srv.URL)
		tg.Stream = c.stream
		tg.Backend = "vllm"
		rec := runOne(t, Options{Target: tg, KeepOutput: c.keep}, c.req)
		if !rec.OK() {
			t.Fatalf("%s: failed: %s %s", c.name, rec.Failure, rec.Error)
		}
		if rec.OutputText != c.wantText || !reflect.DeepEqual(rec.ToolCalls, c.wantCalls) {
			t.Errorf("%s: text %q calls %+v; want %q %+v", c.name, rec.OutputText, rec.ToolCalls, c.wantText, c.wantCalls)
		}
		if len(seen) != 1 {
			t.Fatalf("%s: %d requests", c.name, len(seen))
		}
		if _, eos := seen[0]["ignore_eos"]; eos != (len(c.req.Expect) == 0) {
			t.Errorf("%s: ignore_eos sent: %v (a graded request must end where the model ends)", c.name, eos)
		}
		if c.req.ID == "c" {
			if string(seen[0]["tools"]) != tools || string(seen[0]["tool_choice"]) != `"auto"` || string(seen[0]["response_format"]) != `{"type":"json_object"}` {
				t.Errorf("%s: body tools %s tool_choice %s response_format %s", c.name, seen[0]["tools"], seen[0]["tool_choice"], seen[0]["response_format"])
			}
		} else if _, ok := seen[0]["tools"]; ok {
			t.Errorf("%s: tools sent for a request without them", c.name)
		}
	}
}

// FuzzCapture: any chunk the server sends leaves the capture within its bounds.
func FuzzCapture(f *testing.F) {
	f.Add([]byte(`{"choices":[{"index":0,"delta":{"content":"hi","tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]}}]}`))
	f.Add([]byte(`{"choices":[{"message":{"content":null,"tool_calls":[{"function":{"name":"g","arguments":{"x":1}}}]}}]}`))
	f.Add([]byte(`{"choices":[{"text":"x"}]}`))
	f.Add([]byte(`{"choices":[{"delta":{"tool_calls":[{"index":-7,"function":{"arguments":null}}]}}]}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		var c capture
		for i := 0; i < 3; i++ {
			c.add(data)
		}
		var rec metrics.Record
		c.store(&rec)
		if len(rec.OutputText) > metrics.MaxOutputText || len(rec.ToolCalls) > maxToolCalls {
			t.Fatalf("capture past its bounds: %d bytes, %d calls", len(rec.OutputText), len(rec.ToolCalls))
		}
		for _, tc := range rec.ToolCalls {
			if len(tc.Arguments) > metrics.MaxOutputText || len(tc.Name) > maxToolName {
				t.Fatalf("arguments of %d bytes", len(tc.Arguments))
			}
		}
	})
}
