package runner

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// TestPickPrefixPerBackend reads each backend's exposition (real-format fixtures under
// testdata/prefixcache) and checks the counters found, or the words saying there are none.
func TestPickPrefixPerBackend(t *testing.T) {
	cases := []struct {
		file, backend, gauge string
		hits, queries        float64
		source, noteFragment string
	}{
		{"vllm_v1.prom", "vllm", "", 18432 + 4096, 24576 + 8192, "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total", ""},
		{"vllm_v1_gpu.prom", "vllm", "", 64, 116, "vllm:gpu_prefix_cache_hits_total / vllm:gpu_prefix_cache_queries_total", ""},
		{"sglang.prom", "sglang", "sglang:cache_hit_rate", 3168, 4096, "sglang:cached_tokens_total / sglang:prompt_tokens_total", ""},
		{"vllm_v0.prom", "vllm", "vllm:gpu_prefix_cache_hit_rate", -1, -1, "", "vLLM exports only a rolling hit rate gauge (vllm:gpu_prefix_cache_hit_rate"},
		{"sglang_gauge.prom", "sglang", "sglang:cache_hit_rate", -1, -1, "", "SGLang exports only a rolling hit rate gauge"},
		{"llamacpp.prom", "llamacpp", "", -1, -1, "", "llama.cpp's server exports no prefix-cache counters"},
		{"tgi.prom", "tgi", "", -1, -1, "", "TGI exports no prefix-cache counters"},
	}
	for _, c := range cases {
		f, err := os.Open(filepath.Join("testdata", "prefixcache", c.file))
		if err != nil {
			t.Fatal(err)
		}
		p := pickPrefix(parsePrometheus(f))
		f.Close()
		if p.backend != c.backend || p.gauge != c.gauge || p.hits != c.hits || p.queries != c.queries || p.source != c.source {
			t.Errorf("%s: got %+v", c.file, p)
			continue
		}
		var d ServerSamples
		p.note(&d)
		d.Samples = []ServerSample{{T: -1, PrefixHits: p.hits, PrefixQueries: p.queries}, {T: 5, PrefixHits: p.hits, PrefixQueries: p.queries}}
		got := serverPrefixCache(d, 0, 4)
		if c.noteFragment == "" {
			if !got.Available || got.Hits != 0 || got.Source != c.source || got.Backend != c.backend {
				t.Errorf("%s: %+v", c.file, got)
			}
			continue
		}
		if got.Available || !strings.Contains(got.Note, c.noteFragment) || !strings.HasSuffix(got.Note, "no per-run delta") {
			t.Errorf("%s: %+v, want a note with %q", c.file, got, c.noteFragment)
		}
	}
	if got := serverPrefixCache(ServerSamples{LastError: "GET /metrics: 404 Not Found"}, 0, 1); got.Available || !strings.Contains(got.Note, "404") {
		t.Errorf("no samples: %+v", got)
	}
	if got := serverPrefixCache(ServerSamples{Samples: []ServerSample{{PrefixHits: -1, PrefixQueries: -1}}}, 0, 1); got.Available || !strings.Contains(got.Note, "no prefix-cache counters llmbench knows") {
		t.Errorf("unknown server: %+v", got)
	}
}

// TestServerPrefixCacheAcrossARestart feeds scrapes whose counters go back (the server
// restarted between two of them): the delta counts from zero after it, never negative.
func TestServerPrefixCacheAcrossARestart(t *testing.T) {
	d := ServerSamples{Backend: "vllm", PrefixSource: "h / q", Samples: []ServerSample{
		{T: -0.2, PrefixHits: 1000, PrefixQueries: 4000},
		{T: 3, PrefixHits: 1500, PrefixQueries: 5000},
		{T: 4, PrefixHits: -1, PrefixQueries: -1}, // a scrape while the server came back: no counters yet
		{T: 6, PrefixHits: 200, PrefixQueries: 600},
		{T: 9.5, PrefixHits: 500, PrefixQueries: 1000},
	}}
	got := serverPrefixCache(d, 0, 9)
	if !got.Available || got.Resets != 1 || got.Hits != 500+500 || got.Queries != 1000+1000 || got.HitRate != 0.5 {
		t.Fatalf("%+v", got)
	}
	if !strings.Contains(got.Note, "server restarted?") {
		t.Fatalf("note %q", got.Note)
	}
}

// TestScraperPollsOnceMoreWhenStopped checks that Stop takes a last scrape, so that the end of
// the window has one after it: with an interval far longer than the test, the two samples are
// the first poll and the last.
func TestScraperPollsOnceMoreWhenStopped(t *testing.T) {
	var n atomic.Int64
	first := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		k := n.Add(1)
		fmt.Fprintf(w, "vllm:prefix_cache_hits_total{engine=\"0\"} %d\nvllm:prefix_cache_queries_total{engine=\"0\"} %d\n", 10*k, 40*k)
		if k == 1 {
			close(first)
		}
	}))
	defer srv.Close()
	s := startScraper(context.Background(), scrapeOptions{URL: srv.URL, Interval: time.Hour})
	<-first
	s.Stop()
	d := s.Data()
	if len(d.Samples) != 2 || d.Backend != "vllm" {
		t.Fatalf("%+v", d)
	}
	got := serverPrefixCache(d, d.Samples[0].T, d.Samples[1].T)
	if !got.Available || got.Hits != 10 || got.Queries != 40 || got.HitRate != 0.25 {
		t.Fatalf("%+v", got)
	}
	s.Stop() // a second Stop does not poll again
	if n.Load() != 2 {
		t.Fatalf("%d polls", n.Load())
	}
}
