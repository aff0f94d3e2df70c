package loadgen

import (
	"errors"
	"fmt"
	"path/filepath"
	"reflect"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/traces"
)

// sourceTrace has sessions whose turns are out of order in the file, requests outside
// sessions that arrive together with a session's first turn, and equal arrivals.
func sourceTrace() []traces.Request {
	turn := func(id, session string, n, arrival int) traces.Request {
		r := at(id, arrival)
		r.Session, r.Turn, r.Think = session, n, 5*time.Millisecond
		return r
	}
	return []traces.Request{
		at("a", 0), turn("s1t1", "s1", 1, 0), at("b", 0), turn("s2t2", "s2", 2, 10),
		at("c", 20), turn("s2t1", "s2", 1, 20), at("d", 20), turn("s1t2", "s1", 2, 40),
		at("e", 60), at("f", 80), turn("s3t1", "s3", 1, 80), at("g", 100),
	}
}

// openSourceTrace writes reqs to a trace file and returns it opened for streaming, and as
// ReadFile reads it.
func openSourceTrace(t *testing.T, reqs []traces.Request) (traces.Source, []traces.Request) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "t.jsonl")
	if err := traces.WriteFile(path, reqs); err != nil {
		t.Fatal(err)
	}
	src, err := traces.OpenFile(path, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	sorted, err := traces.ReadFile(path, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return src, sorted
}

// replayed is what a run did, in the order it did it.
func replayed(e *slowEngine, res *Result, recs []metrics.Record) string {
	var b strings.Builder
	got := append([]string(nil), e.received...)
	sort.Strings(got) // requests due at the same instant reach the server in any order
	fmt.Fprintf(&b, "server %s\n", strings.Join(got, ","))
	fmt.Fprintf(&b, "sent %d ok %d failed %d skipped %d err %v\n", res.Sent, res.Succeeded, res.Failed, res.Skipped, res.TraceErr)
	for _, r := range recs {
		fmt.Fprintf(&b, "%s r%d t%d %q intended %d sent %d %s\n", r.ID, r.Repeat, r.Turn, r.Phase, r.Intended, r.Sent, r.Failure)
	}
	return b.String()
}

// TestFileTraceReplaysLikeTheSlice: a trace replayed from its file (read again on each pass)
// sends the same requests at the same times in the same order as the trace held in memory,
// whatever the options that shape the plan.
func TestFileTraceReplaysLikeTheSlice(t *testing.T) {
	reqs := sourceTrace()
	src, sorted := openSourceTrace(t, reqs)
	if src.Len() != len(reqs) {
		t.Fatalf("Len %d", src.Len())
	}
	for _, o := range []Options{
		{},
		{Repeat: 3, Warmup: 30 * time.Millisecond, Cooldown: 50 * time.Millisecond},
		{Repeat: 2, MaxRequests: 17},
		{Duration: 70 * time.Millisecond, RateScale: 0.5},
		{Duration: 50 * time.Millisecond, Repeat: 2},
		{Concurrency: 2, Repeat: 2},
		{Concurrency: 3, Repeat: 4, Duration: 300 * time.Millisecond},
	} {
		name := fmt.Sprintf("%+v", o)
		e1 := &slowEngine{service: 10 * time.Millisecond, chunks: 2, gap: time.Millisecond}
		res1, recs1 := virtualRunSource(t, e1, src, o, 0)
		e2 := &slowEngine{service: 10 * time.Millisecond, chunks: 2, gap: time.Millisecond}
		res2, recs2 := virtualRun(t, e2, sorted, o, 0)
		got, want := replayed(e1, res1, recs1), replayed(e2, res2, recs2)
		if got != want {
			t.Errorf("%s: from the file\n%s\nfrom memory\n%s", name, got, want)
		}
		if res1.Succeeded+res1.Skipped != len(reqs)*max(1, o.Repeat) && o.MaxRequests == 0 {
			t.Errorf("%s: %d succeeded + %d skipped, want every request of the replay", name, res1.Succeeded, res1.Skipped)
		}
	}
	// The slice's own order does not matter: an unsorted slice replays like the sorted one.
	e1 := &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	res1, recs1 := virtualRun(t, e1, reqs, Options{Repeat: 2}, 0)
	e2 := &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	res2, recs2 := virtualRun(t, e2, sorted, Options{Repeat: 2}, 0)
	if got, want := replayed(e1, res1, recs1), replayed(e2, res2, recs2); got != want {
		t.Errorf("unsorted slice\n%s\nsorted slice\n%s", got, want)
	}
}

// planOrder is the dispatch order of a plan: id, repeat and intended time of each item.
func planOrder(t *testing.T, src traces.Source, o Options) []string {
	t.Helper()
	if err := validate(&o); err != nil {
		t.Fatal(err)
	}
	r := &runner{opts: o}
	p, err := r.newPlanner(src)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	p.each(func(it *item) bool {
		for _, q := range it.turns {
			out = append(out, fmt.Sprintf("%s.r%d@%v", q.ID, it.repeat, it.intended))
		}
		return true
	})
	if p.err != nil {
		t.Fatal(p.err)
	}
	return out
}

// TestPlanOrderFromFileAndSlice: the plan breaks ties between equal intended times in trace
// order, the same way whether the trace is read from its file or held (in any order).
func TestPlanOrderFromFileAndSlice(t *testing.T) {
	reqs := sourceTrace()
	src, sorted := openSourceTrace(t, reqs)
	o := Options{Repeat: 2, MaxRequests: 20}
	want := planOrder(t, traces.FromSlice(sorted), o)
	if got := planOrder(t, src, o); !reflect.DeepEqual(got, want) {
		t.Errorf("from the file %v\nfrom memory %v", got, want)
	}
	if got := planOrder(t, traces.FromSlice(reqs), o); !reflect.DeepEqual(got, want) {
		t.Errorf("unsorted slice %v\nsorted slice %v", got, want)
	}
	head := "a.r0@0s s1t1.r0@0s s1t2.r0@0s b.r0@0s s2t1.r0@20ms s2t2.r0@20ms c.r0@20ms d.r0@20ms"
	if got := strings.Join(want[:8], " "); got != head {
		t.Errorf("plan starts %s, want %s (ties in trace order; a session's turns together)", got, head)
	}
	if len(want) != 20 {
		t.Errorf("%d requests planned, want MaxRequests 20", len(want))
	}
}

// failingSource is a trace whose second pass cannot be read.
type failingSource struct {
	traces.Source
	passes int
}

var errGone = errors.New("trace file gone")

func (f *failingSource) Singles(fn func(int, *traces.Request) error) error {
	f.passes++
	if f.passes > 1 {
		return errGone
	}
	return f.Source.Singles(fn)
}

// TestTraceReadFailureStopsTheRun: when a pass cannot be read, what was sent is recorded, the
// result says why the run stopped, and nothing is counted as skipped.
func TestTraceReadFailureStopsTheRun(t *testing.T) {
	reqs := []traces.Request{at("a", 0), at("b", 10)}
	e := &slowEngine{service: 10 * time.Millisecond, chunks: 1}
	res, recs := virtualRunSource(t, e, &failingSource{Source: traces.FromSlice(reqs)}, Options{Repeat: 3}, 0)
	if !errors.Is(res.TraceErr, errGone) || res.Succeeded != 2 || res.Skipped != 0 || len(recs) != 2 {
		t.Errorf("result %+v with %d records", res, len(recs))
	}
}

// TestClosedLoopDurationSkipsTheRest: a closed-loop run that reaches its duration stops
// taking requests and counts every one it did not send as skipped.
func TestClosedLoopDurationSkipsTheRest(t *testing.T) {
	var reqs []traces.Request
	for i := range 50 {
		reqs = append(reqs, at(fmt.Sprint(i), i))
	}
	e := &slowEngine{service: 100 * time.Millisecond, chunks: 1}
	res, recs := virtualRun(t, e, reqs, Options{Concurrency: 2, Duration: 250 * time.Millisecond, Repeat: 2}, 0)
	// Two workers, 100 ms per request: 0, 100 and 200 ms each, then both see 300 ms >= 250 ms.
	if res.Succeeded != 6 || len(recs) != 6 || res.Skipped != 94 {
		t.Errorf("result %+v with %d records", res, len(recs))
	}
	if !reflect.DeepEqual(e.received[:2], []string{"0.r0", "1.r0"}) && !reflect.DeepEqual(e.received[:2], []string{"1.r0", "0.r0"}) {
		t.Errorf("server saw %v first", e.received[:2])
	}
}

// TestStreamedPlanHoldsNoTrace: walking the plan of a trace file keeps no request behind:
// half-way through 50,000 requests the heap has not grown by the trace (a held trace and plan
// would be ≈ 230 bytes per request, 5.8 MB at that point).
func TestStreamedPlanHoldsNoTrace(t *testing.T) {
	const n = 50_000
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: fmt.Sprintf("q%d", i), Arrival: time.Duration(i) * time.Millisecond, InputTokens: 16, OutputTokens: 2}
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := traces.WriteFile(path, reqs); err != nil {
		t.Fatal(err)
	}
	reqs = nil
	src, err := traces.OpenFile(path, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{}
	if err := validate(&o); err != nil {
		t.Fatal(err)
	}
	p, err := (&runner{opts: o}).newPlanner(src)
	if err != nil {
		t.Fatal(err)
	}
	heap := func() int64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return int64(m.HeapAlloc)
	}
	before := heap()
	var grown int64
	seen := 0
	p.each(func(it *item) bool {
		seen++
		if seen == n/2 {
			grown = heap() - before
		}
		return true
	})
	if p.err != nil || seen != n {
		t.Fatalf("walked %d of %d requests: %v", seen, n, p.err)
	}
	if grown > 2<<20 {
		t.Errorf("the heap grew by %d bytes half-way through the plan: requests are being held", grown)
	}
}
