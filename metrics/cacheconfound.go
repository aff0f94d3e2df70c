package metrics

import (
	"fmt"
	"math"
	"strings"
)

// The prefix-cache confound of a comparison (issue 45). Both sides replay the same trace, so
// they are designed to reuse the same prompt prefixes; a side whose server found more of its
// prompts in its cache than the trace designs met them before (an earlier run, a server left
// warm while the other was restarted). Its TTFT is then faster for a reason that is not the
// change under test: the difference is a confound, not a result. A side may reuse less than
// designed (a smaller cache evicts, a router spreads the groups): that is a property of the
// server under test and no confound.
//
// So each side's excess is max(0, achieved − designed) of its pooled prefix_cache block (the
// records' cached tokens against traces/designed.go's reuse over the same requests); when the
// sides' excesses differ by more than CacheConfoundLimit, Compare withholds the verdicts of
// the metrics the prefill of a request is part of (CacheConfounded), says so above the
// verdict (Comparison.CacheConfound, the first warning and the headline) and no --fail-on
// rule on them is judged.

// CacheConfoundLimit is the difference between the sides' excess hit rates (achieved above
// designed), as a fraction, beyond which a comparison is confounded by the prefix cache.
const CacheConfoundLimit = 0.10

// VerdictWithheld: the sides differ in something that is not the change under test and moves
// this metric (the prefix cache's warm state, CacheConfound): its change is shown, never judged.
const VerdictWithheld = "withheld"

// CacheConfound is a Comparison's cache_confound block: the two sides' achieved and designed
// hit rates and the metrics whose verdicts were withheld.
type CacheConfound struct {
	BaseHitRate float64 `json:"base_hit_rate"`
	CandHitRate float64 `json:"cand_hit_rate"`
	// BaseDesigned and CandDesigned are the sides' designed hit rates; one may be borrowed
	// from the other side when both replayed the same requests (DesignedBorrowed).
	BaseDesigned     float64 `json:"base_designed_hit_rate"`
	CandDesigned     float64 `json:"cand_designed_hit_rate"`
	DesignedBorrowed bool    `json:"designed_borrowed,omitempty"`
	// Excess is cand's excess minus base's, in hit-rate fraction (positive: the candidate's
	// server had more of the prompts cached).
	Excess   float64  `json:"excess"`
	Withheld []string `json:"withheld"`
	// Statement is the sentence the reports print above the verdict.
	Statement string `json:"statement"`
}

// CacheConfounded reports whether the prefill of each request is part of metric name (a
// family's statistic such as "ttft.p95", or a scalar): time to the first token or answer
// token, end to end and per token of it, fluidity (whose first deadline is TTFT), the slot
// wait of a capped run, the agentic sessions' model and wall time, goodput (judged on those
// SLOs) and the hit rate itself. Per-token decode latency (TPOT, ITL, gaps, stalls) and
// throughput of an open-loop replay are left judged.
func CacheConfounded(name string) bool {
	family, _, _ := strings.Cut(name, ".")
	switch family {
	case "ttft", "ttfat", "e2e", "normalized", "fluidity", "queue", "session_wall", "session_model", "goodput":
		return true
	}
	return name == PrefixCacheMetric
}

// checkCacheConfound returns the comparison's confound, or nil: the sides' pooled
// prefix_cache blocks with their designed rates (the blocks' own, else designed[0] for base
// and designed[1] for cand; a side with none borrows the other's when paired).
func checkCacheConfound(base, cand *PrefixCache, designed [2]*float64, paired bool) *CacheConfound {
	if base == nil || cand == nil || base.PromptTokens == 0 || cand.PromptTokens == 0 {
		return nil
	}
	db, dc := designedOf(base, designed[0]), designedOf(cand, designed[1])
	borrowed := false
	switch {
	case db == nil && dc == nil:
		return nil
	case db == nil || dc == nil:
		if !paired {
			return nil // different requests: the other side's design says nothing of this one's
		}
		borrowed = true
		if db == nil {
			db = dc
		} else {
			dc = db
		}
	}
	exB, exC := math.Max(0, base.HitRate-*db), math.Max(0, cand.HitRate-*dc)
	if math.Abs(exC-exB) <= CacheConfoundLimit {
		return nil
	}
	return &CacheConfound{BaseHitRate: base.HitRate, CandHitRate: cand.HitRate, BaseDesigned: *db, CandDesigned: *dc,
		DesignedBorrowed: borrowed, Excess: exC - exB, Withheld: []string{}}
}

// applyCacheConfound checks cmp's sides for the confound before the verdicts are judged and,
// when there is one, withholds the metrics it touches and puts its statement first among the
// warnings.
func applyCacheConfound(cmp *Comparison, base, cand *PrefixCache, opts CompareOptions) {
	cc := checkCacheConfound(base, cand, opts.DesignedHitRate, cmp.Paired)
	if cc == nil {
		return
	}
	cc.withhold(cmp.Metrics, opts.BaseLabel, opts.CandLabel)
	cmp.CacheConfound = cc
	cmp.Warnings = append([]string{cc.Statement}, cmp.Warnings...)
}

func designedOf(pc *PrefixCache, given *float64) *float64 {
	if pc.DesignedHitRate != nil {
		return pc.DesignedHitRate
	}
	return given
}

// withhold sets VerdictWithheld on every metric of ms the confound touches and writes the
// statement; labels are the sides' names.
func (cc *CacheConfound) withhold(ms []MetricDelta, base, cand string) {
	for i := range ms {
		md := &ms[i]
		if !CacheConfounded(md.Name) || md.Verdict == VerdictNA {
			continue
		}
		md.Verdict = VerdictWithheld
		md.Note = "withheld: the sides' prefix caches were not in the same state (cache_confound)"
		cc.Withheld = append(cc.Withheld, md.Name)
	}
	warm := cand
	if cc.Excess < 0 {
		warm = base
	}
	cc.Statement = fmt.Sprintf("CONFOUND: the prefix caches were not in the same state: %s found %.1f%% of its prompt tokens cached and %s %.1f%%, where the trace designs %.1f%% and %.1f%%. %s's server had these prompts cached before the run (an earlier run, or a server left warm while the other was restarted), so its time to first token is warm: this difference is not a result. The verdicts on %d metrics that include the prefill (TTFT, E2E, goodput and the hit rate among them) are withheld. Flush both servers' caches (ab --independent-repeats salt+flush) or salt the prompts with a fresh nonce (ab does by default; run --cold) and run again.",
		base, 100*cc.BaseHitRate, cand, 100*cc.CandHitRate, 100*cc.BaseDesigned, 100*cc.CandDesigned, warm, len(cc.Withheld))
}

// PooledDesignedHitRate is the designed hit rate of runs pooled together (their designed
// cached tokens over their designed prompt tokens), nil when a run has a prefix_cache block
// without one, or no run has a block.
func PooledDesignedHitRate(sums []*Summary) *float64 {
	var cached, prompt int64
	seen := false
	for _, s := range sums {
		pc := s.PrefixCache
		if pc == nil {
			continue
		}
		if pc.DesignedHitRate == nil {
			return nil
		}
		seen = true
		cached += pc.DesignedCachedTokens
		prompt += pc.DesignedPromptTokens
	}
	if !seen {
		return nil
	}
	d := 0.0
	if prompt > 0 {
		d = float64(cached) / float64(prompt)
	}
	return &d
}
