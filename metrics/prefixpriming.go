package metrics

import (
	"fmt"
	"math"
)

// PrefixPriming is the summary's prefix_priming block (issue 34, controlled hit rate): before
// the measured window the run dropped the server's prefix cache where the backend allows it
// and sent one request per prefix group of the trace (traces.PrimeRequests), whose records
// are not kept; then it checked the window's hit rate against the requested one.
type PrefixPriming struct {
	// Flushed names the endpoint that dropped the server's prefix cache (runner/cacheflush.go);
	// empty when none did, FlushNote then says why.
	Flushed   string `json:"flushed,omitempty"`
	FlushNote string `json:"flush_note,omitempty"`
	// Groups is the number of priming requests sent (one per prefix group), Tokens their
	// prompt tokens, Failed how many of them failed (their group then starts uncached).
	Groups int   `json:"groups"`
	Tokens int64 `json:"tokens"`
	Failed int   `json:"failed,omitempty"`
	// RequestedHitRate is the hit rate asked for (--prefix-hit-rate), absent when none was;
	// Tolerance is how far the achieved rates may miss it before the run warns.
	RequestedHitRate *float64 `json:"requested_hit_rate,omitempty"`
	Tolerance        float64  `json:"tolerance,omitempty"`
	// AchievedHitRate is prefix_cache.hit_rate (the records), ServerHitRate
	// server_prefix_cache.hit_rate (the server's counters over the window), each absent when
	// the run has no such figure; DesignedHitRate is the trace's designed reuse once primed.
	AchievedHitRate *float64 `json:"achieved_hit_rate,omitempty"`
	ServerHitRate   *float64 `json:"server_hit_rate,omitempty"`
	DesignedHitRate *float64 `json:"designed_hit_rate,omitempty"`
	// Verified is true when at least one achieved rate was compared with the requested one and
	// every compared rate was within Tolerance.
	Verified bool `json:"verified"`
}

// DefaultPrefixHitTolerance is the miss, in hit-rate fraction, beyond which a run warns that
// it did not run at the requested hit rate (2 percentage points).
const DefaultPrefixHitTolerance = 0.02

// CheckPrefixHitRate fills p's achieved rates from the summary's prefix_cache and
// server_prefix_cache blocks (either may be nil) and, when p requests a rate, returns the
// warnings for each rate that misses it by more than p.Tolerance, or that cannot be checked.
func CheckPrefixHitRate(p *PrefixPriming, pc *PrefixCache, spc *ServerPrefixCache) []string {
	if pc != nil && pc.PromptTokens > 0 {
		p.AchievedHitRate = ptrF(pc.HitRate)
		if pc.DesignedHitRate != nil {
			p.DesignedHitRate = ptrF(*pc.DesignedHitRate)
		}
	}
	if spc != nil && spc.Available && spc.Queries > 0 {
		p.ServerHitRate = ptrF(spc.HitRate)
	}
	if p.RequestedHitRate == nil {
		return nil
	}
	req, tol := *p.RequestedHitRate, p.Tolerance
	if tol <= 0 {
		tol = DefaultPrefixHitTolerance
		p.Tolerance = tol
	}
	var warns []string
	checked, ok := 0, true
	for _, a := range []struct {
		rate *float64
		from string
	}{{p.AchievedHitRate, "the responses' cached tokens"}, {p.ServerHitRate, "the server's counters"}} {
		if a.rate == nil {
			continue
		}
		checked++
		if miss := *a.rate - req; math.Abs(miss) > tol+1e-12 {
			ok = false
			warns = append(warns, fmt.Sprintf("prefix cache: the measured window ran at a hit rate of %.1f%% by %s, %+.1f pp from the requested %.1f%% (tolerance %.1f pp)%s",
				100**a.rate, a.from, 100*miss, 100*req, 100*tol, p.missReason(req, tol)))
		}
	}
	if checked == 0 {
		warns = append(warns, fmt.Sprintf("prefix cache: the requested hit rate %.1f%% was not verified: no response reported cached tokens and no server counters were scraped (--scrape-metrics)", 100*req))
	}
	p.Verified = checked > 0 && ok
	return warns
}

// missReason explains a miss where the figures tell why.
func (p *PrefixPriming) missReason(req, tol float64) string {
	switch {
	case p.DesignedHitRate != nil && math.Abs(*p.DesignedHitRate-req) > tol:
		return fmt.Sprintf(": the trace itself designs %.1f%% once primed (make one at the rate with llmbench gen --preset prefix-hit --prefix-hit-rate %g)", 100**p.DesignedHitRate, req)
	case p.Flushed == "":
		return ": the server's prefix cache was not flushed, so it may have held the trace's prompts already"
	case p.Failed > 0:
		return fmt.Sprintf(": %d priming request(s) failed", p.Failed)
	}
	return ": the server reused other than the trace designs (cache evicted under KV pressure, a router spread the groups over replicas, or prefix caching off)"
}

func ptrF(v float64) *float64 { return &v }
