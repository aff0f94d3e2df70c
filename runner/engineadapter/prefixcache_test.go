package engineadapter

import (
	"bufio"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"testing/synctest"
	"time"

	"github.com/llmbench/llmbench/metrics"
	"github.com/llmbench/llmbench/refengine"
	"github.com/llmbench/llmbench/traces"
	"github.com/llmbench/llmbench/workloads"
)

// engineRun replays reqs over HTTP against a reference engine of wire personality wire on
// virtual time (a synctest bubble), with the API and streaming given; it returns the records,
// the engine's timeline of each, and its Prometheus text (its own counters).
func engineRun(t *testing.T, reqs []traces.Request, cfg refengine.Config, api string, stream bool) ([]metrics.Record, map[string]refengine.Timeline, string) {
	t.Helper()
	var recs []metrics.Record
	tls := map[string]refengine.Timeline{}
	var prom string
	synctest.Test(t, func(t *testing.T) {
		live := cfg
		live.Clock = &bubbleClock{epoch: time.Now()}
		eng, ln, stop := bubbleEngine(t, live)
		defer stop()
		replayInto(t, reqs, bubbleOptions(eng, ln, cfg.Wire, api, stream), &recs)
		for _, r := range recs {
			if tl, ok := eng.Timeline(r.ID); ok {
				tls[r.ID] = tl
			}
		}
		client := &http.Client{Transport: &http.Transport{DialContext: ln.Dial}}
		resp, err := client.Get("http://engine/metrics")
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		sc := bufio.NewScanner(resp.Body)
		for sc.Scan() {
			b.WriteString(sc.Text() + "\n")
		}
		resp.Body.Close()
		prom = b.String()
		client.CloseIdleConnections()
	})
	return recs, tls, prom
}

// promCounter reads a counter's value from Prometheus text (its labels, if any, ignored).
func promCounter(t *testing.T, text, name string) float64 {
	t.Helper()
	for _, line := range strings.Split(text, "\n") {
		f := strings.Fields(line)
		if len(f) == 2 {
			f[0], _, _ = strings.Cut(f[0], "{")
		}
		if len(f) == 2 && f[0] == name {
			v, err := strconv.ParseFloat(f[1], 64)
			if err != nil {
				t.Fatalf("%s: %v", line, err)
			}
			return v
		}
	}
	t.Fatalf("no %s in the engine's metrics", name)
	return 0
}

// TestCachedTokensMatchEngine: on every API and wire personality the reference engine serves,
// each record's cached prompt tokens are the engine's own prefix-cache hits for that request
// (Timeline.CachedTokens), read from the field that backend uses; and simulate reports the
// same hits for the same trace, so run and simulate agree per request.
func TestCachedTokensMatchEngine(t *testing.T) {
	reqs := agenticTrace()
	simCached := map[string]int{}
	a := &Simulator{Config: refengine.Config{Seed: 3}, RateScale: 1}
	if _, _, err := a.produceSessions(reqs, time.Hour, nil, func(r *metrics.Record) {
		if r.CacheSource != metrics.CacheFromEngine {
			t.Errorf("%s: simulate's cache source %q", r.ID, r.CacheSource)
		}
		simCached[r.ID] = r.CachedInputTokens
	}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		wire, api string
		stream    bool
		source    string
	}{
		{"vllm", "chat", true, metrics.CacheFromPromptDetails},
		{"vllm", "chat", false, metrics.CacheFromPromptDetails},
		{"sglang", "completions", true, metrics.CacheFromPromptDetails},
		{"openai", "chat", true, metrics.CacheFromPromptDetails},
		{"llamacpp", "chat", true, metrics.CacheFromTimings},
		{"vllm", "responses", true, metrics.CacheFromInputDetails},
		{"vllm", "responses", false, metrics.CacheFromInputDetails},
		{"vllm", "messages", true, metrics.CacheFromMessages},
		{"vllm", "messages", false, metrics.CacheFromMessages},
	} {
		name := tc.wire + "/" + tc.api
		if !tc.stream {
			name += "/whole"
		}
		t.Run(name, func(t *testing.T) {
			recs, tls, _ := engineRun(t, reqs, refengine.Config{Seed: 3, Wire: tc.wire}, tc.api, tc.stream)
			hits := 0
			for _, r := range recs {
				tl, ok := tls[r.ID]
				if !ok || !r.OK() {
					t.Fatalf("%s: timeline %v, %s %s", r.ID, ok, r.Failure, r.Error)
				}
				if r.CacheSource != tc.source || r.CachedInputTokens != tl.CachedTokens || r.InputTokens != tl.PromptTokens {
					t.Errorf("%s: cached %d (%q) of %d, the engine found %d of %d", r.ID, r.CachedInputTokens, r.CacheSource,
						r.InputTokens, tl.CachedTokens, tl.PromptTokens)
				}
				if tc.wire == "vllm" && tc.api == "chat" && tc.stream && simCached[r.ID] != r.CachedInputTokens {
					t.Errorf("%s: simulate reports %d cached, run %d", r.ID, simCached[r.ID], r.CachedInputTokens)
				}
				hits += r.CachedInputTokens
			}
			if hits == 0 {
				t.Fatal("no request found its prefix in the cache: the trace tests nothing")
			}
		})
	}
}

// TestAgenticPresetHitRate: the agentic preset (llmbench gen --preset agentic) replayed on the
// engine shows a hit rate within 1 pp of the engine's own counters
// (vllm:prefix_cache_hits_total over vllm:prefix_cache_queries_total).
func TestAgenticPresetHitRate(t *testing.T) {
	spec, err := workloads.Preset("agentic")
	if err != nil {
		t.Fatal(err)
	}
	spec.Seed, spec.DurationS, spec.Arrival.Rate = 7, 30, 0.5
	reqs, err := workloads.Generate(spec)
	if err != nil {
		t.Fatal(err)
	}
	recs, _, prom := engineRun(t, reqs, refengine.Config{Seed: 7, Wire: "vllm"}, "chat", true)
	sum, err := metrics.Summarize(metrics.SliceSource(recs), metrics.Options{})
	if err != nil {
		t.Fatal(err)
	}
	pc := sum.PrefixCache
	if pc == nil || pc.Reported != int64(len(reqs)) {
		t.Fatalf("%d requests, prefix cache block %+v", len(reqs), pc)
	}
	hits := promCounter(t, prom, "vllm:prefix_cache_hits_total")
	queries := promCounter(t, prom, "vllm:prefix_cache_queries_total")
	engine := hits / queries
	t.Logf("%d requests: records' hit rate %.4f (%d of %d tokens), engine's counters %.4f (%.0f of %.0f)",
		len(reqs), pc.HitRate, pc.CachedTokens, pc.PromptTokens, engine, hits, queries)
	if math.Abs(pc.HitRate-engine) > 0.01 || pc.HitRate < 0.3 {
		t.Fatalf("hit rate %.4f from the records, %.4f from the engine's counters", pc.HitRate, engine)
	}
	for _, b := range pc.TTFTByReuse {
		t.Logf("reuse %s: %d requests, TTFT p50 %.1f ms, p99 %.1f ms", b.Bucket, b.Count, b.TTFTP50Ms, b.TTFTP99Ms)
	}
}
