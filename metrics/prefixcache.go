package metrics

import (
	"fmt"
	"sort"
	"strconv"
)

// Prefix-cache reuse from the records (issue 34): the prompt tokens each server said it found
// in its prefix cache (Record.CachedInputTokens, from the usage details, Messages' cache
// counts or llama.cpp's timings.cache_n), summed over the steady phase's succeeded requests
// that reported one. The hit rate is cached over prompt tokens of those requests (a ratio of
// token sums, so a long prompt weighs more than a short one, as the prefill it saves does).
// TTFT is split by each request's cached fraction, so the report shows what the cache buys.

// PrefixCacheMetric is the registry name of the hit rate.
const PrefixCacheMetric = "prefix_cache.hit_rate"

// PrefixCache is the summary's prefix_cache block, present when at least one succeeded
// steady request reported its cached prompt tokens.
type PrefixCache struct {
	// HitRate is CachedTokens / PromptTokens, over the Reported requests.
	HitRate float64 `json:"hit_rate"`
	// CachedTokens and PromptTokens are sums over the Reported requests (a request's cached
	// count is capped at its prompt); CacheWriteTokens is Messages' cache_creation_input_tokens.
	CachedTokens     int64 `json:"cached_tokens"`
	PromptTokens     int64 `json:"prompt_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens,omitempty"`
	// Reported is how many of the Succeeded requests reported cached tokens; the others are
	// outside the hit rate.
	Reported  int64 `json:"reported"`
	Succeeded int64 `json:"succeeded"`
	// Sources are the fields the counts came from (metrics.CacheFrom*), sorted.
	Sources []string `json:"sources"`
	// DesignedHitRate is the trace's designed reuse over the same Reported requests:
	// DesignedCachedTokens (the input tokens an unbounded cache would hold, from the blocks
	// shared with earlier requests, traces/designed.go) over DesignedPromptTokens (their
	// input_tokens). Absent when the summary was made without the trace or the trace does not
	// know every reported request.
	DesignedHitRate      *float64 `json:"designed_hit_rate,omitempty"`
	DesignedCachedTokens int64    `json:"designed_cached_tokens,omitempty"`
	DesignedPromptTokens int64    `json:"designed_prompt_tokens,omitempty"`
	// TTFTByReuse splits the Reported requests by their cached fraction (PrefixCacheBuckets).
	TTFTByReuse []ReuseBucket `json:"ttft_by_reuse"`
}

// ReuseBucket is the TTFT of the requests whose cached fraction fell in one bucket.
type ReuseBucket struct {
	Bucket string `json:"bucket"` // one of PrefixCacheBuckets
	Count  int64  `json:"count"`
	// TTFTP50Ms and TTFTP99Ms are the bucket's TTFT percentiles (0 when Count is 0).
	TTFTP50Ms float64 `json:"ttft_p50_ms"`
	TTFTP99Ms float64 `json:"ttft_p99_ms"`
}

// PrefixCacheBuckets are the cached-fraction buckets of ReuseBucket, in order: nothing
// reused, up to half, up to 90%, above 90%.
var PrefixCacheBuckets = [...]string{"0", "(0,50%]", "(50,90%]", ">90%"}

// reuseBucket is the index in PrefixCacheBuckets of cached out of prompt tokens.
func reuseBucket(cached, prompt int64) int {
	switch {
	case cached <= 0 || prompt <= 0:
		return 0
	case 2*cached <= prompt:
		return 1
	case 10*cached <= 9*prompt:
		return 2
	}
	return 3
}

// cachedOf is r's cached prompt tokens capped at its prompt, and whether r reported any.
func cachedOf(r *Record) (cached, prompt int64, ok bool) {
	if r.CacheSource == "" || !r.OK() {
		return 0, 0, false
	}
	prompt = int64(max(r.InputTokens, 0))
	return min(int64(max(r.CachedInputTokens, 0)), prompt), prompt, true
}

// prefixTally accumulates the prefix_cache block over the steady phase's records.
type prefixTally struct {
	succeeded, reported    int64
	cached, prompt, writes int64
	sources                map[string]bool
	designed               func(id string, repeat int) (reused, input int64, ok bool)
	dCached, dPrompt       int64
	dKnown                 int64 // reported requests the trace knows
	count                  [len(PrefixCacheBuckets)]int64
	ttft                   [len(PrefixCacheBuckets)]*hist
}

