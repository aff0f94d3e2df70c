package engineadapter

import (
	"context"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
)

// TestScrapeWorkersSplitsServerPrefixCache: two reference engines behind a round-robin router
// (which serves no /metrics of its own); the run scrapes both workers, and server_prefix_cache
// has each worker's share equal to that engine's own counter increase, and their sum. The
// router spreads each prefix group over both workers, so neither reaches what one engine
// holding every group would.
func TestScrapeWorkersSplitsServerPrefixCache(t *testing.T) {
	var urls []string
	for i := 0; i < 2; i++ {
		_, u := primeServer(t, nil)
		urls = append(urls, u)
	}
	var next atomic.Int64
	proxies := make([]*httputil.ReverseProxy, 2)
	for i, u := range urls {
		target, err := url.Parse(u)
		if err != nil {
			t.Fatal(err)
		}
		proxies[i] = httputil.NewSingleHostReverseProxy(target)
		proxies[i].FlushInterval = -1
	}
	router := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/metrics" {
			http.NotFound(w, r)
			return
		}
		proxies[next.Add(1)%2].ServeHTTP(w, r)
	}))
	defer router.Close()
	var h0, q0 [2]float64
	for i, u := range urls {
		h0[i], q0[i] = engineCounters(t, u)
	}
	reqs := prefixHitTrace(t, 0.8)
	res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
		Trace: traces.FromSlice(reqs),
		Load: loadgen.Options{Target: loadgen.Target{URL: router.URL, Model: "llama-3.1-8b", Backend: "vllm", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second},
		TimeScale: 50, OutDir: t.TempDir(), ScrapeWorkers: urls,
	})
	if err != nil {
		t.Fatal(err)
	}
	got := res.Summary.ServerPrefixCache
	if got == nil || !got.Available || len(got.Endpoints) != 2 {
		t.Fatalf("server prefix cache %+v", got)
	}
	var hits, queries float64
	for i, u := range urls {
		h1, q1 := engineCounters(t, u)
		e := got.Endpoints[i]
		if !e.Available || e.Hits != h1-h0[i] || e.Queries != q1-q0[i] || e.Queries == 0 {
			t.Fatalf("worker %d: run's %v / %v, the engine's own %v / %v", i, e.Hits, e.Queries, h1-h0[i], q1-q0[i])
		}
		hits, queries = hits+e.Hits, queries+e.Queries
		t.Logf("worker %d (%s): %.4f (%v of %v)", i, e.Endpoint, e.HitRate, e.Hits, e.Queries)
	}
	if got.Hits != hits || got.Queries != queries {
		t.Fatalf("total %v / %v, workers' sum %v / %v", got.Hits, got.Queries, hits, queries)
	}
	pc := res.Summary.PrefixCache
	if pc == nil || pc.HitRate >= *pc.DesignedHitRate {
		t.Fatalf("records' rate %+v: a router spreading the groups should lose some reuse", pc)
	}
}
