package runner

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/traces"
)

func TestParseShard(t *testing.T) {
	env := func(v string) func(string) string {
		return func(k string) string {
			if k == JobIndexEnv {
				return v
			}
			return ""
		}
	}
	for _, c := range []struct {
		spec, env string
		want      Shard
		err       string
	}{
		{spec: "0/1", want: Shard{0, 1}},
		{spec: "2/3", want: Shard{2, 3}},
		{spec: " 1/4 ", want: Shard{1, 4}},
		{spec: "auto/8", env: "5", want: Shard{5, 8}},
		{spec: "auto/8", err: "JOB_COMPLETION_INDEX is not set"},
		{spec: "auto/8", env: "8", err: "in [0, 8)"},
		{spec: "3/3", err: "in [0, 3)"},
		{spec: "-1/3", err: "in [0, 3)"},
		{spec: "1/0", err: "N must be"},
		{spec: "1", err: "want I/N"},
		{spec: "a/b", err: "N must be"},
	} {
		got, err := ParseShard(c.spec, env(c.env))
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("ParseShard(%q, %q) = %v, %v; want error containing %q", c.spec, c.env, got, err, c.err)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("ParseShard(%q, %q) = %v, %v; want %v", c.spec, c.env, got, err, c.want)
		}
	}
}

func FuzzParseShard(f *testing.F) {
	for _, s := range []string{"0/1", "2/3", "auto/4", "x/y", "/", "1/-2", "99999999999999999999/3"} {
		f.Add(s, "1")
	}
	f.Fuzz(func(t *testing.T, spec, idx string) {
		sh, err := ParseShard(spec, func(string) string { return idx })
		if err == nil && (sh.Count < 1 || sh.Index < 0 || sh.Index >= sh.Count) {
			t.Fatalf("ParseShard(%q) accepted %v", spec, sh)
		}
	})
}

// TestShardOfIsPinned pins the split: shards of one run may be different llmbench builds, so
// the hash must never change. (The expected string was computed independently of Go.)
func TestShardOfIsPinned(t *testing.T) {
	got := ""
	for _, id := range []string{"r1", "r2", "r3", "r4", "r5", "r6", "r7", "r8"} {
		got += fmt.Sprint(ShardOf(&traces.Request{ID: id}, 4))
	}
	if want := "20233212"; got != want {
		t.Fatalf("ShardOf r1..r8 over 4 = %s, want %s (FNV-1a of the id, SplitMix64 finalizer, mod N)", got, want)
	}
	if ShardOf(&traces.Request{ID: "x", Session: "s"}, 7) != ShardOf(&traces.Request{ID: "y", Session: "s", Turn: 3}, 7) {
		t.Fatal("two turns of one session went to different shards")
	}
}

func shardTrace(n int) []traces.Request {
	var reqs []traces.Request
	for i := range n {
		q := traces.Request{ID: fmt.Sprintf("q%d", i), Arrival: time.Duration(i) * 10 * time.Millisecond, InputTokens: 10 + i%7, OutputTokens: 5 + i%3}
		if i%5 == 0 {
			q.Session, q.Turn = fmt.Sprintf("s%d", i/25), i%25/5
		}
		reqs = append(reqs, q)
	}
	return reqs
}

// TestShardSourcePartitions: the shards of a trace are disjoint, cover it, keep sessions
// whole and agree with PlanShards' counts.
func TestShardSourcePartitions(t *testing.T) {
	reqs := shardTrace(500)
	src := traces.FromSlice(reqs)
	const n = 3
	plan, err := PlanShards(src, n)
	if err != nil {
		t.Fatal(err)
	}
	if plan.Whole.Len != 500 || plan.Whole.Last != 4990*time.Millisecond {
		t.Fatalf("whole shape %+v", plan.Whole)
	}
	owner := map[string]int{}
	sessionShard := map[string]int{}
	for i := range n {
		s, err := ShardSource(src, Shard{i, n})
		if err != nil {
			t.Fatal(err)
		}
		if s.Len() != plan.PerShard[i] || s.Len() == 0 {
			t.Fatalf("shard %d: Len %d, plan %d", i, s.Len(), plan.PerShard[i])
		}
		seen := 0
		visit := func(q *traces.Request) {
			seen++
			if prev, dup := owner[q.ID]; dup {
				t.Fatalf("%s in shards %d and %d", q.ID, prev, i)
			}
			owner[q.ID] = i
			if q.Session != "" {
				if prev, ok := sessionShard[q.Session]; ok && prev != i {
					t.Fatalf("session %s split over shards %d and %d", q.Session, prev, i)
				}
				sessionShard[q.Session] = i
			}
		}
		if err := s.Singles(func(_ int, q *traces.Request) error { visit(q); return nil }); err != nil {
			t.Fatal(err)
		}
		s.Sessions(func(_ int, q *traces.Request) { visit(q) })
		all, _ := s.Requests()
		if seen != s.Len() || len(all) != s.Len() || s.Stats().Count != s.Len() {
			t.Fatalf("shard %d: walked %d, Requests %d, stats %d, Len %d", i, seen, len(all), s.Stats().Count, s.Len())
		}
	}
	if len(owner) != len(reqs) {
		t.Fatalf("the shards cover %d of %d requests", len(owner), len(reqs))
	}
}

