package engineadapter

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// promptLog records, in arrival order, the prompt of every generation request a server got,
// and "FLUSH" where the A/B flushed its cache.
type promptLog struct {
	mu      sync.Mutex
	entries []string
}

func (l *promptLog) add(s string) {
	l.mu.Lock()
	l.entries = append(l.entries, s)
	l.mu.Unlock()
}

// recordingEngine serves the reference engine (wire personality wire, specK speculative
// tokens) behind a handler that logs each request's prompt.
func recordingEngine(t *testing.T, wire string, specK int) (*httptest.Server, *refengine.Engine, *promptLog) {
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50, Wire: wire, SpecK: specK})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(eng.Close)
	log := &promptLog{}
	h := eng.Handler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && strings.HasPrefix(r.URL.Path, "/v1/") {
			b, _ := io.ReadAll(r.Body)
			r.Body = io.NopCloser(bytes.NewReader(b))
			var q struct {
				Prompt   string `json:"prompt"`
				Messages []struct {
					Content string `json:"content"`
				} `json:"messages"`
			}
			json.Unmarshal(b, &q)
			for _, m := range q.Messages {
				q.Prompt += m.Content
			}
			log.add(q.Prompt)
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, eng, log
}

// abTrace: two shared-prefix groups (two 512-token blocks each, the first shared within the
// group) and one request with its own text, which salting leaves alone.
func abTrace() []traces.Request {
	var reqs []traces.Request
	for i := range 6 {
		reqs = append(reqs, traces.Request{ID: fmt.Sprint(i), Arrival: time.Duration(i) * 40 * time.Millisecond,
			InputTokens: 1100, OutputTokens: 4, HashIDs: []int64{int64(1 + i%2), int64(10 + i)}})
	}
	return append(reqs, traces.Request{ID: "own", Arrival: 300 * time.Millisecond, Prompt: "a prompt of its own", InputTokens: 5, OutputTokens: 4})
}

// runABLogged runs a 2-repeat A/B of two engines with ind and returns each arm's log cut into
// warm-up, run 1 and run 2 (the interleaving is A B B A, so each arm's runs are in order).
// flushed says, per arm and measured run, whether a flush came right before it.
func runABLogged(t *testing.T, ind runner.Independence) (logs map[string][][]string, flushed map[string][]bool, res *runner.ABResult) {
	reqs := abTrace()
	const warm = 2
	logs, flushed = map[string][][]string{}, map[string][]bool{}
	var arms []runner.Arm
	var raw []*promptLog
	for _, name := range []string{"A", "B"} {
		srv, eng, log := recordingEngine(t, map[string]string{"A": "vllm", "B": "llamacpp"}[name], 0)
		lo := loadgen.Options{Target: loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 3, Grace: time.Second}
		arms = append(arms, runner.Arm{Name: name, Produce: runner.HTTPProducer(lo, 50), Salted: runner.SaltedHTTPProducer(lo, 50),
			Info: metrics.RunInfo{Seed: 3}, FlushMethod: "test flush",
			Flush: func(context.Context) error { log.add("FLUSH"); return nil }})
		raw = append(raw, log)
	}
	opts := runner.ABOptions{Requests: reqs, Repeats: 2, WarmupRequests: warm, OutDir: t.TempDir(), Independence: ind,
		Compare: metrics.CompareOptions{Resamples: 50, Seed: 1, Confidence: 0.95}}
	res, err := runner.AB(context.Background(), opts, arms[0], arms[1])
	if err != nil {
		t.Fatal(err)
	}
	for i, name := range []string{"A", "B"} {
		e := raw[i].entries
		var runs [][]string
		runs = append(runs, e[:warm])
		e = e[warm:]
		for len(e) > 0 {
			flushed[name] = append(flushed[name], e[0] == "FLUSH")
			if e[0] == "FLUSH" {
				e = e[1:]
			}
			n := min(len(reqs), len(e))
			run := slices.Clone(e[:n])
			slices.Sort(run) // concurrent requests arrive in any order
			runs = append(runs, run)
			e = e[n:]
		}
		if len(runs) != 3 {
			t.Fatalf("arm %s: %d runs in the log, want warm-up and 2", name, len(runs))
		}
		logs[name] = runs
	}
	return logs, flushed, res
}

