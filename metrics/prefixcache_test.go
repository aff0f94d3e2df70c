package metrics

import (
	"fmt"
	"math"
	"reflect"
	"testing"
)

// prefixRecords is n succeeded requests of 1000 prompt tokens whose cached count cycles
// through cached (in order), with a TTFT that falls with reuse (200 ms uncached, 20 ms fully
// cached); every fifth reports nothing when someSilent.
func prefixRecords(n int, cached []int, someSilent bool) SliceSource {
	var out SliceSource
	for i := 0; i < n; i++ {
		c := cached[i%len(cached)]
		ttft := 200 - 0.18*float64(c)
		r := timeline(fmt.Sprintf("r%04d", i), float64(i)*10, ttft, constGaps(4, 20), []int32{1, 1, 1, 1, 1})
		r.InputTokens = 1000
		if !someSilent || i%5 != 4 {
			r.CachedInputTokens, r.CacheSource = c, CacheFromPromptDetails
		}
		out = append(out, r)
	}
	return out
}

func TestPrefixCacheBlock(t *testing.T) {
	src := prefixRecords(100, []int{0, 300, 800, 950}, true)
	// A failed request and a warm-up one report cache too, and are outside the block.
	bad := timeline("bad", 0, 50, constGaps(2, 20), []int32{1, 1, 1})
	bad.Failure, bad.CachedInputTokens, bad.CacheSource, bad.InputTokens = FailHTTP5xx, 1000, CacheFromPromptDetails, 1000
	warm := timeline("warm", 0, 50, constGaps(2, 20), []int32{1, 1, 1})
	warm.Phase, warm.CachedInputTokens, warm.CacheSource, warm.InputTokens = PhaseWarmup, 1000, CacheFromTimings, 1000
	// A cached count above the prompt (tokenizer-counted prompt) is capped at the prompt.
	over := timeline("over", 0, 20, constGaps(2, 20), []int32{1, 1, 1})
	over.CachedInputTokens, over.CacheSource, over.InputTokens = 1500, CacheFromMessages, 1000
	src = append(src, bad, warm, over)
	sum, err := Summarize(src, Options{})
	if err != nil {
		t.Fatal(err)
	}
	pc := sum.PrefixCache
	if pc == nil {
		t.Fatal("no prefix_cache block")
	}
	// 80 reporting of the 100 (i%5 == 4 silent): i%4 cycles independently of i%5, so each
	// cached value appears 20 times; plus "over" at 1000 of 1000.
	wantCached := int64(20*(0+300+800+950) + 1000)
	if pc.Reported != 81 || pc.Succeeded != 101 || pc.CachedTokens != wantCached || pc.PromptTokens != 81000 {
		t.Fatalf("block %+v, want 81 of 101 reported, %d of 81000 cached", pc, wantCached)
	}
	if math.Abs(pc.HitRate-float64(wantCached)/81000) > 1e-12 {
		t.Fatalf("hit rate %v", pc.HitRate)
	}
	if len(pc.Sources) != 2 || pc.Sources[0] != CacheFromMessages || pc.Sources[1] != CacheFromPromptDetails {
		t.Fatalf("sources %v", pc.Sources)
	}
	wantCount := []int64{20, 20, 20, 21}
	wantP50 := []float64{200, 146, 56, 29}
	for i, b := range pc.TTFTByReuse {
		if b.Bucket != PrefixCacheBuckets[i] || b.Count != wantCount[i] {
			t.Errorf("bucket %d = %+v, want %s with %d", i, b, PrefixCacheBuckets[i], wantCount[i])
		}
		if math.Abs(b.TTFTP50Ms-wantP50[i]) > 0.01*wantP50[i] {
			t.Errorf("bucket %s TTFT p50 %v ms, want about %v", b.Bucket, b.TTFTP50Ms, wantP50[i])
		}
	}
	if v, err := MetricValue(sum, PrefixCacheMetric); err != nil || v != pc.HitRate {
		t.Fatalf("MetricValue = %v, %v", v, err)
	}
}

