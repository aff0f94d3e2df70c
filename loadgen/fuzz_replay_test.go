package loadgen

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// FuzzTraceToReplay: whatever trace validation accepts, building its requests for the wire
// (prompt synthesis, chat messages, the JSON body, the X-Request-Id header) must work: no
// panic, no allocation past the documented bounds, a body that is valid JSON with the
// requested max_tokens, and a header value net/http accepts. Issue 14 class 1: a trace that
// validated and then panicked every replay.
func FuzzTraceToReplay(f *testing.F) {
	for _, s := range []string{
		`{"arrival_s":0,"input_tokens":9223372036854775807,"output_tokens":4}`,
		`{"id":"a","arrival_s":0.5,"input_tokens":1048576,"output_tokens":1048576}`,
		`{"id":"s1","arrival_s":1,"input_tokens":3,"output_tokens":2,"session":"s","turn":1,"think_s":2}` + "\n" +
			`{"id":"s2","arrival_s":1,"input_tokens":5,"output_tokens":2,"session":"s","turn":2}`,
		`{"arrival_s":0,"input_tokens":7,"output_tokens":1,"messages":[{"role":"user","content":"hi"}]}`,
		`{"arrival_s":0,"input_tokens":40,"output_tokens":1,"hash_ids":[1,2,-9223372036854775808]}`,
		"{\"id\":\"x\\u0001\",\"arrival_s\":9e9,\"input_tokens\":1,\"output_tokens\":1}",
	} {
		f.Add([]byte(s))
	}
	c, err := newClient(Target{URL: "http://127.0.0.1:1", Model: "m", Stream: true}, nil)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		reqs, err := traces.Read(bytes.NewReader(data), "fuzz.jsonl", traces.ReadOptions{Lenient: true})
		if err != nil {
			return
		}
		r := &runner{c: c, prompter: workloads.NewPrompter(nil, 1, 16)}
		for i := range reqs {
			q := &reqs[i]
			if q.InputTokens > traces.MaxTokens || q.OutputTokens > traces.MaxTokens ||
				q.Arrival > traces.MaxSeconds*time.Second || q.Think > traces.MaxSeconds*time.Second || len(q.ID) > traces.MaxIDBytes {
				t.Fatalf("validation passed a request past the bounds: %+v", q)
			}
			if q.InputTokens > 1<<14 {
				q.InputTokens = 1 << 14 // the cap itself is built once in TestPromptAtTheTokenCap
			}
			k := r.buildCall(&item{turns: []*traces.Request{q}}, 0, nil)
			if k.bodyErr != nil {
				t.Fatalf("request %s: %v", q.ID, k.bodyErr)
			}
			var w wireReq
			if err := json.Unmarshal(k.body, &w); err != nil || w.MaxTokens != q.OutputTokens {
				t.Fatalf("body %.200s: %v (max_tokens %d, want %d)", k.body, err, w.MaxTokens, q.OutputTokens)
			}
			if !validHeaderValue(k.requestID) {
				t.Fatalf("id %q cannot be sent as X-Request-Id", k.requestID)
			}
		}
	})
}

func validHeaderValue(v string) bool {
	for i := 0; i < len(v); i++ {
		if c := v[i]; c < 0x20 && c != '\t' || c == 0x7f {
			return false
		}
	}
	return true
}

// TestPromptAtTheTokenCap: a prompt of exactly traces.MaxTokens is built (class 1 at its
// bound), and one past it is refused as a malformed request, never built.
func TestPromptAtTheTokenCap(t *testing.T) {
	c, err := newClient(Target{URL: "http://127.0.0.1:1", Model: "m", Stream: true}, nil)
	if err != nil {
		t.Fatal(err)
	}
	r := &runner{c: c, prompter: workloads.NewPrompter(nil, 1, 0)}
	q := &traces.Request{ID: "cap", InputTokens: traces.MaxTokens, OutputTokens: 1}
	if k := r.buildCall(&item{turns: []*traces.Request{q}}, 0, nil); k.bodyErr != nil || len(k.body) < traces.MaxTokens {
		t.Fatalf("at the cap: %v, body of %d bytes", k.bodyErr, len(k.body))
	}
	q = &traces.Request{ID: "past", InputTokens: 1 << 62, OutputTokens: 1}
	if k := r.buildCall(&item{turns: []*traces.Request{q}}, 0, nil); k.bodyErr == nil {
		t.Fatal("a request past the cap was built")
	}
}
