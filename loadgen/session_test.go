package loadgen

import (
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// agentTurn is turn n of session s with the given dependencies (nil: the previous turn).
func agentTurn(id, s string, n int, after []int, think, tool time.Duration) traces.Request {
	r := at(id, 0)
	r.Prompt = ""
	r.Messages = []traces.Message{{Role: "user", Content: "q" + id}}
	r.Session, r.Turn, r.After, r.Think, r.ToolDelay = s, n, after, think, tool
	return r
}

// TestGraphSessionFanOutAndJoin: sub-agents start when their parent ends plus their tool
// delay, run in parallel, and the join waits for the last of them plus its think time,
// carrying the first dependency's conversation and the other's reply. Times are exact
// (virtual clock).
func TestGraphSessionFanOutAndJoin(t *testing.T) {
	e := &slowEngine{service: 50 * time.Millisecond, chunks: 1}
	reqs := []traces.Request{
		agentTurn("plan", "s1", 1, nil, 0, 0),
		agentTurn("a", "s1", 2, []int{1}, 0, 100*time.Millisecond),
		agentTurn("b", "s1", 3, []int{1}, 0, 120*time.Millisecond),
		agentTurn("join", "s1", 4, []int{2, 3}, 30*time.Millisecond, 0),
		at("solo", 10),
	}
	reqs[0].Affinity = "pin-7"
	res, recs := virtualRun(t, e, reqs, Options{Target: Target{SessionHeader: "X-Session-Id"}}, 0)
	if res.Succeeded != 5 || len(recs) != 5 {
		t.Fatalf("result %+v, %d records", res, len(recs))
	}
	by := map[string]metrics.Record{}
	for _, r := range recs {
		by[r.ID] = r
	}
	plan, a, b, join := by["plan"], by["a"], by["b"], by["join"]
	if plan.Intended != 0 || plan.After != "" {
		t.Errorf("plan intended %d after %q", plan.Intended, plan.After)
	}
	if a.Intended != plan.End+100*ms || a.After != "plan" || a.ToolDelay != 100*ms || a.Think != 0 {
		t.Errorf("a: intended %d (plan ended %d), after %q, tool %d", a.Intended, plan.End, a.After, a.ToolDelay)
	}
	if b.Intended != plan.End+120*ms || b.ToolDelay != 120*ms {
		t.Errorf("b: intended %d, want plan's end + 120ms", b.Intended)
	}
	if a.End <= b.Sent {
		t.Errorf("a (ended %d) and b (sent %d) did not overlap: the sub-agents ran one after the other", a.End, b.Sent)
	}
	if join.Intended != b.End+30*ms || join.After != "b" || join.Think != 30*ms {
		t.Errorf("join: intended %d, want b's end %d + 30ms; after %q", join.Intended, b.End, join.After)
	}
	m := e.messages["join"]
	var got []string
	for _, x := range m {
		got = append(got, x.Role+":"+x.Content)
	}
	want := "user:qplan,assistant: replyplan,user:qa,assistant: replya,assistant: replyb,user:qjoin"
	if strings.Join(got, ",") != want {
		t.Errorf("join carried %s\nwant %s", strings.Join(got, ","), want)
	}
	for id, v := range map[string]string{"plan": "pin-7", "a": "s1", "join": "s1", "solo": ""} {
		if e.affinity[id] != v {
			t.Errorf("%s: session header %q, want %q", id, e.affinity[id], v)
		}
	}

	// Without a header name, none is sent.
	e = &slowEngine{service: 50 * time.Millisecond, chunks: 1}
	virtualRun(t, e, reqs, Options{}, 0)
	if e.affinity["a"] != "" {
		t.Errorf("header sent without SessionHeader: %q", e.affinity["a"])
	}
}

// TestGraphSessionDependencyFailed: a turn whose dependency failed is not sent; it and its own
// dependents are recorded as dropped, naming the failed turn, while an independent branch of
// the same session goes on. Every turn has exactly one record.
func TestGraphSessionDependencyFailed(t *testing.T) {
	e := &slowEngine{service: 50 * time.Millisecond, chunks: 1, fail: map[string]bool{"a": true}}
	reqs := []traces.Request{
		agentTurn("plan", "s1", 1, nil, 0, 0),
		agentTurn("a", "s1", 2, []int{1}, 0, 0),
		agentTurn("b", "s1", 3, []int{1}, 0, 0),
		agentTurn("join", "s1", 4, []int{2, 3}, 0, 0),
		agentTurn("after-join", "s1", 5, nil, 0, 0),
		agentTurn("b2", "s1", 6, []int{3}, 0, 0),
	}
	res, recs := virtualRun(t, e, reqs, Options{}, 0)
	if len(recs) != 6 || res.Succeeded != 3 || res.Dropped != 2 || res.Failed != 3 {
		t.Fatalf("result %+v with %d records", res, len(recs))
	}
	by := map[string]metrics.Record{}
	for _, r := range recs {
		by[r.ID] = r
	}
	if by["a"].Failure != metrics.FailHTTP5xx {
		t.Errorf("a: %q", by["a"].Failure)
	}
	for _, id := range []string{"join", "after-join"} {
		r := by[id]
		if r.Failure != metrics.FailDropped || r.Sent != 0 {
			t.Errorf("%s: failure %q sent %d, want dropped", id, r.Failure, r.Sent)
		}
	}
	if !strings.Contains(by["join"].Error, "turn 2 (a) of this session") || !strings.Contains(by["after-join"].Error, "turn 4 (join)") {
		t.Errorf("drop messages: %q / %q", by["join"].Error, by["after-join"].Error)
	}
	if by["b2"].Failure != "" || by["b2"].After != "b" {
		t.Errorf("b2 (an independent branch): %+v", by["b2"])
	}
	if _, seen := e.arrived["join"]; seen {
		t.Error("the join was sent although a dependency failed")
	}
}

// TestGraphSessionBadDependency: a Request built in code with a dependency on a missing turn
// is refused before anything is sent.
func TestGraphSessionBadDependency(t *testing.T) {
	reqs := []traces.Request{agentTurn("a", "s1", 1, nil, 0, 0), agentTurn("b", "s1", 2, []int{9}, 0, 0)}
	_, err := Run(t.Context(), reqs, Options{Target: target("http://127.0.0.1:1")}, nil)
	if err == nil || !strings.Contains(err.Error(), "no turn 9 in session") {
		t.Fatalf("error %v", err)
	}
}
