package loadgen

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"sort"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// slowEngine is a test server for synctest bubbles: each request waits `service` (virtual
// time), then streams `chunks` content chunks `gap` apart. It books how many requests were
// in flight at most and, per request id, the messages it received.
type slowEngine struct {
	service, gap time.Duration
	chunks       int

	mu       sync.Mutex
	inFlight int
	maxIn    int
	received []string // X-Request-Id in arrival order
	messages map[string][]traces.Message
	arrived  map[string]time.Time
	// Agentic sessions: fail answers these request ids with a 500; affinity books the
	// x-session-id header per request id.
	fail     map[string]bool
	affinity map[string]string
}

func (e *slowEngine) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := decodeReq(nil, r)
	io.Copy(io.Discard, r.Body)
	id := r.Header.Get("X-Request-Id")
	e.mu.Lock()
	e.inFlight++
	e.maxIn = max(e.maxIn, e.inFlight)
	e.received = append(e.received, id)
	if e.messages == nil {
		e.messages, e.arrived = map[string][]traces.Message{}, map[string]time.Time{}
	}
	e.messages[id] = q.Messages
	e.arrived[id] = time.Now()
	if e.affinity == nil {
		e.affinity = map[string]string{}
	}
	e.affinity[id] = r.Header.Get("X-Session-Id")
	e.mu.Unlock()
	if e.fail[id] {
		http.Error(w, `{"error":{"message":"injected"}}`, http.StatusInternalServerError)
		return
	}
	defer func() {
		e.mu.Lock()
		e.inFlight--
		e.mu.Unlock()
	}()
	select {
	case <-time.After(e.service):
	case <-r.Context().Done():
		return
	}
	s := startSSE(w)
	for i := range e.chunks {
		if i > 0 {
			select {
			case <-time.After(e.gap):
			case <-r.Context().Done():
				return
			}
		}
		s.data(chatChunk(" reply" + id))
	}
	s.done()
}

// virtualRun runs loadgen against e inside a synctest bubble, so every time is exact.
func virtualRun(t *testing.T, e *slowEngine, reqs []traces.Request, opts Options, interruptAt time.Duration) (*Result, []metrics.Record) {
	t.Helper()
	return virtualRunSource(t, e, traces.FromSlice(reqs), opts, interruptAt)
}

