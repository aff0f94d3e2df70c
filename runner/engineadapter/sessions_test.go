package engineadapter

import (
	"context"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
)

// bubbleClock is a refengine.Clock on a synctest bubble's time.
type bubbleClock struct{ epoch time.Time }

func (c *bubbleClock) Now() time.Duration             { return time.Since(c.epoch) }
func (c *bubbleClock) Wall(d time.Duration) time.Time { return c.epoch.Add(d) }
func (c *bubbleClock) SleepUntil(ctx context.Context, t time.Duration) error {
	return sleepCtx(ctx, t-c.Now())
}

// loadClock is a loadgen.Clock on the bubble's time.
type loadClock struct{}

func (loadClock) Now() time.Time { return time.Now() }
func (loadClock) SleepUntil(ctx context.Context, t time.Time) error {
	return sleepCtx(ctx, time.Until(t))
}

func sleepCtx(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	tm := time.NewTimer(d)
	defer tm.Stop()
	select {
	case <-tm.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// agenticTrace is three agentic sessions (a plan, sub-agents after tool delays, a join after
// a think time, a last call) and two requests outside sessions, with shared prefixes.
func agenticTrace() []traces.Request {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var reqs []traces.Request
	for k, s := range []string{"s1", "s2", "s3"} {
		start := ms(k * 90)
		turn := func(n, in, out int, after []int, think, tool time.Duration) traces.Request {
			return traces.Request{ID: s + "-" + string(rune('0'+n)), Session: s, Turn: n, InputTokens: in, OutputTokens: out,
				After: after, Think: think, ToolDelay: tool, Arrival: start + ms(n*10), HashIDs: []int64{1, int64(10 + k)}}
		}
		// input_tokens are whole prompts: each turn's context grows past what it carries (the
		// join's holds turn 2's prompt and reply and turns 3 and 4's replies: 1,600 tokens),
		// except turn 4, which is shorter than turn 1's conversation (compacted: it carries none).
		reqs = append(reqs,
			turn(1, 1200, 40, nil, 0, 0),
			turn(2, 1500, 30, []int{1}, 0, ms(150)),
			turn(3, 1400, 50, []int{1}, 0, ms(40)),
			turn(4, 900, 20, []int{1}, 0, ms(95)),
			turn(5, 1800, 60, []int{2, 3, 4}, ms(500), 0),
			turn(6, 2000, 25, nil, 0, ms(75)),
		)
	}
	reqs = append(reqs,
		traces.Request{ID: "x1", Arrival: ms(120), InputTokens: 2000, OutputTokens: 80, HashIDs: []int64{1, 2, 3}},
		traces.Request{ID: "x2", Arrival: ms(400), InputTokens: 700, OutputTokens: 120})
	traces.SortByArrival(reqs)
	return reqs
}

// TestSimulateSessionsAgreeWithRun replays an agentic trace over HTTP against the reference
// engine on virtual time and simulates it, and compares both against the engines' own
// timelines: simulate releases every turn exactly think + tool after the dependency that
// released it finished, as run does; each request reaches the engine with the same prompt
// length; and each session's wall time (its last finish less its first arrival, on each
// engine's timeline) agrees. On virtual time the HTTP round trip takes no time, so the two
// agree exactly: every request's arrival and finish, to the nanosecond.
func TestSimulateSessionsAgreeWithRun(t *testing.T) {
	reqs := agenticTrace()
	cfg := refengine.Config{Seed: 3}

	simTL := map[string]refengine.Timeline{}
	simRec := map[string]*metrics.Record{}
	var simRecs metrics.SliceSource
	a := &Simulator{Config: cfg, RateScale: 1}
	st, _, err := a.produceSessions(reqs, time.Hour, nil, func(r *metrics.Record) {
		simRec[r.ID] = r
		simRecs = append(simRecs, *r)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(simRec) != len(reqs) || st.Makespan <= 0 {
		t.Fatalf("%d records for %d requests, makespan %v", len(simRec), len(reqs), st.Makespan)
	}
	for id, r := range simRec {
		simTL[id] = refengine.Timeline{Arrival: time.Duration(r.Intended), Finish: time.Duration(r.End), PromptTokens: r.InputTokens}
	}

	var runTL map[string]refengine.Timeline
	var runRecs metrics.SliceSource
	synctest.Test(t, func(t *testing.T) {
		live := cfg
		live.Clock = &bubbleClock{epoch: time.Now()}
		eng, ln, stop := bubbleEngine(t, live)
		defer stop()
		replayInto(t, reqs, bubbleOptions(eng, ln, "vllm", "", true), (*[]metrics.Record)(&runRecs))
		runTL = map[string]refengine.Timeline{}
		for _, r := range runRecs {
			g, ok := eng.Timeline(r.ID)
			if !ok || !r.OK() {
				t.Fatalf("%s: ok %v %s %s", r.ID, ok, r.Failure, r.Error)
			}
			runTL[r.ID] = g
		}
	})

	for _, q := range reqs {
		s, r := simTL[q.ID], runTL[q.ID]
		if s.PromptTokens != q.InputTokens {
			t.Errorf("%s: simulate sent %d prompt tokens, the trace's whole prompt is %d", q.ID, s.PromptTokens, q.InputTokens)
		}
		if s.PromptTokens != r.PromptTokens || s.Arrival != r.Arrival || s.Finish != r.Finish {
			t.Errorf("%s: simulate %d prompt tokens %v..%v, run's engine %d prompt tokens %v..%v", q.ID,
				s.PromptTokens, s.Arrival, s.Finish, r.PromptTokens, r.Arrival, r.Finish)
		}
		rec := simRec[q.ID]
		if rec.After == "" {
			continue
		}
		if gap := s.Arrival - simTL[rec.After].Finish; gap != q.Think+q.ToolDelay {
			t.Errorf("%s: simulated arrival %v after %s finished, want think %v + tool %v", q.ID, gap, rec.After, q.Think, q.ToolDelay)
		}
	}
	wall := func(tl map[string]refengine.Timeline, s string) time.Duration {
		first, last := time.Duration(1<<62), time.Duration(0)
		for _, q := range reqs {
			if q.Session == s {
				first, last = min(first, tl[q.ID].Arrival), max(last, tl[q.ID].Finish)
			}
		}
		return last - first
	}
	for _, s := range []string{"s1", "s2", "s3"} {
		sw, rw := wall(simTL, s), wall(runTL, s)
		t.Logf("%s: session wall simulate %v, run (engine) %v", s, sw, rw)
		if sw != rw {
			t.Errorf("%s: session wall simulate %v, run %v: differ by %v", s, sw, rw, sw-rw)
		}
	}
	// The summaries' sessions blocks agree as well (their split needs the records' after,
	// think and tool delay, which simulate now sets).
	ss, err := metrics.Summarize(simRecs, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	rs, err := metrics.Summarize(runRecs, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if ss.Sessions == nil || rs.Sessions == nil || ss.Sessions.Completed != 3 || rs.Sessions.Completed != 3 {
		t.Fatalf("sessions %+v / %+v", ss.Sessions, rs.Sessions)
	}
	if ss.Sessions.ToolMs.Max != rs.Sessions.ToolMs.Max || ss.Sessions.ThinkMs.Max != rs.Sessions.ThinkMs.Max {
		t.Errorf("tool/think: simulate %+v %+v, run %+v %+v", ss.Sessions.ToolMs, ss.Sessions.ThinkMs, rs.Sessions.ToolMs, rs.Sessions.ThinkMs)
	}
}

// TestSessionDepsOfACutTrace: a trace cut short (simulate --max-requests) keeps the
// dependencies on the turns it still has; a turn whose every dependency was cut waits for none.
func TestSessionDepsOfACutTrace(t *testing.T) {
	reqs := []traces.Request{
		{ID: "a", Session: "s", Turn: 1},
		{ID: "c", Session: "s", Turn: 3, After: []int{1, 2}},
		{ID: "d", Session: "s", Turn: 4, After: []int{2}},
		{ID: "e", Session: "s", Turn: 5},
		{ID: "x"},
	}
	deps, err := sessionDeps(reqs)
	if err != nil {
		t.Fatal(err)
	}
	want := [][]int{nil, {0}, nil, {2}, nil}
	for i := range want {
		if len(deps[i]) != len(want[i]) || len(want[i]) > 0 && deps[i][0] != want[i][0] {
			t.Errorf("%s: deps %v, want %v", reqs[i].ID, deps[i], want[i])
		}
	}
	if _, err := sessionDeps([]traces.Request{{ID: "a", Session: "s", Turn: 1, After: []int{2}}, {ID: "b", Session: "s", Turn: 2, After: []int{1}}}); err == nil {
		t.Error("a cycle was accepted")
	}
}

// TestSimulatedFailureDropsDependents: a turn whose engine timeline did not finish (the record
// fails) is not followed: its dependents are recorded as dropped, naming it, and so are theirs,
// while a branch that does not depend on it is released.
func TestSimulatedFailureDropsDependents(t *testing.T) {
	reqs := []traces.Request{
		{ID: "plan", Session: "s", Turn: 1, InputTokens: 10, OutputTokens: 5},
		{ID: "sub", Session: "s", Turn: 2, After: []int{1}, InputTokens: 10, OutputTokens: 5},
		{ID: "join", Session: "s", Turn: 3, After: []int{2}, InputTokens: 10, OutputTokens: 5},
		{ID: "side", Session: "s", Turn: 4, After: []int{}, InputTokens: 10, OutputTokens: 5},
	}
	deps, err := sessionDeps(reqs)
	if err != nil {
		t.Fatal(err)
	}
	n := len(reqs)
	var recs []*metrics.Record
	s := &sessionSim{a: &Simulator{RateScale: 1}, reqs: reqs, deps: deps, dependents: make([][]int, n), left: make([]int, n),
		state: make([]uint8, n), finish: make([]time.Duration, n), prompt: make([]string, n), reply: make([]string, n),
		built: make([]bool, n), tokens: make([]int, n), replyTokens: make([]int, n),
		emit: func(r *metrics.Record) { recs = append(recs, r) }}
	for i, ds := range deps {
		s.left[i] = len(ds)
		for _, d := range ds {
			s.dependents[d] = append(s.dependents[d], i)
		}
	}
	s.done(0, &refengine.Timeline{ID: "plan", Arrival: 7 * time.Millisecond, Finish: -1, PromptTokens: 10})
	if len(recs) != 3 || recs[0].ID != "plan" || recs[0].OK() {
		t.Fatalf("records %+v", recs)
	}
	for _, r := range recs[1:] {
		if r.Failure != metrics.FailDropped || r.Intended != int64(7*time.Millisecond) {
			t.Errorf("%s: %q intended %d, want dropped when plan was", r.ID, r.Failure, r.Intended)
		}
	}
	if recs[1].ID != "sub" || !strings.Contains(recs[1].Error, "turn 1 (plan)") || recs[2].ID != "join" || !strings.Contains(recs[2].Error, "turn 2 (sub)") {
		t.Errorf("drops %q: %q / %q: %q", recs[1].ID, recs[1].Error, recs[2].ID, recs[2].Error)
	}
	if len(s.queue) != 0 || s.state[3] != simPending {
		t.Errorf("the independent branch was touched: queue %v state %d", s.queue, s.state[3])
	}
}
