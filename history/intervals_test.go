package history

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/metrics"
)

// writeRun writes a results directory as llmbench writes one: requests.msgpack with n
// requests 100 ms apart (TTFT 100 ms + N(0, sd), 10 chunks 5 ms apart) and the summary of
// those records.
func writeRun(t *testing.T, dir string, r *rand.Rand, n int, sd float64, start time.Time) string {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	rw, err := metrics.CreateRecordFile(filepath.Join(dir, "requests.msgpack"))
	if err != nil {
		t.Fatal(err)
	}
	const ms = int64(time.Millisecond)
	var recs metrics.SliceSource
	for i := 0; i < n; i++ {
		t0 := int64(i)*100*ms + 1
		rec := metrics.Record{ID: fmt.Sprintf("r%04d", i), Intended: t0, Dispatched: t0, Sent: t0, Headers: t0 + 1,
			InputTokens: 100, TokenSource: metrics.TokensFromUsage, ServerInputTokens: -1, ServerOutputTokens: -1, Status: 200}
		at := t0 + int64((100+r.NormFloat64()*sd)*float64(ms))
		rec.FirstToken = at
		for k := 0; k < 10; k++ {
			rec.Chunks = append(rec.Chunks, metrics.Chunk{T: at + int64(k)*5*ms, Tokens: 1})
		}
		rec.End = rec.Chunks[9].T
		rec.OutputTokens, rec.RequestedTokens = 10, 10
		if err := rw.Write(&rec); err != nil {
			t.Fatal(err)
		}
		recs = append(recs, rec)
	}
	if err := rw.Close(); err != nil {
		t.Fatal(err)
	}
	sum, err := metrics.Summarize(recs, metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	sum.Run.Start = start.UTC().Format(time.RFC3339Nano)
	sum.Run.Trace = "synthetic.jsonl"
	raw, err := json.Marshal(sum)
	if err != nil {
		t.Fatal(err)
	}
	return writeResults(t, dir, raw)
}

// A run added with its records keeps its own intervals (every metric the records reproduce,
// but no per-run throughput), history show prints them, adding it again changes nothing, and a
// run recorded without them (an older store) gets them when it is added again.
func TestStoreKeepsEachRunsOwnIntervals(t *testing.T) {
	eachStore(t, func(t *testing.T, dsn string) {
		ctx := context.Background()
		st, err := Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		dir := writeRun(t, filepath.Join(t.TempDir(), "night-1"), rand.New(rand.NewPCG(1, 2)), 400, 10, time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC))
		added, err := st.Add(ctx, []string{dir}, AddOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if a := added[0]; !a.New || a.Intervals < 20 || a.Intervals >= a.Metrics {
			t.Fatalf("added %+v: want a new run with intervals for most (not all) of its metrics", a)
		}
		run, err := st.FindRun(ctx, fmt.Sprint(added[0].ID))
		if err != nil {
			t.Fatal(err)
		}
		ttft, ok := run.Intervals["ttft.mean"]
		if !ok {
			t.Fatalf("no ttft.mean interval in %v", run.Intervals)
		}
		// 400 independent TTFTs of sd 10 ms: SE ≈ 0.5 ms.
		if ttft.Value != run.Metrics["ttft.mean"] || ttft.SE < 0.3 || ttft.SE > 0.8 || ttft.Lo >= ttft.Value || ttft.Hi <= ttft.Value {
			t.Errorf("ttft.mean interval %+v (metric %v): want SE ≈ 0.5 ms around the metric", ttft, run.Metrics["ttft.mean"])
		}
		if _, ok := run.Intervals["throughput.output_tokens_per_s"]; ok {
			t.Error("a per-run throughput got a within-run interval")
		}
		var show strings.Builder
		if err := WriteShow(&show, run); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(show.String(), "own 95% interval") || !strings.Contains(show.String(), fmt.Sprintf("[%s, %s]", fmtVal(ttft.Lo, "ms"), fmtVal(ttft.Hi, "ms"))) {
			t.Errorf("history show does not print the run's intervals:\n%s", show.String())
		}

		again, err := st.Add(ctx, []string{dir}, AddOptions{})
		if err != nil || again[0].New || again[0].Backfilled || again[0].Intervals != added[0].Intervals {
			t.Fatalf("add again: %+v, %v; want it left as it is", again, err)
		}
		if _, err := st.db.Exec(st.q(`DELETE FROM run_intervals WHERE run_id = ?`), added[0].ID); err != nil {
			t.Fatal(err)
		}
		back, err := st.Add(ctx, []string{dir}, AddOptions{})
		if err != nil || back[0].New || !back[0].Backfilled || back[0].Intervals != added[0].Intervals {
			t.Fatalf("add to a store without the run's intervals: %+v, %v; want them added", back, err)
		}
		run2, _ := st.FindRun(ctx, fmt.Sprint(added[0].ID))
		if run2.Intervals["ttft.mean"] != ttft {
			t.Errorf("backfilled interval %+v, first %+v: the same results must give the same interval", run2.Intervals["ttft.mean"], ttft)
		}
	})
}

// The check takes each point's own noise into account: a step that stands out in a series of
// close agreeing runs is a regression when it exceeds what each run's own interval allows,
// and only a weak change, which does not fail the check, when it is within that noise.
func TestCheckWeighsEachRunsOwnNoise(t *testing.T) {
	series := func(se float64) []*Run {
		r := rand.New(rand.NewPCG(9, 9))
		var runs []*Run
		for i := 0; i < 24; i++ {
			v := 100 + r.NormFloat64()*0.2
			if i >= 12 {
				v += 5
			}
			run := &Run{ID: int64(i + 1), Start: time.Date(2026, 11, 1+i, 2, 0, 0, 0, time.UTC),
				Facts: map[string]string{}, Tags: map[string]string{}, Metrics: map[string]float64{"ttft.p99": v}}
			if se > 0 {
				run.Intervals = map[string]metrics.RunInterval{"ttft.p99": {Value: v, Lo: v - 2*se, Hi: v + 2*se, SE: se}}
			}
			runs = append(runs, run)
		}
		return runs
	}
	for _, tc := range []struct {
		se     float64
		fails  bool
		within bool
	}{
		{0, true, false},   // recorded without intervals: the series' spread decides
		{0.5, true, false}, // each run ±1 ms: a 5 ms step is far outside
		{12, false, true},  // each run ±24 ms: 12 runs each side cannot tell 5 ms apart
	} {
		res, err := CheckRuns(series(tc.se), CheckOptions{Metrics: []string{"ttft.p99"}})
		if err != nil {
			t.Fatal(err)
		}
		cs := res.Series[0].Changes
		if len(cs) != 1 || cs[0].Index != 12 {
			t.Fatalf("se %g: changes %+v, want one at run 13", tc.se, cs)
		}
		c := cs[0]
		if res.Failed != tc.fails || c.Within != tc.within || (tc.within && !c.Weak) {
			t.Errorf("se %g: failed=%v within=%v weak=%v; want failed=%v within=%v", tc.se, res.Failed, c.Within, c.Weak, tc.fails, tc.within)
		}
		if tc.se > 0 && math.Abs(c.Before.WithinSE-tc.se) > 1e-9 {
			t.Errorf("se %g: before's within-run SE %g", tc.se, c.Before.WithinSE)
		}
		var out strings.Builder
		if err := WriteCheck(&out, res, "text"); err != nil {
			t.Fatal(err)
		}
		if tc.within && !strings.Contains(strings.ToLower(out.String()), "within the runs' own noise") {
			t.Errorf("se %g: the report does not say the change is within the runs' noise:\n%s", tc.se, out.String())
		}
	}
}

// A run of more requests than MaxIntervalRequests is recorded without its own intervals, and
// add says so rather than holding every request's values for the bootstrap.
func TestStoreLeavesOutIntervalsOfHugeRuns(t *testing.T) {
	dir := writeRun(t, filepath.Join(t.TempDir(), "night"), rand.New(rand.NewPCG(4, 4)), 40, 10, time.Date(2026, 11, 1, 2, 0, 0, 0, time.UTC))
	// The summary claims more requests than the bound (the records are not read then).
	raw, err := os.ReadFile(filepath.Join(dir, "summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sum metrics.Summary
	if err := json.Unmarshal(raw, &sum); err != nil {
		t.Fatal(err)
	}
	sum.Requests.Total = MaxIntervalRequests + 1
	raw, _ = json.Marshal(sum)
	writeResults(t, dir, raw)
	st, err := Open(context.Background(), filepath.Join(t.TempDir(), "h.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	added, err := st.Add(context.Background(), []string{dir}, AddOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if a := added[0]; a.Intervals != 0 || !strings.Contains(a.IntervalsLeftOut, "left out") || !strings.Contains(a.IntervalsLeftOut, fmt.Sprint(MaxIntervalRequests)) {
		t.Errorf("added %+v: want no intervals and a note naming the bound", a)
	}
}