func (t *prefixTally) add(r *Record) {
	if r.Phase != PhaseSteady || !r.OK() {
		return
	}
	t.succeeded++
	cached, prompt, ok := cachedOf(r)
	if !ok {
		return
	}
	t.reported++
	t.cached += cached
	t.prompt += prompt
	t.writes += int64(max(r.CacheWriteTokens, 0))
	if t.sources == nil {
		t.sources = map[string]bool{}
	}
	t.sources[r.CacheSource] = true
	if t.designed != nil {
		if reused, input, ok := t.designed(r.ID, r.Repeat); ok {
			t.dKnown++
			t.dCached += reused
			t.dPrompt += input
		}
	}
	b := reuseBucket(cached, prompt)
	t.count[b]++
	if t.ttft[b] == nil {
		t.ttft[b] = newHist()
	}
	if r.FirstToken > 0 {
		t.ttft[b].recordNs(r.FirstToken - r.Intended)
	}
}

// prefixHistKey is the Summary.Histograms key of reuse bucket i's TTFT, kept so that
// MergeSummaries rebuilds the buckets' percentiles exactly.
func prefixHistKey(i int) string { return "prefix_cache/ttft/" + strconv.Itoa(i) }

// encode writes the buckets' TTFT histograms into dst.
func (t *prefixTally) encode(dst map[string]string) error {
	for i, h := range t.ttft {
		if h == nil || h.count() == 0 {
			continue
		}
		enc, err := h.encode()
		if err != nil {
			return fmt.Errorf("%s: %w", prefixHistKey(i), err)
		}
		dst[prefixHistKey(i)] = enc
	}
	return nil
}

// mergePrefixCache adds the parts' prefix_cache blocks: token and request counts add, the
// buckets' TTFT percentiles come from the merged histograms (nil when no part has a block).
func mergePrefixCache(sums []*Summary, hists map[string]*hist) *PrefixCache {
	var t prefixTally
	for _, s := range sums {
		pc := s.PrefixCache
		if pc == nil {
			continue
		}
		t.reported += pc.Reported
		t.succeeded += pc.Succeeded
		t.cached += pc.CachedTokens
		t.prompt += pc.PromptTokens
		t.writes += pc.CacheWriteTokens
		if pc.DesignedHitRate != nil {
			t.dKnown += pc.Reported
			t.dCached += pc.DesignedCachedTokens
			t.dPrompt += pc.DesignedPromptTokens
		}
		for _, src := range pc.Sources {
			if t.sources == nil {
				t.sources = map[string]bool{}
			}
			t.sources[src] = true
		}
		for i, b := range pc.TTFTByReuse {
			if i < len(t.count) {
				t.count[i] += b.Count
			}
		}
	}
	for i := range t.ttft {
		t.ttft[i] = hists[prefixHistKey(i)]
	}
	return t.block()
}

// block is the prefix_cache block, nil when no request reported cached tokens.
func (t *prefixTally) block() *PrefixCache {
	if t.reported == 0 {
		return nil
	}
	pc := &PrefixCache{HitRate: ratioOrNaN(float64(t.cached), float64(t.prompt)),
		CachedTokens: t.cached, PromptTokens: t.prompt, CacheWriteTokens: t.writes,
		Reported: t.reported, Succeeded: t.succeeded, Sources: []string{}}
	if t.prompt == 0 {
		pc.HitRate = 0
	}
	if t.dKnown == t.reported {
		d := 0.0
		if t.dPrompt > 0 {
			d = float64(t.dCached) / float64(t.dPrompt)
		}
		pc.DesignedHitRate, pc.DesignedCachedTokens, pc.DesignedPromptTokens = &d, t.dCached, t.dPrompt
	}
	for s := range t.sources {
		pc.Sources = append(pc.Sources, s)
	}
	sort.Strings(pc.Sources)
	for i, name := range PrefixCacheBuckets {
		b := ReuseBucket{Bucket: name, Count: t.count[i]}
		if h := t.ttft[i]; h != nil && h.count() > 0 {
			b.TTFTP50Ms = float64(h.quantile(50)) * scaleMicrosToMs
			b.TTFTP99Ms = float64(h.quantile(99)) * scaleMicrosToMs
		}
		pc.TTFTByReuse = append(pc.TTFTByReuse, b)
	}
	return pc
}

// DesignedShortfall is how far (in percentage points) the achieved hit rate may fall below
// the designed one before the reports explain the difference.
const DesignedShortfall = 0.05

// BelowDesigned reports whether the achieved hit rate is more than DesignedShortfall below the
// designed one.
func (pc *PrefixCache) BelowDesigned() bool {
	return pc.DesignedHitRate != nil && *pc.DesignedHitRate-pc.HitRate > DesignedShortfall
}

// hasCacheReports reports whether any record of d reported cached prompt tokens.
func (d *sideData) hasCacheReports() bool {
	for i := range d.recs {
		if d.recs[i].cacheRep {
			return true
		}
	}
	return false
}
