package main

import (
	"context"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/internal/pipenet"
	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestAgenticSessionsAgainstEngine replays two agentic sessions (a plan, three sub-agents
// after tool delays, a join after a think time, then a last call) against the reference
// engine on virtual time. Against the engine's ground truth: each turn reached the engine
// exactly its think time and tool delay after the dependency that released it finished there,
// every session's wall time and its model/tool/think split add up to the engine's timelines,
// token totals are exact, and the session header arrived with every request.
func TestAgenticSessionsAgainstEngine(t *testing.T) {
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	var reqs []traces.Request
	for _, s := range []string{"s1", "s2"} {
		turn := func(n, in, out int, after []int, think, tool time.Duration) traces.Request {
			return traces.Request{ID: s + "-" + string(rune('0'+n)), Session: s, Turn: n, InputTokens: in, OutputTokens: out,
				After: after, Think: think, ToolDelay: tool, Arrival: ms(len(reqs) * 7), HashIDs: []int64{int64(len(s)), int64(n)}}
		}
		reqs = append(reqs,
			turn(1, 300, 40, nil, 0, 0),
			turn(2, 120, 30, []int{1}, 0, ms(150)),
			turn(3, 90, 50, []int{1}, 0, ms(40)),
			turn(4, 200, 20, []int{1}, 0, ms(95)),
			turn(5, 60, 60, []int{2, 3, 4}, ms(500), 0),
			turn(6, 30, 25, nil, 0, ms(75)),
		)
	}
	synctest.Test(t, func(t *testing.T) {
		eng, err := refengine.New(refengine.Config{Seed: 3, Clock: &bubbleClock{epoch: time.Now()}})
		if err != nil {
			t.Fatal(err)
		}
		defer eng.Close()
		var hmu sync.Mutex
		affinity := map[string]string{}
		ln := pipenet.New()
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			hmu.Lock()
			affinity[r.Header.Get("X-Request-Id")] = r.Header.Get("X-Session-Id")
			hmu.Unlock()
			eng.Handler().ServeHTTP(w, r)
		})}
		served := make(chan struct{})
		go func() { srv.Serve(ln); close(served) }()
		defer func() { srv.Close(); <-served }()
		lo := loadgen.Options{
			Target: loadgen.Target{URL: "http://engine", Model: eng.ServedModelName(), Backend: "vllm", Stream: true, SessionHeader: "x-session-id"},
			Seed:   1, Grace: time.Second, Clock: loadClock{}, Dial: ln.Dial, Tokenizer: tokenizer.Reference{},
		}
		var mu sync.Mutex
		var recs metrics.SliceSource
		res, err := loadgen.Run(context.Background(), reqs, lo, func(r *metrics.Record) {
			mu.Lock()
			cp := *r
			cp.Chunks = append([]metrics.Chunk(nil), r.Chunks...)
			recs = append(recs, cp)
			mu.Unlock()
		})
		if err != nil {
			t.Fatal(err)
		}
		if res.Succeeded != len(reqs) {
			t.Fatalf("result %+v", res)
		}
		tl := map[string]refengine.Timeline{}
		byID := map[string]metrics.Record{}
		var outRec, outEng, inRec, inEng, requested int
		for _, r := range recs {
			g, ok := eng.Timeline(r.ID)
			if !ok {
				t.Fatalf("no ground truth for %s", r.ID)
			}
			tl[r.ID], byID[r.ID] = g, r
			outRec += r.OutputTokens
			outEng += g.OutputTokens
			inRec += r.InputTokens
			inEng += g.PromptTokens
			requested += r.RequestedTokens
			if affinity[r.ID] != r.Session {
				t.Errorf("%s: session header %q, want %q", r.ID, affinity[r.ID], r.Session)
			}
		}
		if outRec != outEng || outRec != requested || inRec != inEng {
			t.Errorf("tokens: output %d recorded / %d engine / %d requested; input %d recorded / %d engine", outRec, outEng, requested, inRec, inEng)
		}
		// Each released turn reached the engine exactly think + tool after its dependency
		// finished there; the join was released by the sub-agent that finished last.
		for _, q := range reqs {
			r := byID[q.ID]
			if r.After == "" {
				continue
			}
			gap := tl[q.ID].Arrival - tl[r.After].Finish
			if gap != q.Think+q.ToolDelay {
				t.Errorf("%s: reached the engine %v after %s finished, want think %v + tool %v", q.ID, gap, r.After, q.Think, q.ToolDelay)
			}
		}
		for _, s := range []string{"s1", "s2"} {
			last := s + "-4"
			for _, id := range []string{s + "-2", s + "-3"} {
				if tl[id].Finish > tl[last].Finish {
					last = id
				}
			}
			if byID[s+"-5"].After != last {
				t.Errorf("%s: the join was released by %s, want %s (the sub-agent that finished last)", s, byID[s+"-5"].After, last)
			}
		}
		sum, err := metrics.Summarize(recs, metrics.Options{})
		if err != nil {
			t.Fatal(err)
		}
		ss := sum.Sessions
		if ss == nil || ss.Count != 2 || ss.Completed != 2 || ss.Turns != 12 {
			t.Fatalf("sessions %+v", ss)
		}
		// Ground truth per session: wall = last finish - first arrival on the engine; the
		// critical path's model time is the engine's own time on its turns.
		var wallMax, modelMax float64
		for _, s := range []string{"s1", "s2"} {
			first, end := tl[s+"-1"].Arrival, tl[s+"-6"].Finish
			path := []string{s + "-6", s + "-5", byID[s+"-5"].After, s + "-1"}
			var model time.Duration
			for _, id := range path {
				model += tl[id].Finish - tl[id].Arrival
			}
			wall := end - first
			tool := byID[s+"-6"].ToolDelay + byID[path[2]].ToolDelay
			think := byID[s+"-5"].Think
			if wall != model+time.Duration(tool+think) {
				t.Errorf("%s: engine wall %v != model %v + tool %v + think %v", s, wall, model, time.Duration(tool), time.Duration(think))
			}
			wallMax = max(wallMax, float64(wall)/1e6)
			modelMax = max(modelMax, float64(model)/1e6)
		}
		near := func(got, want float64) bool { return got >= want && got <= want*1.001+0.001 } // HdrHistogram's 0.1%
		if !near(ss.WallMs.Max, wallMax) || !near(ss.ModelMs.Max, modelMax) {
			t.Errorf("summary wall max %v model max %v, engine ground truth %v / %v", ss.WallMs.Max, ss.ModelMs.Max, wallMax, modelMax)
		}
	})
}