// TestABSaltedRepeatsAreIndependent: with salted repeats, both arms of a repeat get identical
// prompts, no synthesized prompt (nor any 512-token block) of repeat 1 comes back in repeat 2
// or the warm-up, every prompt keeps its token count, and requests that share hash ids still
// share their leading block within a repeat. The request with its own text is sent as it is.
func TestABSaltedRepeatsAreIndependent(t *testing.T) {
	logs, flushed, res := runABLogged(t, runner.Independence{Salt: true})
	if !slices.Equal(flushed["A"], []bool{false, false}) || !slices.Equal(flushed["B"], []bool{false, false}) {
		t.Errorf("flushes without --independent-repeats flush: %v", flushed)
	}
	if !strings.Contains(res.Independence, "salted") || !strings.Contains(res.Independence, "1 of 7 requests carry their own text") {
		t.Errorf("independence %q", res.Independence)
	}
	if !slices.ContainsFunc(res.Comparison.Warnings, func(w string) bool { return strings.HasPrefix(w, "1 of 7 requests carry their own prompt text") }) {
		t.Errorf("no warning of the request repeated identically: %q", res.Comparison.Warnings)
	}
	// Greedy outputs follow the prompt: identical between the arms of a repeat, different
	// between repeats, so the check pairs runs of one repeat.
	if e := res.Comparison.Equivalence; e == nil || e.Compared != 7 || e.Mismatched != 0 {
		t.Errorf("output equivalence %+v, want 7 compared and none mismatched", e)
	}
	for rep := 1; rep <= 2; rep++ {
		if !slices.Equal(logs["A"][rep], logs["B"][rep]) {
			t.Errorf("repeat %d: the arms got different prompts", rep)
		}
	}
	blocks := map[string]int{} // first block text → repeat
	for rep := 0; rep <= 2; rep++ {
		for _, p := range logs["A"][rep] {
			if p == "a prompt of its own" {
				continue
			}
			if n := (tokenizer.Reference{}).Count(p); n != 1100 {
				t.Errorf("repeat %d: a prompt of %d tokens, want 1100", rep, n)
			}
			words := strings.SplitAfter(p, " ")
			first := strings.Join(words[:512], "")
			if r, ok := blocks[first]; ok && r != rep {
				t.Errorf("a 512-token block of repeat %d came back in repeat %d", r, rep)
			}
			blocks[first] = rep
		}
	}
	if len(blocks) != 2+2+2 { // two groups per repeat (warm-up included), shared inside each
		t.Errorf("%d distinct leading blocks, want 2 per repeat", len(blocks))
	}
	for rep := 1; rep <= 2; rep++ {
		if !slices.Contains(logs["A"][rep], "a prompt of its own") {
			t.Errorf("repeat %d: the request's own prompt was changed", rep)
		}
	}
}

// TestABFlushedAndIdenticalRepeats: with flush and no salt every repeat sends the same
// prompts, and each arm's cache is flushed right before each of its measured runs (never
// before the warm-up); with neither, the output says the repeats are identical.
func TestABFlushedAndIdenticalRepeats(t *testing.T) {
	logs, flushed, res := runABLogged(t, runner.Independence{Flush: true})
	for _, arm := range []string{"A", "B"} {
		if !slices.Equal(flushed[arm], []bool{true, true}) || slices.Contains(logs[arm][0], "FLUSH") {
			t.Errorf("arm %s: flushed before its runs %v, warm-up %q", arm, flushed[arm], logs[arm][0])
		}
	}
	if !strings.Contains(res.Independence, "flushed before every measured run (A: test flush, B: test flush)") {
		t.Errorf("independence %q", res.Independence)
	}
	if !slices.Equal(logs["A"][1], logs["A"][2]) || !slices.Equal(logs["A"][1], logs["B"][1]) {
		t.Error("flushed repeats sent different prompts")
	}
	_, _, res = runABLogged(t, runner.Independence{})
	if !strings.Contains(res.Independence, "identical prompts in every repeat") ||
		!slices.ContainsFunc(res.Comparison.Warnings, func(w string) bool { return strings.HasPrefix(w, "repeats are not independent") }) {
		t.Errorf("independence %q, warnings %q", res.Independence, res.Comparison.Warnings)
	}
}

