package loadgen

import (
	"strings"
	"testing"
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
