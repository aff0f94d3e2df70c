package metrics

import (
	"math"
	"strings"
	"testing"
)

// counterAt is a server's cumulative counters at true time t: 1000 prompt tokens a second
// looked up, 750 of them cached, from 5000/3000 at t=0.
func counterAt(t float64) PrefixCounterPoint {
	return PrefixCounterPoint{T: t, Hits: 3000 + 750*t, Queries: 5000 + 1000*t}
}

// scrapes reads counterAt every second from t0 to t1, seen on a clock off by offset.
func scrapes(t0, t1, offset float64) []PrefixCounterPoint {
	var out []PrefixCounterPoint
	for t := t0; t <= t1+1e-9; t++ {
		p := counterAt(t)
		p.T += offset
		out = append(out, p)
	}
	return out
}

// TestMergeServerPrefixCacheOneServer: shards that scraped the same server count its traffic
// once — from the latest scrape before the window to the earliest after it, whichever shard
// made them, even when the shards' clocks disagree a little — not once per shard.
func TestMergeServerPrefixCacheOneServer(t *testing.T) {
	shards := []ServerPrefixShard{
		{Endpoint: "http://a/metrics", Backend: "vllm", Source: "h / q", Points: scrapes(-1, 30, 0)},
		{Endpoint: "http://a/metrics", Backend: "vllm", Source: "h / q", Points: scrapes(-0.6, 29.4, 0.004)},
		{Endpoint: "http://a/metrics", Backend: "vllm", Source: "h / q", Points: scrapes(-0.3, 31.7, -0.003)},
	}
	got := MergeServerPrefixCache(shards, 0.2, 28.2)
	// The latest scrape before 0.2 is the first shard's at 0 (the others' read -0.596 and
	// -0.303); the earliest after 28.2 the second shard's at true 28.4, read 28.404 (the
	// others' at 28.697 and 29).
	want := counterAt(28.4)
	start := counterAt(0)
	if !got.Available || got.Endpoints != nil || math.Abs(got.Hits-(want.Hits-start.Hits)) > 1e-9 || math.Abs(got.Queries-(want.Queries-start.Queries)) > 1e-9 {
		t.Fatalf("merged %+v, want %v / %v", got, want.Hits-start.Hits, want.Queries-start.Queries)
	}
	if math.Abs(got.HitRate-0.75) > 1e-12 || got.Backend != "vllm" || !strings.Contains(got.Note, "3 scrape series (shards or workers) of 1 server(s)") {
		t.Fatalf("merged %+v", got)
	}
	// Summing the shards' own deltas would count the server's traffic three times.
	var summed float64
	for _, s := range shards {
		summed += ServerPrefixCacheDelta(s.Backend, s.Source, s.Points, 0.2, 28.2).Queries
	}
	if summed < 2.9*got.Queries {
		t.Fatalf("the shards' own deltas sum to %v, the server's %v", summed, got.Queries)
	}
}

// TestMergeServerPrefixCacheWorkers: shards sent to different workers add up, each worker's
// share listed; a worker without counters is named and left out of the sums.
func TestMergeServerPrefixCacheWorkers(t *testing.T) {
	b := scrapes(-1, 30, 0)
	for i := range b { // worker b: half the traffic, a third of it cached
		b[i].Hits, b[i].Queries = 100*b[i].T+100, 500*b[i].T+500
	}
	got := MergeServerPrefixCache([]ServerPrefixShard{
		{Endpoint: "http://a/metrics", Backend: "vllm", Points: scrapes(-1, 30, 0)},
		{Endpoint: "http://b/metrics", Backend: "vllm", Points: b},
		{Endpoint: "http://c/metrics", Backend: "tgi", Note: "TGI exports no prefix-cache counters; no per-run delta"},
	}, 0, 20)
	if !got.Available || len(got.Endpoints) != 3 {
		t.Fatalf("merged %+v", got)
	}
	ea, eb, ec := got.Endpoints[0], got.Endpoints[1], got.Endpoints[2]
	if ea.Hits != 15000 || ea.Queries != 20000 || eb.Hits != 2000 || eb.Queries != 10000 || ec.Available || !strings.Contains(ec.Note, "TGI") {
		t.Fatalf("endpoints %+v", got.Endpoints)
	}
	if got.Hits != 17000 || got.Queries != 30000 || math.Abs(got.HitRate-17.0/30) > 1e-12 || !strings.Contains(got.Note, "http://c/metrics: TGI") {
		t.Fatalf("merged %+v", got)
	}
}

// TestMergeServerPrefixCacheRestart: a server whose counters went back within the window has
// no merged figure, and nothing to merge gives nil.
func TestMergeServerPrefixCacheRestart(t *testing.T) {
	pts := scrapes(-1, 30, 0)
	for i := range pts[10:] {
		pts[10+i].Hits -= 10000
		pts[10+i].Queries -= 14000
	}
	got := MergeServerPrefixCache([]ServerPrefixShard{{Endpoint: "e", Points: pts}, {Endpoint: "e", Points: scrapes(-1, 30, 0)}}, 0, 20)
	if got.Available || !strings.Contains(got.Note, "restarted") {
		t.Fatalf("merged %+v", got)
	}
	if MergeServerPrefixCache(nil, 0, 1) != nil {
		t.Fatal("no shards, a figure")
	}
}

// FuzzMergeServerPrefixCache: scrapes read from shards' and workers' files (any counters,
// times and endpoints) never panic and never give a figure that JSON cannot hold.
func FuzzMergeServerPrefixCache(f *testing.F) {
	f.Add([]byte{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}, 1.0, 20.0)
	f.Add([]byte{255, 0, 255, 0, 1, 1, 1, 1}, -5.0, 1e300)
	f.Fuzz(func(t *testing.T, data []byte, startS, endS float64) {
		var shards []ServerPrefixShard
		for i := 0; i+3 < len(data) && len(shards) < 64; i += 4 {
			ep := string(rune('a' + data[i]%3))
			if len(shards) == 0 || data[i]%5 == 0 {
				shards = append(shards, ServerPrefixShard{Endpoint: ep})
			}
			s := &shards[len(shards)-1]
			v := func(b byte) float64 { return math.Ldexp(float64(b), int(b%64)*16-128) }
			s.Points = append(s.Points, PrefixCounterPoint{T: float64(int8(data[i+1])), Hits: v(data[i+2]), Queries: v(data[i+3])})
		}
		got := MergeServerPrefixCache(shards, startS, endS)
		if got == nil {
			if len(shards) != 0 {
				t.Fatal("nil for shards")
			}
			return
		}
		for _, x := range []float64{got.Hits, got.Queries, got.HitRate, got.WindowStartS, got.WindowEndS} {
			if math.IsInf(x, 0) || math.IsNaN(x) {
				t.Fatalf("not finite: %+v", got)
			}
		}
		if got.Hits < 0 || got.Queries < 0 {
			t.Fatalf("negative: %+v", got)
		}
	})
}
