package metrics

import (
	"strings"
	"testing"
)

func TestCheckPrefixHitRate(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	pc := func(rate, designed float64) *PrefixCache {
		return &PrefixCache{HitRate: rate, PromptTokens: 1000, DesignedHitRate: f(designed)}
	}
	srv := func(rate float64) *ServerPrefixCache {
		return &ServerPrefixCache{Available: true, HitRate: rate, Queries: 1000}
	}
	for _, c := range []struct {
		name     string
		p        PrefixPriming
		pc       *PrefixCache
		spc      *ServerPrefixCache
		verified bool
		warns    []string // substrings, one per warning
	}{
		{"within", PrefixPriming{RequestedHitRate: f(0.8), Flushed: "x"}, pc(0.79, 0.8), srv(0.815), true, nil},
		{"edge", PrefixPriming{RequestedHitRate: f(0.5), Tolerance: 0.05, Flushed: "x"}, pc(0.45, 0.5), nil, true, nil},
		{"records miss, evicted", PrefixPriming{RequestedHitRate: f(0.9), Flushed: "x"}, pc(0.7, 0.9), srv(0.89), false,
			[]string{"70.0% by the responses' cached tokens, -20.0 pp from the requested 90.0% (tolerance 2.0 pp): the server reused other"}},
		{"designed differs", PrefixPriming{RequestedHitRate: f(0.9), Flushed: "x"}, pc(0.5, 0.5), srv(0.5), false,
			[]string{"the trace itself designs 50.0%", "by the server's counters"}},
		{"not flushed", PrefixPriming{RequestedHitRate: f(0.5)}, pc(0.95, 0.5), nil, false, []string{"was not flushed"}},
		{"primes failed", PrefixPriming{RequestedHitRate: f(0.5), Flushed: "x", Failed: 2}, pc(0.4, 0.5), nil, false, []string{"2 priming request(s) failed"}},
		{"nothing to check", PrefixPriming{RequestedHitRate: f(0.5), Flushed: "x"}, nil, &ServerPrefixCache{Note: "none"}, false, []string{"was not verified"}},
		{"no request", PrefixPriming{Flushed: "x"}, pc(0.1, 0.5), nil, false, nil},
	} {
		p := c.p
		w := CheckPrefixHitRate(&p, c.pc, c.spc)
		if p.Verified != c.verified || len(w) != len(c.warns) {
			t.Errorf("%s: verified %v, warnings %q", c.name, p.Verified, w)
			continue
		}
		for i, s := range c.warns {
			if !strings.Contains(w[i], s) {
				t.Errorf("%s: warning %q lacks %q", c.name, w[i], s)
			}
		}
		if c.pc != nil && (p.AchievedHitRate == nil || *p.AchievedHitRate != c.pc.HitRate) {
			t.Errorf("%s: achieved %v", c.name, p.AchievedHitRate)
		}
	}
}