func TestPrefixCacheAbsentWithoutReports(t *testing.T) {
	sum, err := Summarize(prefixRecords(20, []int{0}, false)[:0:0], Options{})
	if err == nil && sum.PrefixCache != nil {
		t.Fatal("an empty run has a prefix_cache block")
	}
	src := prefixRecords(20, []int{100}, false)
	for i := range src {
		src[i].CacheSource = ""
	}
	if sum, err = Summarize(src, Options{}); err != nil || sum.PrefixCache != nil {
		t.Fatalf("no request reported cache, yet the block is %+v (%v)", sum.PrefixCache, err)
	}
}

func TestReuseBucketEdges(t *testing.T) {
	for _, c := range []struct {
		cached, prompt int64
		want           int
	}{{0, 100, 0}, {1, 100, 1}, {50, 100, 1}, {51, 100, 2}, {90, 100, 2}, {91, 100, 3}, {100, 100, 3}, {5, 0, 0}} {
		if got := reuseBucket(c.cached, c.prompt); got != c.want {
			t.Errorf("reuseBucket(%d, %d) = %d, want %d", c.cached, c.prompt, got, c.want)
		}
	}
}

// TestPrefixCacheCompare: the hit rate joins Compare's default metrics when a side reported
// it, as a proportion in points with a Newcombe interval: caching on vs off is "better" on
// every seed, and two runs of the same reuse are not judged different more often than the
// interval allows.
func TestPrefixCacheCompare(t *testing.T) {
	off := prefixRecords(200, []int{0}, false)
	on := prefixRecords(200, []int{0, 400, 900, 950}, false)
	c, err := Compare([]Source{off}, []Source{on}, CompareOptions{Resamples: 200})
	if err != nil {
		t.Fatal(err)
	}
	md := findMetric(t, c, PrefixCacheMetric)
	if md.Verdict != VerdictBetter || md.Base != 0 || math.Abs(md.Cand-0.5625) > 1e-12 || md.CILow <= 0 || md.CIHigh < md.Delta {
		t.Fatalf("on vs off: %+v", md)
	}
	falsePos := 0
	const trials = 40
	for seed := 0; seed < trials; seed++ {
		a := prefixRecords(200, picks(200, uint64(2*seed)), false)
		b := prefixRecords(200, picks(200, uint64(2*seed+1)), false)
		c, err := Compare([]Source{a}, []Source{b}, CompareOptions{Resamples: 100, Seed: uint64(seed)})
		if err != nil {
			t.Fatal(err)
		}
		if v := findMetric(t, c, PrefixCacheMetric).Verdict; v == VerdictBetter || v == VerdictWorse {
			falsePos++
		}
	}
	t.Logf("same reuse judged different in %d of %d trials", falsePos, trials)
	if falsePos > 6 { // 95% intervals: about 2 of 40 expected; 6 or more has p < 0.05
		t.Fatalf("same reuse judged different in %d of %d trials", falsePos, trials)
	}
}

func findMetric(t *testing.T, c *Comparison, name string) MetricDelta {
	t.Helper()
	for _, m := range c.Metrics {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("comparison has no %s", name)
	return MetricDelta{}
}

// picks is n cached counts drawn independently from {0, 400, 900, 950} (a splitmix sequence
// seeded by seed), so that two draws differ as two runs of the same reuse do.
func picks(n int, seed uint64) []int {
	out := make([]int, n)
	for i := range out {
		seed += 0x9e3779b97f4a7c15
		z := seed
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		out[i] = [...]int{0, 400, 900, 950}[z%4]
	}
	return out
}

// TestPrefixCacheMerges: the blocks of two shards merged (MergeSummaries) are the block of
// one Summarize over all their records, bucket percentiles included.
func TestPrefixCacheMerges(t *testing.T) {
	all := prefixRecords(120, picks(120, 9), true)
	whole, err := Summarize(all, Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := Summarize(all[:60], Options{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := Summarize(all[60:], Options{})
	if err != nil {
		t.Fatal(err)
	}
	m, err := MergeSummaries(MergeShards, a, b)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(m.PrefixCache, whole.PrefixCache) {
		t.Fatalf("merged %+v\nwhole  %+v", m.PrefixCache, whole.PrefixCache)
	}
}
