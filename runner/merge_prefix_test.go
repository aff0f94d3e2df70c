package runner

import (
	"path/filepath"
	"testing"
)

// TestMergeCarriesServerPrefixCache: shards that scraped one server merge into its delta over
// the merged window, counted once; shards of different workers add up with each listed.
func TestMergeCarriesServerPrefixCache(t *testing.T) {
	counters := func(t0 float64, perS float64) []ServerSample {
		var out []ServerSample
		for s := -1.0; s <= 40; s++ {
			out = append(out, ServerSample{T: s + t0, Running: -1, Waiting: -1, KVUsage: -1, Preemptions: -1,
				PrefixHits: 0.8 * perS * (s + t0 + 1), PrefixQueries: perS * (s + t0 + 1)})
		}
		return out
	}
	for _, c := range []struct {
		name      string
		endpoints [2]string
	}{{"one server", [2]string{"http://a:8000/metrics", "http://a:8000/metrics"}}, {"two workers", [2]string{"http://a:8000/metrics", "http://b:8000/metrics"}}} {
		_, dirs, _ := writeShards(t, 200, 2, []synthShard{{index: 0, keep: -1, finished: true}, {index: 1, keep: -1, finished: true}})
		for i, d := range dirs {
			ss := ServerSamples{Endpoint: c.endpoints[i], Backend: "vllm", PrefixSource: "vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total",
				Samples: counters(0.5*float64(i), 1000)}
			if err := WriteJSON(filepath.Join(d, ScrapeFile), ss); err != nil {
				t.Fatal(err)
			}
		}
		res, err := Merge(MergeOptions{Dirs: dirs, OutDir: filepath.Join(t.TempDir(), "merged")})
		if err != nil {
			t.Fatal(err)
		}
		got, th := res.Summary.ServerPrefixCache, res.Summary.Throughput
		if got == nil || !got.Available || got.HitRate < 0.8-1e-9 || got.HitRate > 0.8+1e-9 {
			t.Fatalf("%s: merged server prefix cache %+v", c.name, got)
		}
		span := got.WindowEndS - got.WindowStartS
		if got.WindowStartS > th.WindowStartS || got.WindowEndS < th.WindowEndS || span > th.WindowS+2 { // at most a scrape interval (1 s) beyond each end
			t.Fatalf("%s: scrapes %v..%v, window %v..%v", c.name, got.WindowStartS, got.WindowEndS, th.WindowStartS, th.WindowEndS)
		}
		want := 1000 * span // one server: its rate over the bracket, once
		if len(c.endpoints) == 2 && c.endpoints[0] != c.endpoints[1] {
			if len(got.Endpoints) != 2 {
				t.Fatalf("%s: endpoints %+v", c.name, got.Endpoints)
			}
			want = got.Endpoints[0].Queries + got.Endpoints[1].Queries
		} else if got.Endpoints != nil {
			t.Fatalf("%s: endpoints %+v for one server", c.name, got.Endpoints)
		}
		if d := got.Queries - want; d > 1e-6 || d < -1e-6 {
			t.Fatalf("%s: queries %v, want %v", c.name, got.Queries, want)
		}
		t.Logf("%s: %v of %v tokens, scrapes %.1f..%.1f s, window %.2f..%.2f s", c.name, got.Hits, got.Queries, got.WindowStartS, got.WindowEndS, th.WindowStartS, th.WindowEndS)
	}
}