func TestTraceFingerprint(t *testing.T) {
	fp := func(reqs []traces.Request) string {
		s, err := traceDigest(traces.FromSlice(reqs))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	a := shardTrace(50)
	base := fp(a)
	if fp(shardTrace(50)) != base {
		t.Fatal("the fingerprint of an equal trace differs")
	}
	for name, change := range map[string]func([]traces.Request){
		"arrival": func(r []traces.Request) { r[7].Arrival++ },
		"id":      func(r []traces.Request) { r[7].ID = "other" },
		"input":   func(r []traces.Request) { r[7].InputTokens++ },
		"output":  func(r []traces.Request) { r[7].OutputTokens++ },
		"length":  func(r []traces.Request) {},
	} {
		b := shardTrace(50)
		change(b)
		if name == "length" {
			b = b[:49]
		}
		if fp(b) == base {
			t.Errorf("changing the %s left the fingerprint equal", name)
		}
	}
}

// TestMeasureClockBoundsTheTrueOffset: against a time endpoint whose clock runs a known
// offset ahead, the measured offset is within its bound of the truth. The bound holds by
// construction (the server reads its clock inside the round trip), so this is no timing test.
func TestMeasureClockBoundsTheTrueOffset(t *testing.T) {
	for _, off := range []time.Duration{0, 3 * time.Second, -1500 * time.Millisecond, 7 * time.Microsecond} {
		srv := httptest.NewServer(WithClock(http.NotFoundHandler(), func() time.Time { return time.Now().Add(off) }))
		c, err := MeasureClock(context.Background(), srv.Client(), srv.URL+"/", nil, 8)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if c.Method != "round-trip" || c.Samples != 8 || c.BoundNs <= 0 || !strings.HasSuffix(c.Reference, ClockPath) {
			t.Fatalf("clock %+v", c)
		}
		if d := c.OffsetNs - off.Nanoseconds(); d > c.BoundNs || -d > c.BoundNs {
			t.Errorf("offset %v: measured %d ns ± %d ns", off, c.OffsetNs, c.BoundNs)
		}
	}
}

func TestMeasureClockNamesAWrongEndpoint(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	defer srv.Close()
	_, err := MeasureClock(context.Background(), srv.Client(), srv.URL, nil, 2)
	if err == nil || !strings.Contains(err.Error(), "HTTP 404") || !strings.Contains(err.Error(), ClockPath) {
		t.Fatalf("err = %v", err)
	}
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, `{"time":1}`) }))
	defer bad.Close()
	if _, err := MeasureClock(context.Background(), bad.Client(), bad.URL, nil, 2); err == nil || !strings.Contains(err.Error(), "not a llmbench time answer") {
		t.Fatalf("err = %v", err)
	}
}

func FuzzParseClockAnswer(f *testing.F) {
	for _, s := range []string{`{"unix_nano":1764601200000000000}`, `{"unix_nano":-1}`, `{}`, `{"unix_nano":"x"}`, `[]`, ``, `{"unix_nano":1e30}`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, ok := parseClockAnswer(b)
		if !ok && ts != 0 {
			t.Fatalf("rejected answer returned %d", ts)
		}
	})
}

