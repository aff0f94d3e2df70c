package engineadapter

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// engineCounters reads the reference engine's own prefix-cache counters from its /metrics
// (refengine/metrics.go writes them from its block accounting), with a parser of the test's
// own: the run's figure must equal them, whatever runner/scrape.go parses.
func engineCounters(t *testing.T, url string) (hits, queries float64) {
	t.Helper()
	resp, err := http.Get(url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	found := 0
	for sc.Scan() {
		line := sc.Text()
		for name, dst := range map[string]*float64{"vllm:prefix_cache_hits_total{": &hits, "vllm:prefix_cache_queries_total{": &queries} {
			if strings.HasPrefix(line, name) {
				v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
				if err != nil {
					t.Fatalf("%q: %v", line, err)
				}
				*dst = v
				found++
			}
		}
	}
	if found != 2 {
		t.Fatalf("the engine's /metrics has %d of the two prefix-cache counters", found)
	}
	return hits, queries
}

// sharedPrefixTrace is n requests sharing a three-block prefix, each with a block of its own.
func sharedPrefixTrace(n int, salt int64) []traces.Request {
	reqs := make([]traces.Request, n)
	for i := range reqs {
		reqs[i] = traces.Request{ID: "r" + strconv.Itoa(i), Arrival: time.Duration(i) * 20 * time.Millisecond,
			InputTokens: 2048, OutputTokens: 8, HashIDs: []int64{1, 2, 3, salt + int64(i)}}
	}
	return reqs
}

// TestRunReportsTheEngineServerPrefixCacheDelta runs a shared-prefix trace with
// --scrape-metrics against the reference engine over HTTP, after a first run that leaves its
// counters above zero, and checks that the summary's server hit rate is the increase of the
// engine's own counters over the second run: not their totals since the engine started.
func TestRunReportsTheEngineServerPrefixCacheDelta(t *testing.T) {
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	defer eng.Close()
	srv := httptest.NewServer(eng.Handler())
	defer srv.Close()
	run := func(reqs []traces.Request) *runner.Result {
		res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
			Trace: traces.FromSlice(reqs),
			Load: loadgen.Options{Target: loadgen.Target{URL: srv.URL, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
				Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second},
			TimeScale: 50, OutDir: t.TempDir(), Scrape: true,
		})
		if err != nil {
			t.Fatal(err)
		}
		return res
	}
	run(sharedPrefixTrace(6, 1000))
	h0, q0 := engineCounters(t, srv.URL)
	if h0 == 0 || q0 == 0 {
		t.Fatalf("the first run left the engine's counters at %v / %v", h0, q0)
	}
	res := run(sharedPrefixTrace(12, 2000))
	h1, q1 := engineCounters(t, srv.URL)
	got := res.Summary.ServerPrefixCache
	if got == nil || !got.Available || got.Backend != "vllm" || got.Resets != 0 {
		t.Fatalf("server prefix cache %+v", got)
	}
	if got.Hits != h1-h0 || got.Queries != q1-q0 {
		t.Fatalf("run's delta %v / %v, engine's own %v / %v (totals %v / %v)", got.Hits, got.Queries, h1-h0, q1-q0, h1, q1)
	}
	if got.Hits <= 0 || got.HitRate <= 0.5 || got.HitRate >= 1 {
		t.Fatalf("hit rate %v (%v of %v): the shared prefix should mostly hit", got.HitRate, got.Hits, got.Queries)
	}
	t.Logf("server hit rate %.4f (%v of %v tokens), scrapes at %.3f and %.3f s", got.HitRate, got.Hits, got.Queries, got.WindowStartS, got.WindowEndS)
	if th := res.Summary.Throughput; got.WindowStartS > th.WindowStartS || got.WindowEndS < th.WindowEndS {
		t.Fatalf("scrapes at %v and %v do not bracket the window [%v, %v]", got.WindowStartS, got.WindowEndS, th.WindowStartS, th.WindowEndS)
	}
}
