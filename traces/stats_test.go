package traces

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// TestStatsFixture checks ComputeStats against values worked out by hand for
// testdata/stats.jsonl:
//
//	arrivals 0, 1, 3, 6 s: gaps 1, 2, 3 (mean 2, population sd sqrt(2/3)), span 6 s
//	rate (4-1)/6 = 0.5/s, burstiness sqrt(2/3)/2 = 0.408248...
//	input 600, 1024, 100, 50: sorted 50 100 600 1024, mean 443.5, nearest-rank p50 = 2nd = 100,
//	p90 = 4th = 1024; output 10 20 30 40: mean 25, p50 20, p90 40; totals 1774 / 100 -> 17.74
//	prefix reuse with 512-token blocks, in arrival order:
//	  r1 [1,2] 600 tokens: blocks 512 + 88, nothing cached yet              -> 0
//	  r2 [1,2] 1024: block 1 cached fully (512), block 1>2 cached for 88     -> 600
//	  r3 [1] 100: block 1 cached (512 >= 100)                                -> 100
//	  r4 [2] 50: chain "2" at the root was never sent (it differs from 1>2)  -> 0
//	  reused 700 of 1774 = 0.394588...
func TestStatsFixture(t *testing.T) {
	reqs, err := ReadFile("testdata/stats.jsonl", ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := ComputeStats(reqs)
	want := Stats{
		Count: 4, DurationS: 6, RatePerS: 0.5, Burstiness: math.Sqrt(2.0/3) / 2,
		InputTokens:      LengthStats{Min: 50, Mean: 443.5, P50: 100, P90: 1024, P99: 1024, Max: 1024},
		OutputTokens:     LengthStats{Min: 10, Mean: 25, P50: 20, P90: 40, P99: 40, Max: 40},
		TotalInputTokens: 1774, TotalOutputTokens: 100, PrefillDecodeRatio: 17.74,
		Classes:           map[string]int{"chat": 2, "rag": 1, "(none)": 1},
		PrefixReuseTokens: 700, PrefixReuse: 700.0 / 1774, BlockTokens: 512,
		Sessions: 2, MaxTurn: 2, Chat: 1, WithPrompt: 1,
	}
	if math.Abs(got.Burstiness-want.Burstiness) > 1e-12 {
		t.Errorf("burstiness %v, want %v", got.Burstiness, want.Burstiness)
	}
	got.Burstiness = want.Burstiness
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("stats\n got %+v\nwant %+v", got, want)
	}
	// The JSON field names are part of summary.json's contract.
	b, _ := json.Marshal(got)
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"count", "duration_s", "rate_per_s", "burstiness", "input_tokens", "output_tokens",
		"prefill_decode_ratio", "classes", "prefix_reuse", "sessions"} {
		if _, ok := m[k]; !ok {
			t.Errorf("summary JSON lacks %q: %s", k, b)
		}
	}
	if p := m["input_tokens"].(map[string]any); p["p99"] == nil || p["mean"] == nil {
		t.Errorf("input_tokens lacks percentiles: %s", b)
	}
}

func TestStatsSmallBlocksAndEdges(t *testing.T) {
	if s := ComputeStats(nil); s.Count != 0 || s.RatePerS != 0 || s.Classes == nil {
		t.Fatalf("empty stats %+v", s)
	}
	one := []Request{{ID: "a", Arrival: time.Second, InputTokens: 5, OutputTokens: 5}}
	if s := ComputeStats(one); s.RatePerS != 0 || s.Burstiness != 0 || len(s.Classes) != 0 {
		t.Fatalf("single request stats %+v", s)
	}
	// With 4-token blocks, two requests sharing [7,8] and 10 tokens each: the second reuses 8.
	two := []Request{
		{ID: "a", Arrival: 0, InputTokens: 10, OutputTokens: 1, HashIDs: []int64{7, 8, 9}},
		{ID: "b", Arrival: time.Second, InputTokens: 10, OutputTokens: 1, HashIDs: []int64{7, 8, 10}},
	}
	if s := ComputeStatsBlocks(two, 4); s.PrefixReuseTokens != 8 || s.PrefixReuse != 0.4 {
		t.Fatalf("reuse %d %v", s.PrefixReuseTokens, s.PrefixReuse)
	}
	// Constant spacing has zero burstiness.
	var even []Request
	for i := 0; i < 10; i++ {
		even = append(even, Request{ID: string(rune('a' + i)), Arrival: time.Duration(i) * 200 * time.Millisecond, InputTokens: 1, OutputTokens: 1})
	}
	if s := ComputeStats(even); s.Burstiness > 1e-9 || math.Abs(s.RatePerS-5) > 1e-9 {
		t.Fatalf("even spacing: %+v", s)
	}
}
