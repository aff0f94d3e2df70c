package reports

import (
	"fmt"
	"strings"

	"github.com/llmbench/llmbench/metrics"
)

// The prefix-cache reuse of a run (summary.json's prefix_cache block, issue 34): one line in
// the terminal and Markdown reports, and a table in the HTML report, shown only when some
// request reported its cached prompt tokens.

// belowDesignedNote explains an achieved hit rate well below the designed one
// (metrics.PrefixCache.BelowDesigned): the causes a server can have for it.
const belowDesignedNote = "the server reused less than the trace offers: cache evicted under KV pressure, a router spread sessions, or prefix caching off"

// prefixCacheLine is the hit rate, how many requests reported it and where from, then TTFT
// p50 per reuse bucket.
func prefixCacheLine(pc *metrics.PrefixCache) string {
	var b strings.Builder
	fmt.Fprintf(&b, "hit rate %s (%s of %s prompt tokens cached; %s of %s succeeded requests reported it, from %s)",
		fmtPct(pc.HitRate), fmtInt(pc.CachedTokens), fmtInt(pc.PromptTokens),
		fmtInt(pc.Reported), fmtInt(pc.Succeeded), strings.Join(pc.Sources, ", "))
	if pc.CacheWriteTokens > 0 {
		fmt.Fprintf(&b, ", %s tokens written to the cache", fmtInt(pc.CacheWriteTokens))
	}
	if d := pc.DesignedHitRate; d != nil {
		fmt.Fprintf(&b, " · designed %s by the trace (%s of %s tokens seen by an earlier request)",
			fmtPct(*d), fmtInt(pc.DesignedCachedTokens), fmtInt(pc.DesignedPromptTokens))
		if pc.BelowDesigned() {
			b.WriteString(": " + belowDesignedNote)
		}
	}
	b.WriteString(" · TTFT p50/p99 by reuse:")
	for _, bk := range pc.TTFTByReuse {
		if bk.Count == 0 {
			continue
		}
		fmt.Fprintf(&b, " %s %s/%s ms (%s)", bk.Bucket, fmtMs(bk.TTFTP50Ms), fmtMs(bk.TTFTP99Ms), fmtInt(bk.Count))
	}
	return b.String()
}

// prefixCacheTable is the HTML report's table of the same.
func prefixCacheTable(pc *metrics.PrefixCache) *table {
	t := &table{Caption: "Prefix cache (as the server reported it per request)", Numeric: true}
	t.add(txt("hit rate (cached / prompt tokens)"), keyed(metrics.PrefixCacheMetric, fmtPct(pc.HitRate)))
	t.add(txt("cached / prompt tokens"), txt(fmtInt(pc.CachedTokens)+" / "+fmtInt(pc.PromptTokens)))
	if pc.CacheWriteTokens > 0 {
		t.add(txt("tokens written to the cache"), txt(fmtInt(pc.CacheWriteTokens)))
	}
	if d := pc.DesignedHitRate; d != nil {
		t.add(txt("designed hit rate (the trace's shared prefixes)"), txt(fmtPct(*d)+" ("+fmtInt(pc.DesignedCachedTokens)+" / "+fmtInt(pc.DesignedPromptTokens)+" tokens)"))
		if pc.BelowDesigned() {
			t.add(txt("achieved below designed"), txt(belowDesignedNote))
		}
	}
	t.add(txt("requests that reported it"), txt(fmtInt(pc.Reported)+" of "+fmtInt(pc.Succeeded)+" succeeded"))
	t.add(txt("reported in"), txt(strings.Join(pc.Sources, ", ")))
	for _, bk := range pc.TTFTByReuse {
		v := "no request"
		if bk.Count > 0 {
			v = fmtMs(bk.TTFTP50Ms) + " / " + fmtMs(bk.TTFTP99Ms) + " ms (" + fmtInt(bk.Count) + " requests)"
		}
		t.add(txt("TTFT p50 / p99, "+bk.Bucket+" cached"), txt(v))
	}
	return t
}