// virtualRunSource is virtualRun over any traces.Source.
func virtualRunSource(t *testing.T, e *slowEngine, src traces.Source, opts Options, interruptAt time.Duration) (*Result, []metrics.Record) {
	t.Helper()
	var res *Result
	var col collector
	synctest.Test(t, func(t *testing.T) {
		pn, stop := serveVirtual(e)
		defer stop()
		opts.Target = Target{URL: "http://engine", Model: "m", Stream: true, Backend: "openai", SessionHeader: opts.Target.SessionHeader}
		opts.Dial = pn.Dial
		if opts.Clock == nil {
			opts.Clock = timerClock{}
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		if interruptAt > 0 {
			time.AfterFunc(interruptAt, cancel)
		}
		var err error
		res, err = RunSource(ctx, src, opts, col.sink)
		if err != nil {
			t.Fatal(err)
		}
	})
	sort.Slice(col.recs, func(i, j int) bool {
		if col.recs[i].Intended != col.recs[j].Intended {
			return col.recs[i].Intended < col.recs[j].Intended
		}
		return col.recs[i].ID < col.recs[j].ID
	})
	return res, col.recs
}

func at(id string, ms int) traces.Request {
	return traces.Request{ID: id, Arrival: time.Duration(ms) * time.Millisecond, InputTokens: 3, OutputTokens: 2, Prompt: " hi"}
}

const ms = int64(time.Millisecond)

// TestOpenLoopExactTimes: uncapped open loop sends each request at its intended time even
// while earlier ones are in flight; TTFT and E2E follow from the server's schedule.
func TestOpenLoopExactTimes(t *testing.T) {
	e := &slowEngine{service: 100 * time.Millisecond, gap: 10 * time.Millisecond, chunks: 2}
	reqs := []traces.Request{at("c", 20), at("a", 0), at("b", 10)}
	prog := &Progress{}
	res, recs := virtualRun(t, e, reqs, Options{RateScale: 2, Progress: prog}, 0)
	if res.Succeeded != 3 || res.Mode != "open-loop" || e.maxIn != 3 {
		t.Fatalf("result %+v, max in flight %d (want 3: open loop never waits)", res, e.maxIn)
	}
	if prog.Sent.Load() != 3 || prog.Done.Load() != 3 || prog.InFlight.Load() != 0 || prog.Failed.Load() != 0 || prog.OutputTokens.Load() != 6 {
		t.Errorf("progress sent %d done %d in flight %d failed %d tokens %d", prog.Sent.Load(), prog.Done.Load(), prog.InFlight.Load(), prog.Failed.Load(), prog.OutputTokens.Load())
	}
	for i, r := range recs {
		want := int64(i) * 5 * ms // RateScale 2 halves the 10 ms gaps
		if r.Intended != want || r.Dispatched != want || r.Sent != want {
			t.Errorf("%s: intended %d dispatched %d sent %d, want all %d", r.ID, r.Intended, r.Dispatched, r.Sent, want)
		}
		if r.FirstToken-r.Intended != 100*ms || r.End-r.Intended != 110*ms {
			t.Errorf("%s: ttft %d e2e %d, want 100ms and 110ms", r.ID, r.FirstToken-r.Intended, r.End-r.Intended)
		}
		if len(r.Chunks) != 2 || r.Chunks[1].T-r.Chunks[0].T != 10*ms {
			t.Errorf("%s: chunks %+v, want two 10 ms apart", r.ID, r.Chunks)
		}
	}
}

// TestConcurrencyCapQueueTime: with a cap of 1, each request waits for the previous one; the
// wait is queue time (Sent - Dispatched), there is no schedule lag, and TTFT counts the wait.
func TestConcurrencyCapQueueTime(t *testing.T) {
	e := &slowEngine{service: 100 * time.Millisecond, chunks: 1}
	reqs := []traces.Request{at("a", 0), at("b", 10), at("c", 20)}
	res, recs := virtualRun(t, e, reqs, Options{MaxConcurrency: 1}, 0)
	if res.Succeeded != 3 || e.maxIn != 1 {
		t.Fatalf("result %+v, max in flight %d, want 1", res, e.maxIn)
	}
	wantSent := []int64{0, 100 * ms, 200 * ms}
	for i, r := range recs {
		if lag := r.Dispatched - r.Intended; lag != 0 {
			t.Errorf("%s: schedule lag %d, want 0 (the cap is queue time, not lag)", r.ID, lag)
		}
		if r.Sent != wantSent[i] {
			t.Errorf("%s: sent at %d, want %d; queue %d", r.ID, r.Sent, wantSent[i], r.Sent-r.Dispatched)
		}
		if ttft := r.FirstToken - r.Intended; ttft != wantSent[i]+100*ms-r.Intended {
			t.Errorf("%s: ttft %d does not include the queue time", r.ID, ttft)
		}
	}
	if q := recs[2].Sent - recs[2].Dispatched; q != 180*ms {
		t.Errorf("c queued %d, want 180 ms", q)
	}
}

// TestSessionsOrderedWithHistory: turns go in Turn order, each after the previous response
// plus its think time, carrying the conversation so far.
func TestSessionsOrderedWithHistory(t *testing.T) {
	e := &slowEngine{service: 50 * time.Millisecond, chunks: 1}
	turn := func(id string, n int, think time.Duration, arrival int) traces.Request {
		r := at(id, arrival)
		r.Session, r.Turn, r.Think = "s1", n, think
		r.Messages = []traces.Message{{Role: "user", Content: "q" + id}}
		return r
	}
	reqs := []traces.Request{turn("t3", 3, 30*time.Millisecond, 0), at("solo", 5), turn("t1", 1, 0, 0), turn("t2", 2, 20*time.Millisecond, 0)}
	res, recs := virtualRun(t, e, reqs, Options{}, 0)
	if res.Succeeded != 4 {
		t.Fatalf("result %+v", res)
	}
	got := strings.Join(e.received, ",")
	if got != "t1,solo,t2,t3" {
		t.Errorf("server saw %s, want t1,solo,t2,t3", got)
	}
	byID := map[string]metrics.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	if t2 := byID["t2"]; t2.Intended != byID["t1"].End+20*ms || t2.Sent != t2.Intended {
		t.Errorf("t2 intended %d, want t1's end %d + 20ms think", t2.Intended, byID["t1"].End)
	}
	if t3 := byID["t3"]; t3.Intended != byID["t2"].End+30*ms {
		t.Errorf("t3 intended %d, want t2's end + 30ms", t3.Intended)
	}
	m := e.messages["t3"]
	msg := func(role, content string) traces.Message { return traces.Message{Role: role, Content: content} }
	want := []traces.Message{msg("user", "qt1"), msg("assistant", " replyt1"), msg("user", "qt2"), msg("assistant", " replyt2"), msg("user", "qt3")}
	if len(m) != len(want) {
		t.Fatalf("t3 carried %+v, want %+v", m, want)
	}
	for i := range want {
		if !reflect.DeepEqual(m[i], want[i]) {
			t.Errorf("t3 message %d = %+v, want %+v", i, m[i], want[i])
		}
	}
	if byID["t1"].Session != "s1" || byID["t3"].Turn != 3 {
		t.Errorf("session fields not recorded: %+v", byID["t3"])
	}

	// RateScale compresses think times with the arrivals.
	e = &slowEngine{service: 50 * time.Millisecond, chunks: 1}
	_, recs = virtualRun(t, e, reqs, Options{RateScale: 2}, 0)
	byID = map[string]metrics.Record{}
	for _, r := range recs {
		byID[r.ID] = r
	}
	if t2 := byID["t2"]; t2.Intended != byID["t1"].End+10*ms {
		t.Errorf("RateScale 2: t2 intended %d, want t1's end %d + 10ms (half the think time)", t2.Intended, byID["t1"].End)
	}
}

// TestSessionTurnHoldingItsHistory: a turn whose messages already hold the conversation (an
// assistant message among them, as ShareGPT --sessions imports write every turn) is sent as it
// is, not after the conversation the replay carried, which would send the history twice.
func TestSessionTurnHoldingItsHistory(t *testing.T) {
	e := &slowEngine{service: 50 * time.Millisecond, chunks: 1}
	msg := func(role, content string) traces.Message { return traces.Message{Role: role, Content: content} }
	t1 := at("t1", 0)
	t1.Session, t1.Turn = "s1", 1
	t1.Messages = []traces.Message{msg("user", "hello")}
	t2 := at("t2", 0)
	t2.Session, t2.Turn = "s1", 2
	t2.Messages = []traces.Message{msg("user", "hello"), msg("assistant", "recorded reply"), msg("user", "and then?")}
	res, _ := virtualRun(t, e, []traces.Request{t1, t2}, Options{}, 0)
	if res.Succeeded != 2 {
		t.Fatalf("result %+v", res)
	}
	if got := e.messages["t2"]; !reflect.DeepEqual(got, t2.Messages) {
		t.Errorf("t2 sent %+v, want its own messages %+v (the history once)", got, t2.Messages)
	}
}

// TestInterruptedRunOneRecordPerRequest: canceling mid-run drops what was never sent,
// cancels what is still in flight when the grace period ends, and keeps one record each.
func TestInterruptedRunOneRecordPerRequest(t *testing.T) {
	e := &slowEngine{service: 10 * time.Second, chunks: 1}
	reqs := []traces.Request{at("a", 0), at("b", 0), at("c", 20), at("d", 5000), at("e", 6000)}
	res, recs := virtualRun(t, e, reqs, Options{MaxConcurrency: 2, Grace: time.Second}, time.Second)
	if !res.Interrupted || len(recs) != 5 || res.Failed != 5 || res.Sent != 2 || res.Dropped != 3 {
		t.Fatalf("result %+v with %d records", res, len(recs))
	}
	kinds := map[string]metrics.FailureKind{}
	for _, r := range recs {
		kinds[r.ID] = r.Failure
	}
	want := map[string]metrics.FailureKind{"a": metrics.FailCanceled, "b": metrics.FailCanceled, "c": metrics.FailDropped, "d": metrics.FailDropped, "e": metrics.FailDropped}
	for id, k := range want {
		if kinds[id] != k {
			t.Errorf("%s: %q, want %q", id, kinds[id], k)
		}
	}
	for _, r := range recs {
		if r.ID == "a" && r.End != 2*int64(time.Second) {
			t.Errorf("a canceled at %d, want at the end of the 1 s grace after the 1 s interrupt", r.End)
		}
		if r.ID == "c" && (r.Dispatched != 20*ms || r.Sent != 0) {
			t.Errorf("c (queued behind the cap) dispatched %d sent %d", r.Dispatched, r.Sent)
		}
	}

	// With a grace long enough, in-flight requests finish.
	res, recs = virtualRun(t, e, reqs[:2], Options{Grace: time.Minute}, time.Second)
	if !res.Interrupted || res.Succeeded != 2 || len(recs) != 2 {
		t.Errorf("long grace: result %+v", res)
	}
}

func TestClosedLoop(t *testing.T) {
	e := &slowEngine{service: 100 * time.Millisecond, chunks: 1}
	var reqs []traces.Request
	for i := range 5 {
		reqs = append(reqs, at(string(rune('a'+i)), i*1000))
	}
	res, recs := virtualRun(t, e, reqs, Options{Concurrency: 2}, 0)
	if res.Mode != "closed-loop" || res.Succeeded != 5 || e.maxIn != 2 {
		t.Fatalf("result %+v, max in flight %d", res, e.maxIn)
	}
	wantStart := []int64{0, 0, 100 * ms, 100 * ms, 200 * ms}
	for i, r := range recs {
		if r.Intended != wantStart[i] || r.Dispatched != r.Intended || r.Sent != r.Intended {
			t.Errorf("%s: intended %d dispatched %d sent %d, want %d (arrival times ignored)", r.ID, r.Intended, r.Dispatched, r.Sent, wantStart[i])
		}
	}
}

func TestRepeatDurationMaxRequestsPhases(t *testing.T) {
	e := &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	reqs := []traces.Request{at("a", 0), at("b", 100), at("c", 200)}
	// period = 200 + 100 (mean gap) = 300 ms: repeat 1 starts at 300 ms.
	res, recs := virtualRun(t, e, reqs, Options{Repeat: 2, Warmup: 50 * time.Millisecond, Cooldown: 100 * time.Millisecond}, 0)
	if res.Succeeded != 6 || len(recs) != 6 {
		t.Fatalf("result %+v", res)
	}
	wantPhase := []string{"warmup", "", "", "", "", "cooldown"}
	for i, r := range recs {
		if r.Intended != int64(i)*100*ms || r.Phase != wantPhase[i] || r.Repeat != i/3 {
			t.Errorf("record %d %s: intended %d phase %q repeat %d", i, r.ID, r.Intended, r.Phase, r.Repeat)
		}
	}
	if got := strings.Join(e.received, ","); got != "a.r0,b.r0,c.r0,a.r1,b.r1,c.r1" {
		t.Errorf("request ids %s", got)
	}

	e = &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	res, recs = virtualRun(t, e, reqs, Options{Duration: 150 * time.Millisecond}, 0)
	if res.Succeeded != 2 || res.Skipped != 1 || len(recs) != 2 {
		t.Errorf("duration: result %+v", res)
	}
	e = &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	res, _ = virtualRun(t, e, reqs, Options{MaxRequests: 1, Repeat: 3}, 0)
	if res.Succeeded != 1 || res.Skipped != 8 {
		t.Errorf("max requests: result %+v", res)
	}
}

func TestValidate(t *testing.T) {
	bad := []Options{
		{Concurrency: 2, MaxConcurrency: 2},
		{Concurrency: -1},
		{RateScale: -1},
		{Concurrency: 1, Cooldown: time.Second},
		{Target: Target{URL: "ftp://x", Model: "m"}},
		{Target: Target{URL: "http://x", Model: "m", Backend: "bogus"}},
		{Target: Target{URL: "http://x", Model: "m", API: "rerank"}},
	}
	for i, o := range bad {
		if o.Target.URL == "" {
			o.Target = Target{URL: "http://127.0.0.1:1", Model: "m"}
		}
		if _, err := Run(t.Context(), nil, o, func(*metrics.Record) {}); err == nil {
			t.Errorf("options %d (%+v) accepted", i, o)
		}
	}
}

// TestLookaheadBoundaries runs traces around the preparer's lookahead size.
func TestLookaheadBoundaries(t *testing.T) {
	for _, n := range []int{0, 1, lookahead - 1, lookahead, lookahead + 1} {
		e := &slowEngine{chunks: 1}
		reqs := make([]traces.Request, n)
		for i := range reqs {
			reqs[i] = at(fmt.Sprint(i), i)
		}
		res, recs := virtualRun(t, e, reqs, Options{}, 0)
		if res.Succeeded != n || len(recs) != n {
			t.Errorf("n=%d: %d succeeded, %d records", n, res.Succeeded, len(recs))
		}
	}
}
