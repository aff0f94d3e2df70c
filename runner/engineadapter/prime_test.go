package engineadapter

import (
	"context"
	"math"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmbench/llmbench/loadgen"
	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/runner"
	"github.com/llmbench/llmbench/tokenizer"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// prefixHitTrace is the prefix-hit preset (llmbench gen --preset prefix-hit) at a designed hit
// rate, 20 s at 3 requests/s.
func prefixHitTrace(t *testing.T, rate float64) []traces.Request {
	t.Helper()
	spec, err := workloads.Preset("prefix-hit")
	if err != nil {
		t.Fatal(err)
	}
	spec.Seed, spec.DurationS, spec.Arrival.Rate = 3, 20, 3
	if _, err := workloads.SetPrefixHitRate(&spec, rate); err != nil {
		t.Fatal(err)
	}
	reqs, err := workloads.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	return reqs
}

// primeServer serves a reference engine on 127.0.0.1, through wrap when set.
func primeServer(t *testing.T, wrap func(http.Handler) http.Handler) (*refengine.Engine, string) {
	t.Helper()
	eng, err := refengine.New(refengine.Config{Seed: 1, TimeScale: 50})
	if err != nil {
		t.Fatal(err)
	}
	h := eng.Handler()
	if wrap != nil {
		h = wrap(h)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() { srv.Close(); eng.Close() })
	return eng, srv.URL
}

func primeRun(t *testing.T, eng *refengine.Engine, url string, reqs []traces.Request, prime *runner.PrefixPriming) (*metrics.Summary, []metrics.Record) {
	t.Helper()
	dir := t.TempDir()
	res, err := runner.RunHTTP(context.Background(), runner.HTTPRun{
		Trace: traces.FromSlice(reqs),
		Load: loadgen.Options{Target: loadgen.Target{URL: url, Model: eng.ServedModelName(), Backend: "vllm", Stream: true},
			Tokenizer: tokenizer.Reference{}, Seed: 1, Grace: time.Second},
		TimeScale: 50, OutDir: dir, Scrape: true, Prime: prime,
	})
	if err != nil {
		t.Fatal(err)
	}
	recs, err := metrics.ReadRecords(filepath.Join(dir, runner.RecordsFile))
	if err != nil {
		t.Fatal(err)
	}
	return res.Summary, recs
}

// TestPrimedRunAtRequestedHitRate: the prefix-hit trace at 50% and 90%, replayed once without
// priming (which leaves every prompt cached) and then with --prefix-hit-rate: the flush drops
// that cache and priming fills the groups, so the measured window runs at the requested rate
// within 2 pp by the records and by the engine's counters, with no warning.
func TestPrimedRunAtRequestedHitRate(t *testing.T) {
	for _, rate := range []float64{0.5, 0.9} {
		eng, url := primeServer(t, nil)
		reqs := prefixHitTrace(t, rate)
		primeRun(t, eng, url, reqs, nil) // the server now holds every prompt of the trace
		_, q0 := engineCounters(t, url)
		sum, _ := primeRun(t, eng, url, reqs, &runner.PrefixPriming{RequestedHitRate: rate})
		_, q1 := engineCounters(t, url)
		p, pc, spc := sum.PrefixPriming, sum.PrefixCache, sum.ServerPrefixCache
		if p == nil || pc == nil || spc == nil || !spc.Available {
			t.Fatalf("rate %v: priming %+v, prefix cache %+v, server %+v", rate, p, pc, spc)
		}
		t.Logf("rate %v: records %.4f, server %.4f, designed %.4f, %d groups primed (%d tokens) by %s",
			rate, pc.HitRate, spc.HitRate, *pc.DesignedHitRate, p.Groups, p.Tokens, p.Flushed)
		if p.Flushed == "" || p.Groups == 0 || p.Failed != 0 || !p.Verified {
			t.Fatalf("rate %v: priming %+v", rate, *p)
		}
		if math.Abs(pc.HitRate-rate) > 0.02 || math.Abs(spc.HitRate-rate) > 0.02 || math.Abs(*pc.DesignedHitRate-rate) > 1e-9 {
			t.Fatalf("rate %v: records %.4f, server %.4f, designed %.4f", rate, pc.HitRate, spc.HitRate, *pc.DesignedHitRate)
		}
		// The priming requests are outside the window: the scraped delta is the window's, and
		// the engine counted the priming's prompt tokens before it.
		if q1-q0 < spc.Queries+float64(p.Tokens) {
			t.Fatalf("rate %v: the engine was queried %v tokens in all, the window %v plus priming %d", rate, q1-q0, spc.Queries, p.Tokens)
		}
		for _, w := range sum.Warnings {
			if strings.Contains(w, "prefix") {
				t.Fatalf("rate %v: warning %q", rate, w)
			}
		}
	}
}

// TestUnprimedFirstRequestsMiss: on a fresh engine without priming, each group's first request
// finds nothing of its prefix cached, and the run falls below the rate the trace designs once
// primed; with priming, every request finds its prefix.
func TestUnprimedFirstRequestsMiss(t *testing.T) {
	const rate = 0.8
	reqs := prefixHitTrace(t, rate)
	prefix := int(math.Round(rate * float64(reqs[0].InputTokens)))
	for _, primed := range []bool{false, true} {
		eng, url := primeServer(t, nil)
		var prime *runner.PrefixPriming
		if primed {
			prime = &runner.PrefixPriming{RequestedHitRate: -1}
		}
		sum, recs := primeRun(t, eng, url, reqs, prime)
		byID := map[string]*metrics.Record{}
		for i := range recs {
			byID[recs[i].ID] = &recs[i]
		}
		missed := map[int64]int{} // misses per group
		groups := map[int64]bool{}
		for _, r := range reqs {
			rec := byID[r.ID]
			if rec == nil || !rec.OK() || rec.CacheSource == "" {
				t.Fatalf("primed %v: request %s: record %+v", primed, r.ID, rec)
			}
			groups[r.HashIDs[0]] = true
			if rec.CachedInputTokens < prefix-16 {
				missed[r.HashIDs[0]]++
			}
		}
		t.Logf("primed %v: %d groups, %d of them with misses; hit rate %.4f", primed, len(groups), len(missed), sum.PrefixCache.HitRate)
		// Unprimed, whichever request of a group the engine schedules first finds nothing (and
		// so may one arriving while it is still in prefill); primed, none misses.
		if want := map[bool]int{false: len(groups), true: 0}[primed]; len(missed) != want {
			t.Fatalf("primed %v: %d of %d groups had requests missing their prefix, want %d", primed, len(missed), len(groups), want)
		}
		if !primed && sum.PrefixCache.HitRate > rate-0.01 {
			t.Fatalf("unprimed hit rate %.4f, want below %.2f", sum.PrefixCache.HitRate, rate)
		}
		if primed && (sum.PrefixPriming == nil || sum.PrefixPriming.RequestedHitRate != nil || sum.PrefixPriming.Verified) {
			t.Fatalf("priming without a requested rate: %+v", sum.PrefixPriming)
		}
	}
}

// TestPrimingWithoutFlushEndpointWarns: a server that serves no flush endpoint (404, as TGI or
// a hosted API) gets a warning naming each method tried, the run is primed and measured
// anyway, and nothing fails.
func TestPrimingWithoutFlushEndpointWarns(t *testing.T) {
	eng, url := primeServer(t, func(h http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/metrics" {
				h.ServeHTTP(w, r)
				return
			}
			http.NotFound(w, r)
		})
	})
	sum, _ := primeRun(t, eng, url, prefixHitTrace(t, 0.5), &runner.PrefixPriming{RequestedHitRate: 0.5})
	p := sum.PrefixPriming
	if p == nil || p.Flushed != "" || !strings.Contains(p.FlushNote, "no prefix-cache flush") || p.Groups == 0 || !p.Verified {
		t.Fatalf("priming %+v", p)
	}
	found := false
	for _, w := range sum.Warnings {
		if strings.HasPrefix(w, "prefix cache not flushed before priming") && strings.Contains(w, "VLLM_SERVER_DEV_MODE=1") {
			found = true
		}
	}
	if !found {
		t.Fatalf("no flush warning in %q", sum.Warnings)
	}
}