// TestServerConfigOfEngineWires: the reference engine's configuration, read over HTTP as from
// any endpoint, shows no difference between two processes of one configuration in any wire
// personality, shows speculative decoding on against off, and the engine's prefix cache is
// flushed by SGLang's endpoint, the first tried (refengine/flush.go).
func TestServerConfigOfEngineWires(t *testing.T) {
	for _, wire := range refengine.Wires {
		cfg := func(specK int) map[string]string {
			srv, eng, _ := recordingEngine(t, wire, specK)
			return runner.FetchServerConfig(context.Background(), srv.URL+"/v1", "", eng.ServedModelName(), nil)
		}
		a, same, spec := cfg(0), cfg(0), cfg(4)
		if a["server.wire"] != wire || a["models"] == "" {
			t.Errorf("wire %s: facts %v", wire, a)
		}
		if d := runner.DiffConfig(a, same); len(d) != 0 {
			t.Errorf("wire %s: two engines of one configuration differ: %+v", wire, d)
		}
		found := false
		for _, d := range runner.DiffConfig(a, spec) {
			found = found || d.Key == "server.num_speculative_tokens"
		}
		if !found {
			t.Errorf("wire %s: spec-k 0 vs 4 not listed: %+v", wire, runner.DiffConfig(a, spec))
		}
	}
	srv, _, _ := recordingEngine(t, "vllm", 0)
	if f, err := runner.NewCacheFlush(context.Background(), srv.URL, ""); err != nil || f.Method != "SGLang POST /flush_cache" {
		t.Errorf("cache flush of the engine: %v, %v", f, err)
	}
}

// TestCompareSaltedRunDirs: a later compare of a salted A/B's run directories pairs runs of
// the same prompt salt for the output check, in whatever order the directories are given;
// runs with no partner of their salt are said to be left out, never flagged as differing.
func TestCompareSaltedRunDirs(t *testing.T) {
	_, _, res := runABLogged(t, runner.Independence{Salt: true})
	compare := func(base, cand []string) *metrics.Comparison {
		bs, err := runner.RecordSources(base)
		if err != nil {
			t.Fatal(err)
		}
		cs, err := runner.RecordSources(cand)
		if err != nil {
			t.Fatal(err)
		}
		c, err := metrics.Compare(bs, cs, metrics.CompareOptions{Resamples: 50, Seed: 1, Confidence: 0.95})
		if err != nil {
			t.Fatal(err)
		}
		runner.AttachRunFacts(c, base, cand)
		return c
	}
	a, b := res.Dirs["A"], res.Dirs["B"]
	c := compare(a, []string{b[1], b[0]})
	if e := c.Equivalence; e == nil || e.Compared != 7 || e.Mismatched != 0 {
		t.Errorf("A-1 A-2 vs B-2 B-1: equivalence %+v", e)
	}
	c = compare(a[:1], a[1:])
	if c.Equivalence != nil || !slices.ContainsFunc(c.Warnings, func(w string) bool { return strings.HasPrefix(w, "2 of 2 runs sent salted prompts") }) {
		t.Errorf("A-1 vs A-2: equivalence %+v, warnings %q", c.Equivalence, c.Warnings)
	}
}