func FuzzParseShardFacts(f *testing.F) {
	f.Add([]byte(`{"schema":"llmbench.shard/v1","index":1,"count":2,"per_shard":[3,4],"repeat":1,"rate_scale":1,"epoch":"2026-12-01T15:00:00Z"}`))
	f.Add([]byte(`{"schema":"llmbench.shard/v1","index":2,"count":2,"per_shard":[3,4]}`))
	f.Add([]byte(`{"schema":"other"}`))
	f.Add([]byte(`not json`))
	f.Add([]byte(`{"schema":"llmbench.shard/v1","index":0,"count":1,"per_shard":[2],"repeat":1,"rate_scale":1,"trace_fingerprint":"ab","trace_requests":2,"whole_trace_fingerprint":{"requests":2,"digest":"ab"}}`))
	f.Add([]byte(`{"schema":"llmbench.shard/v1","index":0,"count":1,"per_shard":[2],"repeat":1,"rate_scale":1,"trace_fingerprint":"ab","trace_requests":2,"whole_trace_fingerprint":{"requests":3,"digest":"cd"}}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		sf, err := parseShardFacts(b, "shard.json")
		if err != nil {
			if !strings.HasPrefix(err.Error(), "shard.json: ") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if sf.Index < 0 || sf.Index >= sf.Count || len(sf.PerShard) != sf.Count || sf.Repeat < 1 ||
			(sf.WholeTrace != nil && sf.WholeTrace.Digest != sf.TraceFingerprint) {
			t.Fatalf("accepted inconsistent facts %+v", sf)
		}
	})
}

// TestPrepareShardCorrectsTheStartByTheOffset: the shard's epoch on its own clock is the
// common start minus its measured offset, and shard.json says so before the run starts; a
// target with no time endpoint leaves the offset unmeasured, in words.
func TestPrepareShardCorrectsTheStartByTheOffset(t *testing.T) {
	start := time.Now().Add(time.Hour).Truncate(time.Second)
	ahead := httptest.NewServer(WithClock(http.NotFoundHandler(), func() time.Time { return time.Now().Add(2 * time.Second) }))
	defer ahead.Close()
	none := httptest.NewServer(http.NotFoundHandler())
	defer none.Close()
	for _, c := range []struct {
		url    string
		method string
	}{{ahead.URL + "/v1", "round-trip"}, {none.URL, "none"}} {
		s := HTTPRun{Trace: traces.FromSlice(shardTrace(90)), OutDir: filepath.Join(t.TempDir(), "shard")}
		s.Load.Target.URL = c.url
		if err := prepareShard(context.Background(), &s, ShardOptions{Shard: Shard{1, 3}, StartAt: start, TracePath: "t.jsonl"}); err != nil {
			t.Fatal(err)
		}
		f, err := ReadShardFacts(s.OutDir)
		if err != nil {
			t.Fatal(err)
		}
		if f.Clock.Method != c.method || s.Info.Shard == nil || s.Info.Shard.Index != 1 || s.Trace.Len() != f.PerShard[1] || s.Load.Whole.Len != 90 {
			t.Fatalf("%s: facts %+v, trace %d", c.url, f, s.Trace.Len())
		}
		if got := start.Sub(s.Load.StartAt); c.method == "round-trip" && (got-2*time.Second > time.Duration(f.Clock.BoundNs) || 2*time.Second-got > time.Duration(f.Clock.BoundNs)) {
			t.Fatalf("epoch %v before the common start, want 2 s ± %d ns", got, f.Clock.BoundNs)
		}
		if c.method == "none" && (!s.Load.StartAt.Equal(start) || !strings.Contains(f.Clock.Error, "HTTP 404")) {
			t.Fatalf("unmeasured clock: epoch %v, clock %+v", s.Load.StartAt, f.Clock)
		}
		if f.StartAt != start.UTC().Format(time.RFC3339Nano) || !filepath.IsAbs(f.Trace) {
			t.Fatalf("start_at %q trace %q", f.StartAt, f.Trace)
		}
	}
}

// TestPrepareShardRefusesALateStart: a shard ready later than the common start plus its grace
// does not start (a *LateStartError naming how late, and the clock reference's silence when it
// did not answer) and writes no shard.json; one within the grace starts. A clock reference
// that does not answer is not waited for past the start plus the grace, whatever --clock-wait.
func TestPrepareShardRefusesALateStart(t *testing.T) {
	ref := httptest.NewServer(WithClock(http.NotFoundHandler(), time.Now))
	defer ref.Close()
	silent := httptest.NewServer(http.NotFoundHandler())
	defer silent.Close()
	now := time.Now()
	for _, c := range []struct {
		name    string
		url     string
		startAt time.Time
		late    bool
		clock   string
	}{
		{"within the grace", ref.URL, now.Add(-2 * time.Second), false, ""},
		{"a minute late", ref.URL, now.Add(-time.Minute), true, ""},
		{"late, no clock", silent.URL, now.Add(-5 * time.Second), true, "HTTP 404"},
	} {
		s := HTTPRun{Trace: traces.FromSlice(shardTrace(30)), OutDir: filepath.Join(t.TempDir(), "shard")}
		s.Load.Target.URL = c.url
		err := prepareShard(context.Background(), &s, ShardOptions{Shard: Shard{0, 2}, StartAt: c.startAt, StartGrace: 3 * time.Second,
			ClockWait: time.Hour, TracePath: "t.jsonl"})
		var late *LateStartError
		if got := errors.As(err, &late); got != c.late {
			t.Fatalf("%s: err %v, want late %v", c.name, err, c.late)
		}
		_, statErr := os.Stat(filepath.Join(s.OutDir, ShardFile))
		if c.late {
			if late.Late < 3*time.Second || late.Grace != 3*time.Second || !strings.Contains(late.Clock, c.clock) ||
				!strings.Contains(err.Error(), "did not start") || !strings.Contains(err.Error(), "--start-grace 3s") {
				t.Fatalf("%s: %+v: %v", c.name, late, err)
			}
			if !os.IsNotExist(statErr) {
				t.Fatalf("%s: a shard that did not start wrote %s", c.name, ShardFile)
			}
		} else if statErr != nil {
			t.Fatalf("%s: %v", c.name, statErr)
		}
	}
}