// TestImportAgenticCLI imports a Weka trace and a Mooncake toolagent trace through the CLI:
// the sessions come out with their dependencies, the Weka block size is named with how to
// replay it, and --tpot-ms changes the derived tool delays.
func TestImportAgenticCLI(t *testing.T) {
	dir := t.TempDir()
	out := filepath.Join(dir, "weka.jsonl")
	app := newTestApp(nil)
	if code := app.cli("import", "--format", "weka", "../../traces/testdata/import/weka.jsonl", "-o", out); code != 0 {
		t.Fatalf("import weka: %s", app.err.String())
	}
	if !strings.Contains(app.err.String(), "--prefix-block-tokens 64") {
		t.Errorf("no replay note for 64-token blocks: %s", app.err.String())
	}
	reqs, err := traces.ReadFile(out, traces.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if st := traces.ComputeStats(reqs); st.Sessions != 2 || st.Agentic == nil || st.Agentic.JoinTurns != 2 {
		t.Fatalf("weka stats %+v", st)
	}
	delays := func(tpot string) time.Duration {
		out := filepath.Join(dir, "ta-"+tpot+".jsonl")
		app := newTestApp(nil)
		if code := app.cli("import", "--format", "toolagent", "--drop-failed", "--tpot-ms", tpot, "../../traces/testdata/import/toolagent.jsonl", "-o", out); code != 0 {
			t.Fatalf("import toolagent: %s", app.err.String())
		}
		reqs, err := traces.ReadFile(out, traces.ReadOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var sum time.Duration
		for _, q := range reqs {
			sum += q.ToolDelay
		}
		return sum
	}
	if a, b := delays("30"), delays("100"); a <= b || b <= 0 {
		t.Errorf("tool delays %v at 30 ms per token, %v at 100 ms", a, b)
	}
}
