package metrics

import (
	"fmt"
	"reflect"
	"testing"
)

// designedFrom is a DesignedReuse hook over a table of request IDs: reused tokens by ID on the
// first pass and the whole prompt on a repeat; IDs outside the table are unknown.
func designedFrom(reused map[string]int64, input int64) func(string, int) (int64, int64, bool) {
	return func(id string, repeat int) (int64, int64, bool) {
		r, ok := reused[id]
		if repeat > 0 {
			r = input
		}
		return r, input, ok
	}
}

// TestPrefixCacheDesigned: the designed rate counts exactly the requests the achieved rate
// counts (succeeded, steady, reporting), uses the repeat's reuse, survives a merge of shards,
// and is absent when the trace does not know a reported request.
func TestPrefixCacheDesigned(t *testing.T) {
	src := prefixRecords(100, []int{0, 300, 800, 950}, true) // r%04d, 1000 prompt tokens each
	reused := map[string]int64{}
	var want int64
	for i := range 100 {
		id := fmt.Sprintf("r%04d", i)
		reused[id] = int64(i * 10)
		if i%5 != 4 { // the silent ones are outside both rates
			want += int64(i * 10)
		}
	}
	bad := timeline("bad", 0, 50, constGaps(2, 20), []int32{1, 1, 1})
	bad.Failure, bad.CachedInputTokens, bad.CacheSource, bad.InputTokens = FailHTTP5xx, 1000, CacheFromPromptDetails, 1000
	warm := timeline("warm", 0, 50, constGaps(2, 20), []int32{1, 1, 1})
	warm.Phase, warm.CachedInputTokens, warm.CacheSource, warm.InputTokens = PhaseWarmup, 1000, CacheFromTimings, 1000
	again := timeline("r0000", 5, 20, constGaps(2, 20), []int32{1, 1, 1})
	again.Repeat, again.CachedInputTokens, again.CacheSource, again.InputTokens = 1, 1000, CacheFromPromptDetails, 1000
	reused["bad"], reused["warm"] = 1000, 1000
	want += 1000 // the repeat: its whole prompt
	src = append(src, bad, warm, again)
	sum, err := Summarize(src, Options{DesignedReuse: designedFrom(reused, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	pc := sum.PrefixCache
	if pc == nil || pc.DesignedHitRate == nil {
		t.Fatalf("block %+v: no designed rate", pc)
	}
	if pc.Reported != 81 || pc.DesignedCachedTokens != want || pc.DesignedPromptTokens != 81000 ||
		*pc.DesignedHitRate != float64(want)/81000 {
		t.Fatalf("designed %d of %d (%v) over %d reported, want %d of 81000", pc.DesignedCachedTokens,
			pc.DesignedPromptTokens, *pc.DesignedHitRate, pc.Reported, want)
	}
	// achieved (0+300+800+950)/4 ≈ 51% against designed ≈ 50%: not below it.
	if pc.BelowDesigned() {
		t.Errorf("achieved %.3f, designed %.3f: marked below designed", pc.HitRate, *pc.DesignedHitRate)
	}

	a, err := Summarize(src[:60], Options{DesignedReuse: designedFrom(reused, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Summarize(src[60:], Options{DesignedReuse: designedFrom(reused, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MergeSummaries(MergeShards, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.PrefixCache, pc) {
		t.Errorf("merged %+v\nwhole  %+v", m.PrefixCache, pc)
	}
	// One shard without the trace: the merged block has no designed rate.
	b, err = Summarize(src[60:], Options{})
	if err != nil {
		t.Fatal(err)
	}
	if m, err = MergeSummaries(MergeShards, a, b); err != nil || m.PrefixCache.DesignedHitRate != nil {
		t.Errorf("merged with a shard without the trace: %v, designed %v", err, m.PrefixCache.DesignedHitRate)
	}

	delete(reused, "r0001")
	sum, err = Summarize(src, Options{DesignedReuse: designedFrom(reused, 1000)})
	if err != nil {
		t.Fatal(err)
	}
	if sum.PrefixCache.DesignedHitRate != nil {
		t.Errorf("a reported request unknown to the trace: designed %v", *sum.PrefixCache.DesignedHitRate)
	}
}

// TestBelowDesigned: the explanation threshold is DesignedShortfall, strictly.
func TestBelowDesigned(t *testing.T) {
	for _, c := range []struct {
		achieved, designed float64
		want               bool
	}{{0.70, 0.80, true}, {0.76, 0.80, false}, {0, 0.06, true}, {0.9, 0.8, false}} {
		d := c.designed
		pc := &PrefixCache{HitRate: c.achieved, DesignedHitRate: &d}
		if got := pc.BelowDesigned(); got != c.want {
			t.Errorf("achieved %v designed %v: below %v, want %v", c.achieved, c.designed, got, c.want)
		}
	}
	if (&PrefixCache{HitRate: 0}).BelowDesigned() {
		t.Error("no designed rate: marked below it")
	}
}
