package refengine

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
)

// streamEvents posts a streamed request and returns the data of every SSE event (without
// [DONE]) and whether [DONE] came.
func streamEvents(t *testing.T, url string, chat bool, body string) ([]map[string]any, []string, bool) {
	t.Helper()
	path := "/v1/completions"
	if chat {
		path = "/v1/chat/completions"
	}
	resp, err := http.Post(url+path, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var evs []map[string]any
	var lines []string
	done := false
	for _, ev := range strings.Split(string(raw), "\n\n") {
		d, ok := strings.CutPrefix(ev, "data: ")
		if !ok {
			continue
		}
		if d == "[DONE]" {
			done = true
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(d), &m); err != nil {
			t.Fatalf("event %q: %v", d, err)
		}
		evs = append(evs, m)
		lines = append(lines, d)
	}
	return evs, lines, done
}

// TestPersonalityFraming checks, per personality, the framing its source shows: where the
// role, the finish reason and the usage go, whether each token is its own event, and the
// extra fields.
func TestPersonalityFraming(t *testing.T) {
	const n = 6
	body := `{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":6,"stream":true,"stream_options":{"include_usage":true}}`
	type shape struct {
		events      int    // events before [DONE]
		firstRole   bool   // the first event is a role-only prelude
		finishEmpty bool   // the finish reason comes in a chunk without text
		usageLast   string // "empty-choices", "finish", "last-content"
		contains    []string
	}
	want := map[string]shape{
		"vllm":     {events: 1 + n + 1, firstRole: true, usageLast: "empty-choices", contains: []string{`"stop_reason":null`}},
		"sglang":   {events: 1 + n + 1 + 1, firstRole: true, finishEmpty: true, usageLast: "empty-choices", contains: []string{`"usage":null`}},
		"llamacpp": {events: 1 + n + 1, firstRole: true, finishEmpty: true, usageLast: "finish", contains: []string{`"content":null`, `"timings":{"cache_n":0,"prompt_n":`, `"system_fingerprint":"b`}},
		"tgi":      {events: n, usageLast: "last-content", contains: []string{`"role":"assistant","content":" `, `-native"`}},
		"ollama":   {events: n + 1 + 1, finishEmpty: true, usageLast: "empty-choices", contains: []string{`"system_fingerprint":"fp_ollama"`, `"role":"assistant","content":" `}},
		"openai":   {events: 1 + n + 1 + 1, firstRole: true, finishEmpty: true, usageLast: "empty-choices", contains: []string{`"refusal":null`, `"obfuscation":"`, `"usage":null`}},
	}
	for _, w := range Wires {
		t.Run(w, func(t *testing.T) {
			_, url := startEngine(t, Config{Wire: w, Seed: 1, TimeScale: 1000})
			evs, lines, done := streamEvents(t, url, true, body)
			sh := want[w]
			if !done || len(evs) != sh.events {
				t.Fatalf("%d events (done %v), want %d:\n%s", len(evs), done, sh.events, strings.Join(lines, "\n"))
			}
			all := strings.Join(lines, "\n")
			for _, s := range sh.contains {
				if !strings.Contains(all, s) {
					t.Errorf("no %s in\n%s", s, all)
				}
			}
			choice := func(m map[string]any) map[string]any {
				cs, _ := m["choices"].([]any)
				if len(cs) == 0 {
					return nil
				}
				c, _ := cs[0].(map[string]any)
				return c
			}
			if c := choice(evs[0]); sh.firstRole != (c != nil && c["delta"].(map[string]any)["role"] == "assistant" && len(lines) > 0 && !strings.Contains(lines[0], `"content":" `)) {
				t.Errorf("first event %s: role prelude %v", lines[0], !sh.firstRole)
			}
			var text strings.Builder
			var finishAt, usageAt int = -1, -1
			for i, m := range evs {
				if c := choice(m); c != nil {
					d, _ := c["delta"].(map[string]any)
					s, _ := d["content"].(string)
					text.WriteString(s)
					if c["finish_reason"] != nil {
						finishAt = i
						if sh.finishEmpty != (s == "") {
							t.Errorf("finish chunk %s", lines[i])
						}
					}
				}
				if u, ok := m["usage"].(map[string]any); ok {
					usageAt = i
					if u["completion_tokens"] != float64(n) {
						t.Errorf("usage %v", u)
					}
				}
			}
			if strings.Count(text.String(), " ") != n {
				t.Errorf("text %q: want %d words", text.String(), n)
			}
			switch sh.usageLast {
			case "empty-choices":
				if usageAt != len(evs)-1 || choice(evs[usageAt]) != nil {
					t.Errorf("usage in event %d of %d", usageAt, len(evs))
				}
			case "finish", "last-content":
				if usageAt != finishAt || usageAt != len(evs)-1 {
					t.Errorf("usage in event %d, finish in %d", usageAt, finishAt)
				}
			}
		})
	}
}

// TestSpeculativeFraming: a verification pass is one chunk on vLLM and a burst of one event
// per token on llama.cpp.
func TestSpeculativeFraming(t *testing.T) {
	body := `{"model":"llama-3.1-8b","prompt":"hi","max_tokens":40,"stream":true}`
	counts := map[string]int{}
	for _, w := range []string{"vllm", "llamacpp"} {
		_, url := startEngine(t, Config{Wire: w, Seed: 1, TimeScale: 1000, SpecK: 4, SpecAlpha: 0.9})
		evs, _, _ := streamEvents(t, url, false, body)
		counts[w] = len(evs)
	}
	if counts["llamacpp"] != 40+1 || counts["vllm"] >= 30 {
		t.Fatalf("events: %v (llama.cpp: one per token and a finish chunk; vLLM: one per pass)", counts)
	}
}

// TestLlamacppUsageWithoutAsking: llama.cpp reports usage whatever include_usage says; vLLM
// only when asked.
func TestLlamacppUsageWithoutAsking(t *testing.T) {
	body := `{"model":"llama-3.1-8b","prompt":"hi","max_tokens":4,"stream":true}`
	for w, usage := range map[string]bool{"llamacpp": true, "vllm": false, "openai": false} {
		_, url := startEngine(t, Config{Wire: w, Seed: 1, TimeScale: 1000})
		_, lines, _ := streamEvents(t, url, false, body)
		if got := strings.Contains(strings.Join(lines, "\n"), `"completion_tokens":4`); got != usage {
			t.Errorf("%s: usage sent %v, want %v", w, got, usage)
		}
	}
}

func TestWireValidated(t *testing.T) {
	if _, err := New(Config{Wire: "vlm"}); err == nil || !strings.Contains(err.Error(), "llamacpp") {
		t.Fatalf("unknown wire: %v", err)
	}
	if _, err := New(Config{ReasoningFraction: 1}); err == nil {
		t.Fatal("ReasoningFraction 1 accepted")
	}
}

// TestReasoningWholeResponse: a non-streamed chat answer in reasoning mode carries the
// reasoning in message.reasoning_content and its count in the usage details.
func TestReasoningWholeResponse(t *testing.T) {
	_, url := startEngine(t, Config{Seed: 1, TimeScale: 1000, ReasoningFraction: 0.5})
	resp, err := http.Post(url+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"llama-3.1-8b","messages":[{"role":"user","content":"hi"}],"max_tokens":8}`))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var v struct {
		Choices []struct {
			Message struct {
				Content          string `json:"content"`
				ReasoningContent string `json:"reasoning_content"`
			}
		}
		Usage struct {
			CompletionTokens        int `json:"completion_tokens"`
			CompletionTokensDetails struct {
				ReasoningTokens int `json:"reasoning_tokens"`
			} `json:"completion_tokens_details"`
		}
	}
	if err := json.NewDecoder(resp.Body).Decode(&v); err != nil {
		t.Fatal(err)
	}
	m := v.Choices[0].Message
	if strings.Count(m.ReasoningContent, " ") != 4 || strings.Count(m.Content, " ") != 4 || v.Usage.CompletionTokens != 8 || v.Usage.CompletionTokensDetails.ReasoningTokens != 4 {
		t.Fatalf("response %+v", v)
	}
}
